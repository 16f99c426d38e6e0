#include "js_errors.h"

namespace hcsp::addon {

Napi::Error jsError(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

Napi::Error jsError(Napi::Env env, const Error& e) { return jsError(env, errorCode(e.kind()), e.what()); }

}  // namespace hcsp::addon

// hcsp::Error -> a JavaScript Error whose `code` (HCSP_SHAPE, HCSP_OOM, ...) the TypeScript
// side maps onto its typed error classes.
#pragma once
#include <napi.h>

#include "../host/errors.h"

namespace hcsp::addon {

Napi::Error jsError(Napi::Env env, const Error& e);
Napi::Error jsError(Napi::Env env, const char* code, const std::string& message);

/** runs fn, turning C++ exceptions (hcsp::Error, bad_alloc, others) into JavaScript errors */
template <class F>
auto guarded(Napi::Env env, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    throw jsError(env, e);
  } catch (const std::bad_alloc&) {
    throw jsError(env, "HCSP_OOM", "host device out of memory (the system refused an allocation)");
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw jsError(env, "HCSP_RUNTIME", e.what());
  }
}

}  // namespace hcsp::addon

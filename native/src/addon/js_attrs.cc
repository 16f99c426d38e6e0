#include "js_attrs.h"

#include "js_errors.h"

namespace hcsp::addon {

Attrs readAttrs(const std::string& op, const Napi::Value& value) {
  Napi::Env env = value.Env();
  std::map<std::string, AttrValue> out;
  if (value.IsUndefined() || value.IsNull()) return Attrs(op, out);
  if (!value.IsObject()) throw jsError(env, Error(ErrorKind::Attr, op + ": attributes must be an object"));
  Napi::Object obj = value.As<Napi::Object>();
  Napi::Array keys = obj.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); i++) {
    std::string key = keys.Get(i).As<Napi::String>().Utf8Value();
    Napi::Value v = obj.Get(key);
    AttrValue a;
    if (v.IsNumber()) {
      a.kind = AttrValue::Kind::Number;
      a.number = v.As<Napi::Number>().DoubleValue();
    } else if (v.IsString()) {
      a.kind = AttrValue::Kind::String;
      a.string = v.As<Napi::String>().Utf8Value();
    } else if (v.IsBoolean()) {
      a.kind = AttrValue::Kind::Bool;
      a.boolean = v.As<Napi::Boolean>().Value();
    } else if (v.IsArray()) {
      Napi::Array arr = v.As<Napi::Array>();
      bool strings = arr.Length() > 0 && arr.Get(0u).IsString();
      a.kind = strings ? AttrValue::Kind::Strings : AttrValue::Kind::Numbers;
      for (uint32_t j = 0; j < arr.Length(); j++) {
        Napi::Value e = arr.Get(j);
        if (strings && e.IsString())
          a.strings.push_back(e.As<Napi::String>().Utf8Value());
        else if (!strings && e.IsNumber())
          a.numbers.push_back(e.As<Napi::Number>().DoubleValue());
        else
          throw jsError(env, Error(ErrorKind::Attr, op + ": attribute '" + key + "' mixes kinds in its array"));
      }
    } else if (v.IsUndefined() || v.IsNull()) {
      // absent, as the reference reads `attrs.x ?? default`
      continue;
    } else {
      // nested objects: no host kernel reads them; keep the name so a kernel asking fails clearly
      a.kind = AttrValue::Kind::String;
      a.string = "[object]";
    }
    out.emplace(key, std::move(a));
  }
  return Attrs(op, out);
}

}  // namespace hcsp::addon

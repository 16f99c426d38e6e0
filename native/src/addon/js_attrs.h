// A node's attributes from JavaScript (numbers, strings, booleans, arrays of numbers or
// strings) into hcsp::Attrs, read before a run leaves the JavaScript thread.
#pragma once
#include <napi.h>

#include "../host/attrs.h"

namespace hcsp::addon {

Attrs readAttrs(const std::string& op, const Napi::Value& value);

}  // namespace hcsp::addon

#include "attrs.h"

#include <cmath>

#include "errors.h"

namespace hcsp {

const AttrValue& Attrs::get(const std::string& name, AttrValue::Kind kind, const char* what) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail(ErrorKind::Attr, op_ + ": attribute '" + name + "' is missing");
  if (it->second.kind != kind) fail(ErrorKind::Attr, op_ + ": attribute '" + name + "' must be " + what);
  return it->second;
}

double Attrs::number(const std::string& name) const {
  double v = get(name, AttrValue::Kind::Number, "a number").number;
  if (!std::isfinite(v)) fail(ErrorKind::Attr, op_ + ": attribute '" + name + "' must be a finite number");
  return v;
}

double Attrs::number(const std::string& name, double fallback) const { return has(name) ? number(name) : fallback; }

int64_t Attrs::integer(const std::string& name) const {
  double v = number(name);
  if (v != std::floor(v)) fail(ErrorKind::Attr, op_ + ": attribute '" + name + "' must be an integer, got " + std::to_string(v));
  return static_cast<int64_t>(v);
}

int64_t Attrs::integer(const std::string& name, int64_t fallback) const { return has(name) ? integer(name) : fallback; }

const std::string& Attrs::string(const std::string& name) const { return get(name, AttrValue::Kind::String, "a string").string; }

std::string Attrs::string(const std::string& name, const std::string& fallback) const { return has(name) ? string(name) : fallback; }

bool Attrs::boolean(const std::string& name, bool fallback) const { return has(name) ? get(name, AttrValue::Kind::Bool, "a boolean").boolean : fallback; }

const std::vector<double>& Attrs::numbers(const std::string& name) const { return get(name, AttrValue::Kind::Numbers, "an array of numbers").numbers; }

std::vector<int64_t> Attrs::integers(const std::string& name) const {
  std::vector<int64_t> out;
  for (double v : numbers(name)) {
    if (v != std::floor(v)) fail(ErrorKind::Attr, op_ + ": attribute '" + name + "' must hold integers");
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

const std::vector<std::string>& Attrs::strings(const std::string& name) const { return get(name, AttrValue::Kind::Strings, "an array of strings").strings; }

Attrs Attrs::with(const std::string& name, double value) const {
  auto copy = values_;
  AttrValue v;
  v.number = value;
  copy[name] = v;
  return Attrs(op_, copy);
}

}  // namespace hcsp

// Values written into error messages the way core's TypeScript reference writes them, so the
// host kernels' messages match the reference's: String(number) / `${number}` (shortest
// round-trip digits, JavaScript's fixed/exponent switch), JSON.stringify of an attribute
// value, and String() of an attribute value. Private to the host kernels.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../attrs.h"
#include "../errors.h"

namespace hcsp::js {

/** Number.prototype.toString() of v (ECMA-262 Number::toString, radix 10) */
inline std::string number(double v) {
  if (v != v) return "NaN";
  if (v == 0) return "0";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::string sign = v < 0 ? "-" : "";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
  std::string s(buf, res.ptr);
  const size_t e = s.find('e');
  std::string digits = s.substr(0, e);
  const int exp10 = std::atoi(s.c_str() + e + 1);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;
  if (k <= n && n <= 21) return sign + digits + std::string(n - k, '0');
  if (0 < n && n <= 21) return sign + digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return sign + "0." + std::string(-n, '0') + digits;
  const std::string mant = k == 1 ? digits : digits.substr(0, 1) + "." + digits.substr(1);
  return sign + mant + "e" + (n - 1 >= 0 ? "+" : "-") + std::to_string(std::abs(n - 1));
}

inline std::string number(int64_t v) { return number(static_cast<double>(v)); }
inline std::string number(int v) { return number(static_cast<double>(v)); }

/** JSON.stringify of a string */
inline std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\u%04x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

/** What an attribute holds, probed through Attrs' typed accessors (it exposes no raw value). */
struct AttrProbe {
  enum class Kind { Missing, Number, NonFinite, String, Bool, Numbers, Strings } kind = Kind::Missing;
  double number = 0;
  std::string string;
  bool boolean = false;
  std::vector<double> numbers;
  std::vector<std::string> strings;
};

/** whether read() returns without an Error (Attrs throws one for an attribute of another kind) */
template <class Read>
bool reads(Read read) {
  try {
    read();
    return true;
  } catch (const Error&) {
    return false;
  }
}

inline AttrProbe probe(const Attrs& attrs, const std::string& name) {
  using Kind = AttrProbe::Kind;
  AttrProbe p;
  if (!attrs.has(name)) return p;
  if (reads([&] { p.number = attrs.number(name); })) {
    p.kind = Kind::Number;
  } else if (reads([&] { p.string = attrs.string(name); })) {
    p.kind = Kind::String;
  } else if (reads([&] { p.boolean = attrs.boolean(name, false); })) {
    p.kind = Kind::Bool;
  } else if (reads([&] { p.numbers = attrs.numbers(name); })) {
    p.kind = Kind::Numbers;
  } else if (reads([&] { p.strings = attrs.strings(name); })) {
    p.kind = Kind::Strings;
  } else {
    p.kind = Kind::NonFinite;  // a number kind that number() refuses: NaN or +-Infinity
  }
  return p;
}

/** attrs[name] as JSON.stringify (asJson) or String() prints it ("undefined" when absent) */
inline std::string render(const Attrs& attrs, const std::string& name, bool asJson) {
  const AttrProbe p = probe(attrs, name);
  // JSON prints a non-finite number as null and quotes strings; String() joins an array's items without brackets
  const auto item = [&](double v) { return !asJson || std::isfinite(v) ? number(v) : std::string("null"); };
  const auto str = [&](const std::string& v) { return asJson ? jsonString(v) : v; };
  const auto list = [&](const auto& items, const auto& each) {
    std::string out;
    for (size_t i = 0; i < items.size(); i++) out += (i ? "," : "") + each(items[i]);
    return asJson ? "[" + out + "]" : out;
  };
  switch (p.kind) {
    case AttrProbe::Kind::Missing:
      return "undefined";
    case AttrProbe::Kind::Number:
      return number(p.number);
    case AttrProbe::Kind::NonFinite:
      return asJson ? "null" : "NaN";
    case AttrProbe::Kind::String:
      return str(p.string);
    case AttrProbe::Kind::Bool:
      return p.boolean ? "true" : "false";
    case AttrProbe::Kind::Numbers:
      return list(p.numbers, item);
    case AttrProbe::Kind::Strings:
      return list(p.strings, str);
  }
  return "undefined";
}

/** JSON.stringify(attrs[name]) ("undefined" when absent; NaN and Infinity are null) */
inline std::string json(const Attrs& attrs, const std::string& name) { return render(attrs, name, true); }

/** String(attrs[name]) ("undefined" when absent; a non-finite number prints as NaN) */
inline std::string text(const Attrs& attrs, const std::string& name) { return render(attrs, name, false); }

/** Number.isInteger(attrs[name]) */
inline bool isInteger(const Attrs& attrs, const std::string& name) {
  const AttrProbe p = probe(attrs, name);
  return p.kind == AttrProbe::Kind::Number && std::floor(p.number) == p.number;
}

}  // namespace hcsp::js

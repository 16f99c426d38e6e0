// A node's attributes as the graph declares them (numbers, strings, and arrays of either),
// read by kernels through accessors that name the op and the attribute when one is missing
// or of the wrong kind.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hcsp {

struct AttrValue {
  enum class Kind { Number, String, Bool, Numbers, Strings } kind = Kind::Number;
  double number = 0;
  std::string string;
  bool boolean = false;
  std::vector<double> numbers;
  std::vector<std::string> strings;
};

class Attrs {
 public:
  Attrs(std::string op, std::map<std::string, AttrValue> values) : op_(std::move(op)), values_(std::move(values)) {}

  const std::string& op() const { return op_; }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  double number(const std::string& name) const;
  double number(const std::string& name, double fallback) const;
  /** an integer-valued number attribute */
  int64_t integer(const std::string& name) const;
  int64_t integer(const std::string& name, int64_t fallback) const;
  const std::string& string(const std::string& name) const;
  std::string string(const std::string& name, const std::string& fallback) const;
  bool boolean(const std::string& name, bool fallback) const;
  const std::vector<double>& numbers(const std::string& name) const;
  std::vector<int64_t> integers(const std::string& name) const;
  const std::vector<std::string>& strings(const std::string& name) const;
  /** a copy with one number attribute set (collectives add tp) */
  Attrs with(const std::string& name, double value) const;

 private:
  const AttrValue& get(const std::string& name, AttrValue::Kind kind, const char* what) const;
  std::string op_;
  std::map<std::string, AttrValue> values_;
};

}  // namespace hcsp

// The one error type the host device throws: a kind the JavaScript side maps onto a typed
// error class (packages/backend-rocm/src/nativeErrors.ts), and a message naming the bad value.
#pragma once
#include <stdexcept>
#include <string>

namespace hcsp {

enum class ErrorKind { Shape, DType, Attr, Size, OutOfMemory, Runtime, Unsupported };

const char* errorCode(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void fail(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

}  // namespace hcsp

#include "errors.h"

namespace hcsp {

// The codes are the contract with nativeErrors.ts.
const char* errorCode(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Shape:
      return "HCSP_SHAPE";
    case ErrorKind::DType:
      return "HCSP_DTYPE";
    case ErrorKind::Attr:
      return "HCSP_ATTR";
    case ErrorKind::Size:
      return "HCSP_SIZE";
    case ErrorKind::OutOfMemory:
      return "HCSP_OOM";
    case ErrorKind::Runtime:
      return "HCSP_RUNTIME";
    case ErrorKind::Unsupported:
      return "HCSP_UNSUPPORTED";
  }
  return "HCSP_RUNTIME";
}

}  // namespace hcsp

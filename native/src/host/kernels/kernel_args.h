// Argument checks shared by the host kernels, each error naming the op, the port and the
// bad value (the same checks as core's reference/kernels/kernelArgs.ts).
#pragma once
#include <string>

#include "../attrs.h"
#include "../errors.h"
#include "../kernel_registry.h"
#include "../tensor.h"
#include "../thread_pool.h"

namespace hcsp {

/** input port i, present and of the given dtype */
inline const Tensor& input(const Inputs& in, size_t i, const char* name, const std::string& op, DType dtype) {
  if (i >= in.size() || !in[i]) fail(ErrorKind::Shape, op + ": input '" + name + "' is missing");
  if (in[i]->dtype() != dtype) fail(ErrorKind::DType, op + ": input '" + name + "' is " + dtypeName(in[i]->dtype()) + ", expected " + dtypeName(dtype));
  return *in[i];
}

/** an optional input port (null when absent) of the given dtype */
inline const Tensor* optionalInput(const Inputs& in, size_t i, const char* name, const std::string& op, DType dtype) {
  if (i >= in.size() || !in[i]) return nullptr;
  return &input(in, i, name, op, dtype);
}

/**
 * rows of a [rows, cols] input. cols is usually a product of attributes; a negative one (bad
 * attributes) matches no tensor and is refused as the reference's rows2d refuses it.
 */
inline int64_t rows2d(const Tensor& t, const char* name, const std::string& op, int64_t cols) {
  if (t.rank() != 2 || t.dim(1) != cols) {
    fail(ErrorKind::Shape, op + ": input '" + name + "' is " + shapeStr(t.shape()) + ", expected [T," + std::to_string(cols) + "]");
  }
  return t.dim(0);
}

inline void requireRank(const Tensor& t, size_t rank, const char* name, const std::string& op) {
  if (t.rank() != rank) fail(ErrorKind::Shape, op + ": input '" + name + "' is " + shapeStr(t.shape()) + ", expected " + std::to_string(rank) + " dimensions");
}

}  // namespace hcsp

// Argument checks shared by the host kernels, each error naming the op, the port and the
// bad value (the same checks as core's reference/kernels/kernelArgs.ts).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>

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

/** one input port as the op's declaration names it (packages/core/src/graph/ops): name and dtype */
struct Port {
  const char* name;
  DType dtype;
};

template <size_t>
using TensorRef = const Tensor&;

template <size_t... I>
std::tuple<TensorRef<I>...> inputsAt(const Inputs& in, const std::string& op, const Port* ports, std::index_sequence<I...>) {
  // (a braced list evaluates its elements in order: the ports are checked first to last)
  return std::tuple<TensorRef<I>...>{input(in, I, ports[I].name, op, ports[I].dtype)...};
}

/**
 * ports 0..N-1 of `op`, each present and of its dtype, checked in port order: the op's port
 * table is data, and its tensors come back as references for a structured binding
 */
template <size_t N>
auto inputs(const Inputs& in, const std::string& op, const Port (&ports)[N]) {
  return inputsAt(in, op, ports, std::make_index_sequence<N>{});
}

/** attributes `names` of an op as integers, read in order (Attrs::integer's checks and messages) */
template <size_t N>
std::array<int64_t, N> integers(const Attrs& attrs, const char* const (&names)[N]) {
  std::array<int64_t, N> out{};
  for (size_t i = 0; i < N; i++) out[i] = attrs.integer(names[i]);
  return out;
}

/** kernelArgs.ts dims2: [rows, cols] of a 2-D tensor, `what` naming the op and the port */
inline std::pair<int64_t, int64_t> dims2(const Tensor& t, const std::string& what) {
  if (t.rank() != 2) fail(ErrorKind::Shape, what + ": expected a 2-D tensor, got " + shapeStr(t.shape()));
  return {t.dim(0), t.dim(1)};
}

/** one value count that must match: `what` has n values, `expected` wanted */
struct Length {
  const char* what;
  int64_t n, expected;
};

/** the math modules' checkLength over a table, in order: `<family>: <what> has N values, expected M` */
inline void checkLengths(const char* family, std::initializer_list<Length> lengths) {
  for (const Length& l : lengths) {
    if (l.n != l.expected) {
      fail(ErrorKind::Shape, std::string(family) + ": " + l.what + " has " + std::to_string(l.n) + " values, expected " + std::to_string(l.expected));
    }
  }
}

inline void requireRank(const Tensor& t, size_t rank, const char* name, const std::string& op) {
  if (t.rank() != rank) fail(ErrorKind::Shape, op + ": input '" + name + "' is " + shapeStr(t.shape()) + ", expected " + std::to_string(rank) + " dimensions");
}

}  // namespace hcsp

// The PLE device ops' argument checks (reference/kernels/pleKernels.ts with layers/ple/pleMath.ts),
// shared by the host kernels (host/kernels/ple_kernels.cc) and the GPU launchers
// (gpu/ops/ple_ops.cc): each check* reads the attributes and the inputs' metadata (shape, dtype;
// never data) in the reference's order, fails with the reference's messages, and returns the
// validated geometry.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../host/kernels/js_text.h"
#include "../host/kernels/kernel_args.h"

namespace hcsp::ops {

/** divide of pleKernels.ts: width / attrs[name], which must split width into whole groups */
inline int64_t pleDivide(int64_t width, const Attrs& attrs, const std::string& name, const std::string& what) {
  if (js::isInteger(attrs, name)) {
    const double parts = attrs.number(name);
    if (parts >= 1 && std::fmod(static_cast<double>(width), parts) == 0) return width / static_cast<int64_t>(parts);
  }
  fail(ErrorKind::Shape, what + ": width " + std::to_string(width) + " is not divisible into " + js::text(attrs, name) + " groups");
}

/** checkLength of pleMath.ts */
inline void pleCheckLength(const char* what, int64_t length, double expected) {
  if (static_cast<double>(length) != expected) {
    fail(ErrorKind::Shape, std::string("ple: ") + what + " has " + std::to_string(length) + " values, expected " + js::number(expected));
  }
}

/** attrs[name] as the JavaScript number arithmetic would see it (NaN unless a finite number) */
inline double pleNumberOrNaN(const Attrs& attrs, const std::string& name) {
  const js::AttrProbe p = js::probe(attrs, name);
  return p.kind == js::AttrProbe::Kind::Number ? p.number : std::nan("");
}

struct PleNormArgs {
  const Tensor &x, &weight;
  int64_t rows, width, groupSize, groups;
  float epsF;
};

inline PleNormArgs checkPleRms1pNorm(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleRms1pNorm";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  const auto [rows, width] = dims2(x, "pleRms1pNorm x");
  const int64_t groupSize = pleDivide(width, attrs, "groups", op);
  // (a zero width has no groups)
  const int64_t groups = groupSize > 0 ? width / groupSize : 0;
  const Tensor& weight = input(in, 1, "weight", op, DType::BF16);
  pleCheckLength("norm weight", weight.numel(), static_cast<double>(width));
  const float epsF = static_cast<float>(attrs.number("eps"));
  return {x, weight, rows, width, groupSize, groups, epsF};
}

struct PleGateArgs {
  const Tensor &k, &q;
  int64_t rows, width, hidden, streams;
};

inline PleGateArgs checkPleGate(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleGate";
  const Tensor& k = input(in, 0, "k", op, DType::BF16);
  const auto [rows, width] = dims2(k, "pleGate k");
  const int64_t hidden = pleDivide(width, attrs, "streams", op);
  // a zero width: the attribute's streams, as the reference (each gate then sigmoid(0))
  const int64_t streams = hidden > 0 ? width / hidden : static_cast<int64_t>(attrs.number("streams"));
  const Tensor& q = input(in, 1, "q", op, DType::BF16);
  pleCheckLength("normed queries", q.numel(), static_cast<double>(rows * streams * hidden));
  return {k, q, rows, width, hidden, streams};
}

struct PleGatedValueArgs {
  const Tensor &gate, &value;
  int64_t rows, hidden, streams;
};

inline PleGatedValueArgs checkPleGatedValue(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleGatedValue";
  const Tensor& value = input(in, 1, "value", op, DType::BF16);
  const auto [rows, hidden] = dims2(value, "pleGatedValue value");
  const double streamsAttr = pleNumberOrNaN(attrs, "streams");
  const Tensor& gate = input(in, 0, "gate", op, DType::BF16);
  pleCheckLength("gate", gate.numel(), static_cast<double>(rows) * streamsAttr);
  if (!(std::floor(streamsAttr) == streamsAttr && streamsAttr >= 0)) {
    fail(ErrorKind::Attr, "pleGatedValue: attr streams must be a non-negative integer, got " + js::json(attrs, "streams"));
  }
  return {gate, value, rows, hidden, static_cast<int64_t>(streamsAttr)};
}

struct PleConvArgs {
  const Tensor &gNormed, &g, &weight;
  int64_t rows, channels, kernel, dilation;
};

inline PleConvArgs checkPleConvSilu(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleConvSilu";
  const Tensor& g = input(in, 1, "g", op, DType::BF16);
  const auto [rows, channels] = dims2(g, "pleConvSilu g");
  const Tensor& weight = input(in, 2, "weight", op, DType::BF16);
  if (weight.rank() != 3 || weight.dim(0) != channels || weight.dim(1) != 1) {
    fail(ErrorKind::Shape, "pleConvSilu: weight " + shapeStr(weight.shape()) + " is not [" + std::to_string(channels) + ", 1, K]");
  }
  const int64_t kernel = weight.dim(2);
  const Tensor& gNormed = input(in, 0, "gNormed", op, DType::BF16);
  pleCheckLength("normed values", gNormed.numel(), static_cast<double>(rows * channels));
  const double dilationAttr = pleNumberOrNaN(attrs, "dilation");
  if (!(std::floor(dilationAttr) == dilationAttr && dilationAttr >= 1)) {
    fail(ErrorKind::Attr, "ple: conv dilation " + js::text(attrs, "dilation") + " must be a positive integer");
  }
  const int64_t dilation = dilationAttr > 9.0e15 ? int64_t(9e15) : static_cast<int64_t>(dilationAttr);
  return {gNormed, g, weight, rows, channels, kernel, dilation};
}

/** 2^31 (pleHash.ts MAX_TABLE_ROWS): n-gram ids travel as i32, so every head's rows end below it */
constexpr int64_t PLE_MAX_TABLE_ROWS = int64_t{1} << 31;

/** the ids below `bound` (a JavaScript number, finite) that an integer id in [0, 2^31) can be: ceil(bound), in [0, 2^31] */
inline int64_t pleIntBound(double bound) {
  if (!(bound > 0)) return 0;
  return bound >= static_cast<double>(PLE_MAX_TABLE_ROWS) ? PLE_MAX_TABLE_ROWS : static_cast<int64_t>(std::ceil(bound));
}

/** /^(0|[1-9][0-9]*)$/: what multipliersOf (pleKernels.ts) accepts */
inline bool pleDecimal(const std::string& s) {
  if (s.empty() || (s[0] == '0' && s.size() > 1)) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

/** decimal digits times k, in decimal (a product the reference prints as a BigInt) */
inline std::string pleDecimalTimes(const std::string& digits, uint64_t k) {
  if (k == 0) return "0";
  std::string out;
  // k < 2^31 here (an i32 token or EOS), so digit * k + carry stays far below 2^64
  uint64_t carry = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    const uint64_t v = static_cast<uint64_t>(digits[i] - '0') * k + carry;
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    carry = v / 10;
  }
  for (; carry > 0; carry /= 10) out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(carry % 10)));
  const size_t first = out.find_first_not_of('0');
  return first == std::string::npos ? "0" : out.substr(first);
}

struct PleNgramIdsArgs {
  const Tensor& tokens;
  int64_t T;
  int32_t ngramSize, headsPerNgram, heads;
  int64_t eos;
  /** a token is in the vocabulary when in [0, vocabBound) */
  int64_t vocabBound;
  /** String(vocabSize), as the reference's messages print it */
  std::string vocabText;
  /** the multipliers' decimal strings (the products' messages), their values (0 for one at or above 2^63) and, per multiplier, the largest id whose product
   * with it stays below 2^63 */
  std::vector<std::string> multiplierDigits;
  std::vector<uint64_t> multipliers, maxIds;
  std::vector<uint32_t> sizes, offsets;
  /** whether some token could make a product leave [0, 2^63) (a multiplier past (2^63-1)/(vocabSize-1)): only then is it checked on a GPU */
  bool productsCanWrap;
};

/**
 * pleNgramIds: the reference's checks (pleKernels.ts, then pleHash.ts pleNgramIds) in its order,
 * its messages, up to the tokens' values (checked as the ids are computed, failPleToken and
 * failPleProduct). Beyond the reference: a head's size must be a positive integer and its offset
 * a non-negative one (the reference divides by a zero size and gives negative ids for a
 * negative offset, which no table holds), ngramSize at least 1 and headsPerNgram an integer.
 */
inline PleNgramIdsArgs checkPleNgramIds(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleNgramIds";
  const Tensor& tokens = input(in, 0, "tokens", op, DType::I32);
  if (tokens.rank() != 1) fail(ErrorKind::Shape, op + ": tokens must be [T], got " + shapeStr(tokens.shape()));
  // multipliersOf: decimal strings (an empty array reads as numbers)
  const js::AttrProbe m = js::probe(attrs, "multipliers");
  bool decimals = m.kind == js::AttrProbe::Kind::Strings || (m.kind == js::AttrProbe::Kind::Numbers && m.numbers.empty());
  for (const std::string& v : m.strings) decimals = decimals && pleDecimal(v);
  if (!decimals) fail(ErrorKind::Attr, op + ": attribute 'multipliers' must be decimal strings, got " + js::json(attrs, "multipliers"));
  const double n = pleNumberOrNaN(attrs, "ngramSize");
  if (static_cast<double>(m.strings.size()) != n) {
    fail(ErrorKind::Attr, "ple: " + std::to_string(m.strings.size()) + " multipliers given, ngramSize is " + js::text(attrs, "ngramSize"));
  }
  const double heads = (n - 1) * pleNumberOrNaN(attrs, "headsPerNgram");
  const std::vector<double>& sizes = attrs.numbers("vocabSizes");
  const std::vector<double>& offsets = attrs.numbers("offsets");
  if (static_cast<double>(sizes.size()) != heads || static_cast<double>(offsets.size()) != heads) {
    fail(ErrorKind::Attr, "ple: " + std::to_string(sizes.size()) + " head sizes and " + std::to_string(offsets.size()) + " offsets given, the config has " +
                              js::number(heads) + " heads");
  }
  for (size_t h = 0; h < sizes.size(); h++) {
    if (offsets[h] + sizes[h] > static_cast<double>(PLE_MAX_TABLE_ROWS))
      fail(ErrorKind::Attr, "ple: head " + std::to_string(h) + " ends past row 2^31; ids must fit in i32");
  }
  if (n < 1) fail(ErrorKind::Attr, op + ": attribute 'ngramSize' must be at least 1, got " + js::number(n));
  const int64_t headsPerNgram = attrs.integer("headsPerNgram");
  PleNgramIdsArgs a{
      tokens, tokens.dim(0), static_cast<int32_t>(n), static_cast<int32_t>(headsPerNgram), static_cast<int32_t>(heads), 0, 0, {}, m.strings, {}, {}, {},
      {},     false};
  for (size_t h = 0; h < sizes.size(); h++) {
    if (!(sizes[h] >= 1 && std::floor(sizes[h]) == sizes[h]))
      fail(ErrorKind::Attr, op + ": head " + std::to_string(h) + "'s size " + js::number(sizes[h]) + " must be a positive integer");
    if (!(offsets[h] >= 0 && std::floor(offsets[h]) == offsets[h])) {
      fail(ErrorKind::Attr, op + ": head " + std::to_string(h) + "'s offset " + js::number(offsets[h]) + " must be a non-negative integer");
    }
    a.sizes.push_back(static_cast<uint32_t>(sizes[h]));
    a.offsets.push_back(static_cast<uint32_t>(offsets[h]));
  }
  // checkToken(eosTokenId, vocabSize, '(EOS)')
  const double vocab = attrs.number("vocabSize");
  a.vocabText = js::text(attrs, "vocabSize");
  const double eos = pleNumberOrNaN(attrs, "eosTokenId");
  if (!(std::floor(eos) == eos && eos >= 0 && eos < vocab))
    fail(ErrorKind::Attr, "ple: token id " + js::text(attrs, "eosTokenId") + " (EOS) is outside the vocabulary [0, " + a.vocabText + ")");
  // (the tokens are i32: a larger EOS could only stand in for history, and its products and messages would need more than 64 bits)
  if (eos >= static_cast<double>(PLE_MAX_TABLE_ROWS))
    fail(ErrorKind::Attr, op + ": attribute 'eosTokenId' " + js::number(eos) + " must be below 2^31 (tokens are i32)");
  a.eos = static_cast<int64_t>(eos);
  a.vocabBound = pleIntBound(vocab);
  // the multipliers: id * m < 2^63 exactly when id <= (2^63 - 1) / m; one at or above 2^63 leaves only id 0 (its product 0)
  constexpr uint64_t INT64_LIMIT = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const uint64_t largest = static_cast<uint64_t>(std::max<int64_t>(a.eos, a.vocabBound - 1));
  for (const std::string& digits : a.multiplierDigits) {
    uint64_t v = 0;
    bool huge = false;
    for (char c : digits) {
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (v > (INT64_LIMIT - d) / 10) {
        huge = true;
        break;
      }
      v = v * 10 + d;
    }
    a.multipliers.push_back(huge ? 0 : v);
    a.maxIds.push_back(huge ? 0 : v == 0 ? std::numeric_limits<uint64_t>::max() : INT64_LIMIT / v);
    a.productsCanWrap = a.productsCanWrap || a.maxIds.back() < largest;
  }
  return a;
}

/** the reference's error for token `id` at `position` outside the vocabulary */
[[noreturn]] inline void failPleToken(int64_t id, int64_t position, const std::string& vocabText) {
  fail(ErrorKind::Shape,
       "ple: token id " + std::to_string(id) + " at position " + std::to_string(position) + " is outside the vocabulary [0, " + vocabText + ")");
}

/** the reference's error for the first product id * multiplier s (multiplierDigits[s]) at or past 2^63 */
[[noreturn]] inline void failPleProduct(const std::vector<std::string>& multiplierDigits, int64_t id, int32_t s) {
  fail(ErrorKind::Size, "ple: " + std::to_string(id) + " * multiplier " + std::to_string(s) + " = " +
                            pleDecimalTimes(multiplierDigits[s], static_cast<uint64_t>(id)) + " leaves [0, 2^63) (the reference's int64 would wrap)");
}

struct PleShardArgs {
  const Tensor &ids, &table;
  int64_t T, heads, rows, headDim, rowStart;
  /** an id is in the table when in [0, tableBound) */
  int64_t tableBound;
  /** String(tableRows), as the reference's messages print it */
  std::string tableRowsText;
};

/** pleNgramEmbedShard: the reference's checks (pleKernels.ts, then pleMath.ts pleNgramEmbedShard) up to the ids' values (failPleNgramId) */
inline PleShardArgs checkPleNgramEmbedShard(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pleNgramEmbedShard";
  const Tensor& ids = input(in, 0, "ids", op, DType::I32);
  const auto [T, heads] = dims2(ids, "pleNgramEmbedShard ids");
  const Tensor& table = input(in, 1, "table", op, DType::BF16);
  const auto [rows, headDim] = dims2(table, "pleNgramEmbedShard table");
  if (heads < 1) fail(ErrorKind::Shape, "ple: " + std::to_string(ids.numel()) + " n-gram ids do not fill rows of " + std::to_string(heads) + " heads");
  if (headDim < 1) fail(ErrorKind::Shape, "ple: table slice of " + std::to_string(table.numel()) + " values is not [rows, " + std::to_string(headDim) + "]");
  const js::AttrProbe start = js::probe(attrs, "rowStart");
  const double tableRows = pleNumberOrNaN(attrs, "tableRows");
  const bool startNumber = start.kind == js::AttrProbe::Kind::Number;
  if (!(startNumber && std::floor(start.number) == start.number && start.number >= 0 && start.number + static_cast<double>(rows) <= tableRows)) {
    fail(ErrorKind::Attr, "ple: the slice [" + js::text(attrs, "rowStart") + ", " +
                              (startNumber ? js::number(start.number + static_cast<double>(rows)) : std::string("NaN")) + ") is not within the table's " +
                              js::text(attrs, "tableRows") + " rows");
  }
  // (ids are i32: a slice starting at or past 2^31 holds none of them)
  const int64_t rowStart = start.number >= static_cast<double>(PLE_MAX_TABLE_ROWS) ? PLE_MAX_TABLE_ROWS : static_cast<int64_t>(start.number);
  return {ids, table, T, heads, rows, headDim, rowStart, pleIntBound(tableRows), js::text(attrs, "tableRows")};
}

/** the reference's error for n-gram id `id` at flat index i (position i / heads, head i % heads) outside the table */
[[noreturn]] inline void failPleNgramId(int64_t id, int64_t i, int64_t heads, const std::string& tableRowsText) {
  fail(ErrorKind::Shape, "ple: n-gram id " + std::to_string(id) + " (position " + std::to_string(i / heads) + ", head " + std::to_string(i % heads) +
                             ") is outside the table [0, " + tableRowsText + ")");
}

}  // namespace hcsp::ops

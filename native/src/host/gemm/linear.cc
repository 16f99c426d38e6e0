// The GEMM driver. Exact mode: the weight as bf16 panels (panels.h), x rows converted to fp32
// per row block, each panel's k block widened to fp32 once per row block when it has enough
// row tiles (else in the tile's registers), and the ISA's tile (gemm_kernels.h) over every
// (row tile, panel). The k sum
// is cut into blocks only to keep the operands in cache; between blocks each output's fp32
// sum is stored and reloaded, so each output is still one sequential sum over k = 0..K-1,
// computed by one thread. Blas mode: fp32 operands through OpenBLAS's sgemm.
#include "linear.h"

#include <algorithm>
#include <atomic>
#include <climits>

#include "../blas/openblas.h"
#include "../cpu_features.h"
#include "../errors.h"
#include "../../numerics/bf16.h"
#include "../thread_pool.h"
#include "gemm_kernels.h"
#include "panels.h"

namespace hcsp::gemm {
namespace {

/** x's elements: bf16 bits or fp8 codes (decoded through a table) */
struct XSource {
  const uint16_t* bf16;
  const uint8_t* fp8;
  const float* lut;
  int64_t inF;
};

/** rows [row0, row0 + rows) x k [k0, k0 + kc) as fp32, row r at dst + r * stride (a plain conversion the compiler vectorizes) */
void convertX(const XSource& x, int64_t row0, int64_t rows, int64_t k0, int64_t kc, float* dst, int64_t stride) {
  for (int64_t r = 0; r < rows; r++) {
    const int64_t at = (row0 + r) * x.inF + k0;
    float* d = dst + r * stride;
    if (x.bf16) {
      const uint16_t* s = x.bf16 + at;
      for (int64_t k = 0; k < kc; k++) d[k] = bf16ToF32(s[k]);
    } else {
      const uint8_t* s = x.fp8 + at;
      for (int64_t k = 0; k < kc; k++) d[k] = x.lut[s[k]];
    }
  }
}

/** where the sums go (y row-major [rows][outF]) */
struct Sink {
  Epilogue epilogue;
  void* y;
  size_t elementBytes;
  const float* colScale;
  const float* rowScale;
  bool colScaleFirst;
};

// Rows per block: 384 rows of x (fp32, one k block) stay in L2 while each panel's k block
// (256 x 64 fp32 = 64 KiB) serves all their row tiles, so the weight streams from memory once
// per block. K longer than 512 is cut into blocks of 256 (the panel's block stays in L2), the
// sums of up to 384 outputs carried between them. Short K (the HC up GEMM's 320) runs in one
// block. Measured on a 2-core AVX-512 VM: 384-row blocks ran 5-10% faster than 96.
constexpr int64_t MC = 64 * MR;
constexpr int64_t MC_MIN = 16 * MR;  // the smallest row range a thread claims (each streams the weight)
constexpr int64_t KC = 256;
constexpr int64_t ONE_BLOCK_MAX_K = 512;
constexpr int64_t NC = 384;

struct Blocking {
  int64_t kc, kBlocks, ncPanels;
};

Blocking blocking(int64_t inF, const PackedWeight& w) {
  if (inF <= ONE_BLOCK_MAX_K) return {inF, 1, w.panels()};
  return {KC, (inF + KC - 1) / KC, std::max<int64_t>(1, NC / w.geometry.width)};
}

// A row block of at least this many tiles reads each panel's k block widened once into
// fp32 scratch (L2-resident, reused by all its tiles); fewer tiles widen in registers.
constexpr int64_t WIDEN_MIN_TILES = 4;

/** one thread's packed x block, widened panel block and carried sums, reused over the ranges it claims */
struct Scratch {
  F32Buffer x, w, acc;
  Scratch(int64_t rows, const Blocking& b, int64_t W)
      : x((std::min(MC, rows) + MR - 1) / MR * MR * b.kc),
        w((std::min(MC, rows) + MR - 1) / MR >= WIDEN_MIN_TILES ? b.kc * W : 0),
        acc(b.kBlocks > 1 ? (std::min(MC, rows) + MR - 1) / MR * MR * b.ncPanels * W : 0) {}
};

/** outputs of rows [r0, r1) x panels [p0, p1), on this thread */
void runRange(const XSource& x, int64_t r0, int64_t r1, int64_t p0, int64_t p1, const PackedWeight& w, const Sink& out, const Kernels& fn, const Blocking& b,
              Scratch& s) {
  const int64_t inF = w.inF, outF = w.outF, W = w.geometry.width;
  const int64_t accStride = b.ncPanels * W;
  Tile t{};
  t.epilogue = out.epilogue;
  t.yStride = outF;
  t.colScaleFirst = out.colScaleFirst;
  t.accStride = accStride;
  t.xStride = b.kc;
  for (int64_t rb = r0; rb < r1; rb += MC) {
    const int64_t rows = std::min(MC, r1 - rb);
    const int64_t tiles = (rows + MR - 1) / MR;
    bool packed = false;
    for (int64_t pc = p0; pc < p1; pc += b.ncPanels) {
      const int64_t pe = std::min(p1, pc + b.ncPanels);
      for (int64_t kb = 0; kb < b.kBlocks; kb++) {
        const int64_t k0 = kb * b.kc, kn = std::min(b.kc, inF - k0);
        if (!(b.kBlocks == 1 && packed)) {
          convertX(x, rb, rows, k0, kn, s.x.data(), b.kc);
          packed = true;
        }
        t.kc = kn;
        t.first = kb == 0;
        t.last = kb == b.kBlocks - 1;
        for (int64_t p = pc; p < pe; p++) {
          t.width = w.width(p);
          t.n = w.valid(p);
          t.wp = w.panel(p) + k0 * t.width;
          t.wf = nullptr;
          if (tiles >= WIDEN_MIN_TILES) {
            fn.widen(t.wp, kn, t.width, s.w.data());
            t.wf = s.w.data();
          }
          t.colScale = out.colScale ? out.colScale + p * W : nullptr;
          for (int64_t i = 0; i < tiles; i++) {
            const int64_t row = rb + i * MR;
            t.xp = s.x.data() + i * MR * b.kc;
            t.mr = static_cast<int>(std::min<int64_t>(MR, rows - i * MR));
            t.acc = s.acc.data() ? s.acc.data() + i * MR * accStride + (p - pc) * W : nullptr;
            t.y = static_cast<char*>(out.y) + static_cast<size_t>(row * outF + p * W) * out.elementBytes;
            t.rowScale = out.rowScale ? out.rowScale + row : nullptr;
            fn.tile(t);
          }
        }
      }
    }
  }
}

/**
 * Claims [start, end) of [0, total) from `next`: `block` at a time while there is plenty left,
 * then less (guided: a share of what is left, at least `least`), so threads finish together.
 */
bool claim(std::atomic<int64_t>& next, int64_t total, int64_t block, int64_t least, int64_t unit, int64_t threads, int64_t& start, int64_t& end) {
  int64_t at = next.load();
  for (;;) {
    const int64_t left = total - at;
    if (left <= 0) return false;
    const int64_t share = std::max(least, (left + 2 * threads - 1) / (2 * threads));
    const int64_t n = std::min(left, std::min(block, (share + unit - 1) / unit * unit));
    if (next.compare_exchange_weak(at, at + n)) {
      start = at;
      end = at + n;
      return true;
    }
  }
}

void exactGemm(const XSource& x, int64_t rows, const PackedWeight& w, const Sink& out, ThreadPool& pool, const Kernels& fn) {
  const Blocking b = blocking(w.inF, w);
  const int64_t panels = w.panels(), threads = pool.size();
  // Many rows: threads claim row blocks (all outputs of each); few rows (decode, MoE
  // experts): panel groups (all rows of each), so each weight byte is read by one core.
  // Claimed as they go, so a thread slowed by another process does not hold the rest back;
  // either way each output is computed by one thread, in its order.
  const bool byRows = rows >= MC_MIN * threads || panels < threads;
  std::atomic<int64_t> next{0};
  pool.parallelFor(threads, 1, [&](int64_t, int64_t) {
    Scratch s(rows, b, w.geometry.width);
    int64_t a, e;
    if (byRows) {
      while (claim(next, rows, MC, MC_MIN, MR, threads, a, e)) runRange(x, a, e, 0, panels, w, out, fn, b, s);
    } else {
      while (claim(next, panels, 4, 1, 1, threads, a, e)) runRange(x, 0, rows, a, e, w, out, fn, b, s);
    }
  });
}

/** y = x w^T in fp32 through OpenBLAS (x [rows][inF], w [outF][inF], both row-major) */
void blasSums(const float* x, int64_t rows, int64_t inF, const float* w, int64_t outF, float* y, const char* op) {
  if (inF == 0) {
    std::fill(y, y + rows * outF, 0.0f);
    return;
  }
  if (rows > INT_MAX || inF > INT_MAX || outF > INT_MAX) {
    fail(ErrorKind::Size, std::string(op) + " (blas): [" + std::to_string(rows) + "," + std::to_string(inF) + "] x [" + std::to_string(outF) + "," +
                              std::to_string(inF) + "]^T exceeds sgemm's 32-bit dimensions");
  }
  const blas::Library& lib = blas::openblas();
  lib.sgemm(cblas::RowMajor, cblas::NoTrans, cblas::Trans, static_cast<int>(rows), static_cast<int>(outF), static_cast<int>(inF), 1.0f, x,
            static_cast<int>(inF), w, static_cast<int>(inF), 0.0f, y, static_cast<int>(outF));
}

}  // namespace

void linearBf16(const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y, const KernelContext& ctx, const Tensor* wOwner) {
  if (rows == 0 || outF == 0) return;
  if (ctx.gemm == GemmMode::Blas) {
    const auto packed = packedWeight(w, WeightDType::Bf16, outF, inF, ROW_MAJOR, wOwner, ctx.pool);
    F32Buffer x32(rows * inF), y32(rows * outF);
    float* xd = x32.data();
    ctx.pool.parallelFor(rows, 16, [&](int64_t t0, int64_t t1) {
      for (int64_t i = t0 * inF; i < t1 * inF; i++) xd[i] = bf16ToF32(x[i]);
    });
    blasSums(xd, rows, inF, packed->rowMajor.data(), outF, y32.data(), "linear");
    const float* yd = y32.data();
    ctx.pool.parallelFor(rows, 16, [&](int64_t t0, int64_t t1) {
      for (int64_t i = t0 * outF; i < t1 * outF; i++) y[i] = f32ToBf16(yd[i]);
    });
    return;
  }
  const Isa isa = gemmIsa();
  const auto packed = packedWeight(w, WeightDType::Bf16, outF, inF, panelGeometry(isa), wOwner, ctx.pool);
  const XSource xs{x, nullptr, nullptr, inF};
  exactGemm(xs, rows, *packed, Sink{Epilogue::Bf16, y, sizeof(uint16_t), nullptr, nullptr, false}, ctx.pool, kernels(isa));
}

void linearFp8Ptpc(const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw, int64_t outF, const Fp8Format& format,
                   bool weightFirst, uint16_t* y, const KernelContext& ctx, const Tensor* wOwner) {
  if (rows == 0 || outF == 0) return;
  float lut[256];
  for (int b = 0; b < 256; b++) lut[b] = fp8ToF32(static_cast<uint8_t>(b), format);
  const WeightDType wd = fp8WeightDType(format);
  if (ctx.gemm == GemmMode::Blas) {
    const auto packed = packedWeight(qW, wd, outF, inF, ROW_MAJOR, wOwner, ctx.pool);
    F32Buffer x32(rows * inF), y32(rows * outF);
    float* xd = x32.data();
    ctx.pool.parallelFor(rows, 16, [&](int64_t t0, int64_t t1) {
      for (int64_t i = t0 * inF; i < t1 * inF; i++) xd[i] = lut[q[i]];
    });
    blasSums(xd, rows, inF, packed->rowMajor.data(), outF, y32.data(), "fp8LinearPtpc");
    const float* acc = y32.data();
    ctx.pool.parallelFor(rows, 16, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; t++) {
        for (int64_t o = 0; o < outF; o++) {
          const float a = acc[t * outF + o];
          y[t * outF + o] = f32ToBf16(weightFirst ? (a * sw[o]) * sx[t] : (a * sx[t]) * sw[o]);
        }
      }
    });
    return;
  }
  const Isa isa = gemmIsa();
  const auto packed = packedWeight(qW, wd, outF, inF, panelGeometry(isa), wOwner, ctx.pool);
  const XSource xs{nullptr, q, lut, inF};
  // outputs are the weight's channels: weightFirst applies the per-output scale first
  exactGemm(xs, rows, *packed, Sink{Epilogue::Bf16Scaled, y, sizeof(uint16_t), sw, sx, weightFirst}, ctx.pool, kernels(isa));
}

}  // namespace hcsp::gemm

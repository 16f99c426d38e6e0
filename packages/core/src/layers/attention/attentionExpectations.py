"""Independent expectations for ropeTables.test.ts, attentionMath.test.ts and qsaIndexer.test.ts.

numpy float32 scalar arithmetic (each op rounded to fp32), glibc powf, a bit-level bf16 RNE,
and plain Python loops in the summation orders model.md and the tests state. Run once
(python3 attentionExpectations.py); the printed values are pasted into the tests. Needs
numpy; libsleef3 (Debian) is optional and only reports where torch's CPU cos/sin (Sleef
u10) would round to a different bf16.
"""
import ctypes
import math

import numpy as np

f32 = np.float32
libm = ctypes.CDLL("libm.so.6")
libm.powf.restype = ctypes.c_float
libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]


def bf16_bits(x):
    u = int(np.array([x], dtype=np.float32).view(np.uint32)[0])
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def from_bits(b):
    return np.array([b << 16], dtype=np.uint32).view(np.float32)[0]


def bf(x):
    return from_bits(bf16_bits(f32(x)))


def f32_bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def inv_freq(dims, theta):
    # HF: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)), fp32 throughout
    return [f32(f32(1) / f32(libm.powf(float(f32(theta)), float(f32(f32(2 * i) / f32(dims)))))) for i in range(dims // 2)]


def tables(dims, theta, positions):
    inv = inv_freq(dims, theta)
    cos, sin = {}, {}
    for p in positions:
        ang = [f32(f32(p) * v) for v in inv]
        cos[p] = [bf(f32(math.cos(float(a)))) for a in ang]
        sin[p] = [bf(f32(math.sin(float(a)))) for a in ang]
    return cos, sin


def rms1p(x, w, eps):
    ss = f32(0)
    for v in x:
        ss = f32(ss + f32(v * v))
    r = f32(f32(1) / f32(np.sqrt(f32(f32(ss / f32(len(x))) + f32(eps)))))
    return [bf(f32(f32(v * r) * f32(f32(1) + wv))) for v, wv in zip(x, w)]


def rope(n, c, s, dims):
    half = dims // 2
    out = list(n)
    for i in range(half):
        out[i] = bf(f32(bf(f32(n[i] * c[i])) + bf(f32(-n[i + half] * s[i]))))
        out[i + half] = bf(f32(bf(f32(n[i + half] * c[i])) + bf(f32(n[i] * s[i]))))
    return out


def rope_unrounded(n, c, s, dims):
    # the fp32 formula: products not rounded to bf16 (cos/sin the same bf16 values)
    half = dims // 2
    out = list(n)
    for i in range(half):
        out[i] = bf(f32(f32(n[i] * c[i]) - f32(n[i + half] * s[i])))
        out[i + half] = bf(f32(f32(n[i + half] * c[i]) + f32(n[i] * s[i])))
    return out


def hexes(vals, width=4):
    return ", ".join(f"0x{bf16_bits(v):0{width}x}" for v in vals)


print("== inv_freq, 64 dims, theta 1e7 (fp32 bits)")
inv = inv_freq(64, 1e7)
print(", ".join(f"0x{f32_bits(v):08x}" for v in inv))
old = [f32(1 / 1e7 ** (2 * i / 64)) for i in range(32)]
print("differs from fr(1 / theta^(2i/d)) at i =", [i for i in range(32) if old[i] != inv[i]])

print("== bf16 tables, 64 dims, theta 1e7, positions 3000 and 3269")
cos, sin = tables(64, 1e7, [3000, 3269])
for p in (3000, 3269):
    print(p, "cos", hexes(cos[p]))
    print(p, "sin", hexes(sin[p]))
try:
    sleef = ctypes.CDLL("libsleef.so.3")
    sleef.Sleef_sinf_u10.restype = ctypes.c_float
    sleef.Sleef_sinf_u10.argtypes = [ctypes.c_float]
    a = f32(f32(3269) * inv[15])
    print("sin(3269 * inv_freq[15]): correctly rounded fp32 -> bf16", hex(bf16_bits(f32(math.sin(float(a))))),
          "; Sleef u10 fp32 -> bf16", hex(bf16_bits(f32(sleef.Sleef_sinf_u10(float(a))))))
except OSError:
    print("(libsleef3 not installed)")

print("== RoPE case: one 128-dim head, 64 RoPE dims, theta 1e7, position 3000, eps 1e-6")
hd = 128
x = [f32(((d * 29 + 11) % 31 - 15) / 8) for d in range(hd)]
w = [f32(((d * 5) % 7 - 3) / 16) for d in range(hd)]
n = rms1p(x, w, 1e-6)
y = rope(n, cos[3000], sin[3000], 64)
yu = rope_unrounded(n, cos[3000], sin[3000], 64)
print("expected", hexes(y))
print("dims where the unrounded fp32 formula differs", [d for d in range(hd) if bf16_bits(y[d]) != bf16_bits(yu[d])])

print("== QSA selection case: nh 2, dh 8, ropeDims 4, theta 1e4, ratio 4, width 2, T 30, eps 1e-6")
NH, DH, RD, RATIO, WIDTH, T, EPS = 2, 8, 4, 4, 2, 30, 1e-6
C = (NH + 1) * DH


def qk_val(t, c):
    return f32(((t * 7 + c * 13 + (t * c) % 5) % 17 - 8) / 4)


qk = [[qk_val(t, c) for c in range(C)] for t in range(T)]
qn = [f32(((d * 3) % 5 - 2) / 8) for d in range(DH)]
kn = [f32(((d * 7) % 9 - 4) / 16) for d in range(DH)]
ct, st = tables(RD, 1e4, range(T))
nb_all = T // RATIO
kb = []
for b in range(nb_all):
    pooled = []
    for c in range(DH):
        acc = f32(0)
        for j in range(RATIO):
            acc = f32(acc + qk[b * RATIO + j][NH * DH + c])
        pooled.append(bf(f32(acc / f32(RATIO))))
    kb.append(rope(rms1p(pooled, kn, EPS), ct[b * RATIO], st[b * RATIO], RD))
divisor = f32(math.sqrt(DH))
expected = []
min_gap = math.inf
boundary_ties = []
for p in range(T):
    q = [rope(rms1p(qk[p][h * DH:(h + 1) * DH], qn, EPS), ct[p], st[p], RD) for h in range(NH)]
    nb = (p + 1) // RATIO
    scores = []
    for b in range(nb):
        score = f32(0)
        for h in range(NH):
            dot = f32(0)
            for c in range(DH):
                dot = f32(dot + f32(q[h][c] * kb[b][c]))
            score = f32(score + max(dot, f32(0)))
        scores.append(f32(score / divisor))
    order = sorted(range(nb), key=lambda b: (-scores[b], b))
    chosen = sorted(order[:WIDTH])
    if nb > WIDTH:
        gap = float(scores[order[WIDTH - 1]] - scores[order[WIDTH]])
        min_gap = min(min_gap, gap)
        if gap == 0:
            boundary_ties.append(p)
    expected.append(chosen + [-1] * (WIDTH - len(chosen)))
print("blocks per row", expected)
print("smallest gap between the last kept and the first dropped score", min_gap)
print("rows where the last kept and the first dropped block tie (the lower index wins)", boundary_ties)

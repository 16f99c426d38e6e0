# This machine's ceilings: numpy float32 a @ b per [T, K, O] (median of reps; a shape under
# 50 ms is run in a loop), then copyto of `copy` bytes on one thread and split over two
# threads (numpy releases the GIL); prints one JSON object.
# usage: python3 machine_ceilings.py '[[T, K, O], ...]' reps copyBytes
import json, sys, time, threading
import numpy as np
shapes = json.loads(sys.argv[1]); reps = int(sys.argv[2]); copy = int(sys.argv[3])
rng = np.random.default_rng(0)
def timed(fn):
    fn()
    t0 = time.perf_counter(); fn(); one = time.perf_counter() - t0
    loops = max(1, int(0.05 / max(one, 1e-9)))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(loops): fn()
        ts.append((time.perf_counter() - t0) / loops)
    ts.sort()
    return ts[len(ts) // 2]
out = []
for T, K, O in shapes:
    a = rng.standard_normal((T, K), dtype=np.float32)
    b = rng.standard_normal((K, O), dtype=np.float32)
    out.append(timed(lambda: a @ b))
    del a, b
n = copy // 4
src = np.ones(n, dtype=np.float32); dst = np.empty(n, dtype=np.float32)
one = timed(lambda: np.copyto(dst, src))
def two():
    h = n // 2
    ts = [threading.Thread(target=np.copyto, args=(dst[:h], src[:h])), threading.Thread(target=np.copyto, args=(dst[h:], src[h:]))]
    for t in ts: t.start()
    for t in ts: t.join()
both = timed(two)
cfg = np.show_config(mode='dicts') if hasattr(np, 'show_config') else {}
blas = cfg.get('Build Dependencies', {}).get('blas', {}) if isinstance(cfg, dict) else {}
print(json.dumps({'seconds': out, 'copy1': one, 'copy2': both, 'numpy': np.__version__, 'blas': f"{blas.get('name', '?')} {blas.get('version', '')}".strip()}))

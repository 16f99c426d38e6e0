# The HC mix bench's fp32 GEMM ceiling: numpy float32 a @ b at each [K, O] for T rows, the
# median of reps; prints one JSON object (seconds per shape, numpy's version and BLAS).
# usage: python3 gemm_ceiling.py T reps '[[K, O], ...]'
import json, sys, time
import numpy as np
T = int(sys.argv[1]); reps = int(sys.argv[2]); shapes = json.loads(sys.argv[3])
rng = np.random.default_rng(0)
out = []
for K, O in shapes:
    a = rng.standard_normal((T, K), dtype=np.float32)
    b = rng.standard_normal((K, O), dtype=np.float32)
    a @ b
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t0)
    ts.sort()
    out.append(ts[len(ts) // 2])
cfg = np.show_config(mode='dicts') if hasattr(np, 'show_config') else {}
blas = cfg.get('Build Dependencies', {}).get('blas', {}) if isinstance(cfg, dict) else {}
print(json.dumps({'seconds': out, 'numpy': np.__version__, 'blas': f"{blas.get('name', '?')} {blas.get('version', '')}".strip()}))

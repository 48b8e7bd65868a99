"""What a fresh process spends on CuPy before its first timed kernel (issue 16: start-up off the critical path).

Run twice on the GPU machine with one empty CUPY_CACHE_DIR: the first process compiles what CuPy compiles at first
use (its kernel cache on disk then serves the second). Prints seconds per step, one line each.
"""

import sys
import time


def step(name, fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    if hasattr(out, "device"):
        import cupy

        cupy.cuda.get_current_stream().synchronize()
    print(f"{sys.argv[1] if len(sys.argv) > 1 else ''} {name:40s} {time.perf_counter() - t:7.3f} s", flush=True)
    return out


import numpy as np  # noqa: E402

cp = step("import cupy", lambda: __import__("cupy"))
step("first allocation", lambda: cp.zeros(16, dtype=cp.float32))
for n in (16, 32, 64, 4096):
    rng = step(f"default_rng({n})", cp.random.default_rng, n)
    step(f"integers(0, 2, ({n}, {n}))", rng.integers, 0, 2, (n, n))
    step(f"integers(0, 8, ({n}, {n}))", rng.integers, 0, 8, (n, n))
    step(f"random float32 ({n}, {n})", rng.random, (n, n), dtype=np.float32)
for n in (16, 4096):
    rs = step(f"RandomState({n})", cp.random.RandomState, n)
    step(f"RandomState.random_sample f32 ({n})", rs.random_sample, (n, n), dtype=np.float32)
    step(f"RandomState.randint(0, 8) ({n})", rs.randint, 0, 8, (n, n))
a = cp.ones((64, 64), dtype=cp.float32)
step("isfinite + count_nonzero", lambda: int(cp.count_nonzero(~cp.isfinite(a))))
step("view uint32 !=", lambda: int(cp.count_nonzero(a.view(cp.uint32) != a.view(cp.uint32))))
step("ascontiguousarray(a.T)", lambda: cp.ascontiguousarray(a.T))
step("fill nan", lambda: a.fill(np.nan))
step("astype f64 matmul", lambda: a.astype(cp.float64) @ a.astype(cp.float64))
step("abs max rel err", lambda: float(cp.max(cp.abs(a.astype(cp.float64)) / cp.maximum(a, 1e-300))))
step("float32 matmul (cuBLAS)", lambda: a @ a)
for n in (16, 32, 64, 1024, 4096):
    x = cp.ones((n, n), dtype=cp.float32)
    step(f"count_nonzero(~isfinite) ({n}, {n})", lambda v: int(cp.count_nonzero(~cp.isfinite(v))), x)
    step(f"max ({n}, {n})", lambda v: float(cp.max(v)), x)
    step(f"count_nonzero(view !=) ({n}, {n})", lambda v: int(cp.count_nonzero(v.view(cp.uint32) != 0)), x)

"""Exploration for issue 19: launch one candidate cubin (argv[1], in cubins/) three times at n^3 (argv[2]), for
Nsight Compute to profile the third (ncu --launch-skip 2 --launch-count 1)."""

import sys

import cupy as cp
import numpy as np

name, n = sys.argv[1], int(sys.argv[2])
f = cp.RawModule(path=f"cubins/{name}.cubin").get_function("matmul_explore")
rng = cp.random.default_rng(19)
A = rng.uniform(-1, 1, (n, n), dtype=cp.float32)
B = rng.uniform(-1, 1, (n, n), dtype=cp.float32)
C = cp.empty((n, n), dtype=cp.float32)
sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
grid = (sms, 1) if "streamk" in name else ((n + 127) // 128, (n + 255) // 256)
for _ in range(3):
    f(grid, (256,), (A, B, C, np.int32(n), np.int32(n), np.int32(n)))
cp.cuda.Device().synchronize()

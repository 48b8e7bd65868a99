"""Exploration for issue 19: launch one candidate cubin (argv[1], in cubins/) three times at n^3 (argv[2]), for
Nsight Compute to profile the third (ncu --launch-skip 2 --launch-count 1)."""

import sys

import cupy as cp
from candidates import load

name, n = sys.argv[1], int(sys.argv[2])
launch = load(name)[name]
rng = cp.random.default_rng(19)
A = rng.uniform(-1, 1, (n, n), dtype=cp.float32)
B = rng.uniform(-1, 1, (n, n), dtype=cp.float32)
C = cp.empty((n, n), dtype=cp.float32)
for _ in range(3):
    launch(A, B, C)
cp.cuda.Device().synchronize()

"""Launch every candidate named on the command line (and cuBLAS) once at 4096^3, for Nsight Compute:
ncu --clock-control none --csv --page raw --metrics ... python3 ncu_one.py NAME ... (uses run.py's launcher)."""

import sys

import cupy as cp
import numpy as np

import run

n = 4096
names = sys.argv[1:] or [m["name"] for m in run.manifest()]
rng = np.random.default_rng(7)
A = cp.asarray(run.bf16_words(rng.uniform(-1, 1, (n, n)).astype(np.float32)))
Bt = cp.asarray(run.bf16_words(rng.uniform(-1, 1, (n, n)).astype(np.float32)))
C = cp.empty((n, n), dtype=cp.float32)
for name in names + ["cublas"]:
    c = run.Candidate(name)
    f = c.bind(A, Bt, C, n, n, n)
    cp.cuda.Device().synchronize()
    print("launch", name, flush=True)
    f()
    cp.cuda.Device().synchronize()

"""The exploration's candidates on the GPU: each cubin build.sh made (cubins/NAME.cubin, entry matmul_explore),
launched with the geometry of the defines build.sh lists for it (BM x BN block tiles, 32 threads per WM x WN warp
tile); a `streamk` build is persistent, one block per SM. run.py, trace.py and ncu_one.py launch them through here."""

import glob
import os

import cupy as cp
import numpy as np

SMS = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]


def defines(build_sh: str = "build.sh") -> dict[str, dict[str, int]]:
    """Each candidate's -D values, as build.sh lists them (NAME -DKEY=VALUE ... and other nvcc flags, skipped)."""
    found = {}
    for line in open(build_sh):
        parts = line.split()
        if len(parts) > 1 and parts[1].startswith("-D"):
            found[parts[0]] = {
                p[2:].split("=")[0]: int(p[2:].split("=")[1]) for p in parts[1:] if p.startswith("-D") and "=" in p
            }
    return found


class Candidate:
    def __init__(self, name: str, d: dict[str, int]):
        self.name = name
        self.module = cp.RawModule(path=f"cubins/{name}.cubin")
        self.fn = self.module.get_function("matmul_explore")
        self.threads = 32 * (d["BM"] // d["WM"]) * (d["BN"] // d["WN"])
        self.bm, self.bn = d["BM"], d["BN"]

    def grid(self, M: int, N: int) -> tuple[int, int]:
        if "streamk" in self.name:
            return (SMS, 1)
        return ((N + self.bn - 1) // self.bn, (M + self.bm - 1) // self.bm)

    def __call__(self, A, B, C) -> None:
        M, K = A.shape
        N = B.shape[1]
        self.fn(self.grid(M, N), (self.threads,), (A, B, C, np.int32(M), np.int32(N), np.int32(K)))


def load(pattern: str = "*") -> dict[str, Candidate]:
    """The built candidates whose names match ``pattern``, by name."""
    d = defines()
    names = sorted(os.path.basename(p)[: -len(".cubin")] for p in glob.glob(f"cubins/{pattern}.cubin"))
    return {n: Candidate(n, d[n]) for n in names}

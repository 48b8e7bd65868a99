"""Correctness of one product, against a float64 reference.

Error measure: for each element, |C - ref| / (|A| |B|), where |A| |B| is the
product of the element-wise absolute values, computed in float64. This is the
quantity the classical error bound of a float32 dot product of length K
bounds: |fl(a.b) - a.b| <= gamma_K (|a|.|b|) with gamma_K ~ K u, u = 2^-24.

Tolerance: 2 K u. Any order of summation (a tiled kernel, cuBLAS with split-K)
stays under K u in the worst case; the factor 2 covers the reference's own
rounding. It grows with K for that reason. A wrong index, a missed edge or an
unwritten element gives errors of order 1, far above it, and NaN never passes:
outputs are poisoned with NaN before the launch.
"""

from dataclasses import dataclass

import numpy as np

UNIT_ROUNDOFF = 2.0**-24


def tolerance(K: int) -> float:
    return 2.0 * K * UNIT_ROUNDOFF


@dataclass(frozen=True)
class Check:
    ok: bool
    max_rel_err: float
    tolerance: float
    reference: str  # cpu_f64 | gpu_f64
    reason: str


def reference(A: np.ndarray, B: np.ndarray, cpu_max_mnk: int):
    """(ref, abs_ref, where): A.B and |A|.|B| in float64, on the CPU if small enough."""
    M, K = A.shape
    N = B.shape[1]
    if M * N * K <= cpu_max_mnk:
        a, b = A.astype(np.float64), B.astype(np.float64)
        return a @ b, np.abs(a) @ np.abs(b), "cpu_f64"
    import cupy

    a, b = cupy.asarray(A, dtype=cupy.float64), cupy.asarray(B, dtype=cupy.float64)
    return a @ b, cupy.abs(a) @ cupy.abs(b), "gpu_f64"


def compare(C, ref, abs_ref, K: int, where: str) -> Check:
    """Check C (NumPy or CuPy, same module as ref) against the reference."""
    xp = np if isinstance(ref, np.ndarray) else _cupy()
    C = xp.asarray(C)
    tol = tolerance(K)
    if C.shape != ref.shape:
        return Check(False, float("inf"), tol, where, f"output shape {C.shape} != {ref.shape}")
    unwritten = int(xp.count_nonzero(~xp.isfinite(C)))
    if unwritten:
        return Check(False, float("inf"), tol, where, f"{unwritten} elements NaN or infinite (not written?)")
    floor = np.finfo(np.float64).tiny
    err = float(xp.max(xp.abs(C.astype(xp.float64) - ref) / xp.maximum(abs_ref, floor))) if C.size else 0.0
    if err > tol:
        return Check(False, err, tol, where, f"max relative error {err:.3g} > tolerance {tol:.3g}")
    return Check(True, err, tol, where, "")


def _cupy():
    import cupy

    return cupy

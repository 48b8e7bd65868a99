"""Correctness of one product: an exact check, then a rounding check.

**Exact check.** A and B hold small nonzero integers (in [-4, 4], never 0).
Every product is an integer of magnitude at most 16 and every partial sum an
integer of magnitude at most 16·K, so in float32 (24-bit significand) every
operation is exact up to K = 2^20, in any order of summation, with or without
fused multiply-adds. The result must then equal the float64 reference bit
for bit: a dropped term, a dropped K-tile, a row or a column written wrong or
not at all, each changes some element by at least 1.

**Rounding check.** A and B uniform in [-1, 1): the error measure is, per
element, |C - ref| / (|A|·|B|), with |A|·|B| the product of the element-wise
absolute values in float64. The classical worst-case bound of a float32 dot
product is K·u (u = 2^-24), which grows with K and is far too loose to see a
missing term at large K. With zero-mean inputs the partial sums are random
walks of size about √k/3, so the accumulated rounding error is about
u·K/7 while |A|·|B| is about K/4: the measure is about u whatever K
(observed in the H200 run archived on 2026-11-22: at most 6.7u over every
element of every variant and shape up to 16384³, growing only slowly with K).
The tolerance, ``ROUNDING_TOLERANCE_U`` = 64 units u (3.8e-6), leaves about
9× margin over the largest error seen, while one
dropped term costs about |a_k b_k| / (K/4), up to 4/K over the elements
of C, which is above 64u for every K up to 2^20. NaN never passes: outputs
are poisoned with NaN before every launch.

**BF16 inputs** (op matmul_bf16) go through the same two checks against the
float64 product of the BF16 values themselves: a product of two BF16 numbers
is exact in FP32, so the tensor cores' FP32 accumulation rounds as an FP32
sum does, and the same tolerance holds (the exploration's products of
4096³ and 8192³ stayed under a few units u).
"""

from dataclasses import dataclass

import numpy as np

UNIT_ROUNDOFF = 2.0**-24
ROUNDING_TOLERANCE_U = 64
EXACT_MAX_K = 2**20  # every partial sum of the exact check stays an integer below 2^24
EXACT_MAGNITUDE = 4  # entries of the exact check: nonzero integers in [-4, 4]


def tolerance(K: int) -> float:
    """Tolerance of the rounding check (independent of K; see the module's docstring)."""
    return ROUNDING_TOLERANCE_U * UNIT_ROUNDOFF


@dataclass(frozen=True)
class Check:
    ok: bool
    max_rel_err: float
    tolerance: float
    reference: str  # cpu_f64 | gpu_f64
    reason: str
    kind: str = "rounding"  # exact | rounding


def seed_of(*parts: int) -> int:
    """One 63-bit seed from several integers (CuPy's generators take a single integer)."""
    import hashlib

    return int.from_bytes(hashlib.sha256(repr(tuple(int(p) for p in parts)).encode()).digest()[:8], "little") >> 1


def _rng(xp, *parts):
    return np.random.default_rng(list(parts)) if xp is np else xp.random.default_rng(seed_of(*parts))


def exact_inputs(seed: int, M: int, N: int, K: int, xp=np) -> tuple:
    """A (M x K) and B (K x N) of nonzero integers in [-4, 4], float32, fresh per shape; made on the GPU with
    ``xp=cupy`` (the large shapes, whose reference is computed there too: seconds of host work saved)."""
    if K > EXACT_MAX_K:
        raise ValueError(f"K = {K} > {EXACT_MAX_K}: integer inputs are no longer summed exactly in float32")
    rng = _rng(xp, seed, M, N, K, 1)
    values = xp.asarray(np.array([-4, -3, -2, -1, 1, 2, 3, 4], dtype=np.float32))
    return values[rng.integers(0, 8, (M, K))], values[rng.integers(0, 8, (K, N))]


def random_inputs(seed: int, M: int, N: int, K: int, xp=np) -> tuple:
    """Random A (M x K) and B (K x N), uniform in [-1, 1), float32; fresh per shape (on the GPU with xp=cupy)."""
    rng = _rng(xp, seed, M, N, K)
    A = rng.random((M, K), dtype=np.float32) * 2 - 1
    B = rng.random((K, N), dtype=np.float32) * 2 - 1
    return A, B


# BF16 (the race on the tensor cores): held as uint16 words, the top half of a float32 (CuPy has no bfloat16 type).


def bf16_words(x, xp=np):
    """float32 values to BF16 words (uint16), rounded to nearest, ties to even (finite inputs)."""
    u = xp.ascontiguousarray(x, dtype=xp.float32).view(xp.uint32)
    bias = xp.uint32(0x7FFF) + ((u >> xp.uint32(16)) & xp.uint32(1))
    return ((u + bias) >> xp.uint32(16)).astype(xp.uint16)


def bf16_values(words, xp=np):
    """BF16 words (uint16) to the float32 values they hold, exactly."""
    return (words.astype(xp.uint32) << xp.uint32(16)).view(xp.float32)


def bf16_exact_inputs(seed: int, M: int, N: int, K: int, xp=np) -> tuple:
    """A (M x K) and Bt (N x K) as BF16 words of nonzero integers in [-4, 4]: exact in BF16 (8 significant bits),
    and every partial sum exact in the FP32 accumulators (see the exact check above)."""
    A, B = exact_inputs(seed, M, N, K, xp)
    return bf16_words(A, xp), bf16_words(xp.ascontiguousarray(B.T), xp)


def bf16_random_inputs(seed: int, M: int, N: int, K: int, xp=np) -> tuple:
    """A (M x K) and Bt (N x K) as BF16 words of uniform floats in [-1, 1), rounded to BF16; fresh per shape."""
    A, B = random_inputs(seed, M, N, K, xp)
    return bf16_words(A, xp), bf16_words(xp.ascontiguousarray(B.T), xp)


def reference(A: np.ndarray, B: np.ndarray, cpu_max_mnk: int, absolute: bool = True):
    """(ref, abs_ref, where): A·B and |A|·|B| in float64, on the CPU if small enough.

    ``absolute=False`` skips |A|·|B| (the exact check needs only A·B) and returns None for it.
    """
    M, K = A.shape
    N = B.shape[1]
    if M * N * K <= cpu_max_mnk:
        a, b = A.astype(np.float64), B.astype(np.float64)
        return a @ b, (np.abs(a) @ np.abs(b) if absolute else None), "cpu_f64"
    import cupy

    a, b = cupy.asarray(A, dtype=cupy.float64), cupy.asarray(B, dtype=cupy.float64)
    return a @ b, (cupy.abs(a) @ cupy.abs(b) if absolute else None), "gpu_f64"


def _module(ref):
    if isinstance(ref, np.ndarray):
        return np
    import cupy

    return cupy


def _unwritten(C, xp) -> int:
    return int(xp.count_nonzero(~xp.isfinite(C)))


def compare_exact(C, ref, where: str) -> Check:
    """C must equal the (exactly representable) reference element for element."""
    xp = _module(ref)
    C = xp.asarray(C)
    if C.shape != ref.shape:
        return Check(False, float("inf"), 0.0, where, f"output shape {C.shape} != {ref.shape}", "exact")
    unwritten = _unwritten(C, xp)
    if unwritten:
        return Check(False, float("inf"), 0.0, where, f"{unwritten} elements NaN or infinite (not written?)", "exact")
    wrong = C.astype(xp.float64) != ref
    n = int(xp.count_nonzero(wrong))
    if n:
        first = np.unravel_index(int(xp.argmax(wrong)), C.shape)
        worst = float(xp.max(xp.abs(C.astype(xp.float64) - ref)))
        return Check(
            False,
            worst,
            0.0,
            where,
            f"exact check: {n} of {C.size} elements differ from the exact product (first at {tuple(map(int, first))}, "
            f"largest difference {worst:g})",
            "exact",
        )
    return Check(True, 0.0, 0.0, where, "", "exact")


def compare(C, ref, abs_ref, K: int, where: str) -> Check:
    """Rounding check of C (NumPy or CuPy, same module as ref) against the reference."""
    xp = _module(ref)
    C = xp.asarray(C)
    tol = tolerance(K)
    if C.shape != ref.shape:
        return Check(False, float("inf"), tol, where, f"output shape {C.shape} != {ref.shape}")
    unwritten = _unwritten(C, xp)
    if unwritten:
        return Check(False, float("inf"), tol, where, f"{unwritten} elements NaN or infinite (not written?)")
    floor = np.finfo(np.float64).tiny
    err = float(xp.max(xp.abs(C.astype(xp.float64) - ref) / xp.maximum(abs_ref, floor))) if C.size else 0.0
    if err > tol:
        return Check(False, err, tol, where, f"rounding check: max relative error {err:.3g} > tolerance {tol:.3g}")
    return Check(True, err, tol, where, "")


def compare_equal(out, expected) -> Check:
    """Bit-for-bit equality of an output that only moves data (a transpose, a copy); NumPy or CuPy arrays, compared
    where ``expected`` lives."""
    xp = _module(expected)
    where = "cpu" if xp is np else "gpu"
    out = xp.asarray(out)
    if out.shape != expected.shape:
        return Check(False, float("inf"), 0.0, where, f"output shape {out.shape} != {expected.shape}", "exact")
    unwritten = int(xp.count_nonzero(~xp.isfinite(out)))
    if unwritten:
        return Check(False, float("inf"), 0.0, where, f"{unwritten} elements NaN (not written?)", "exact")
    wrong = out.view(xp.uint32) != expected.view(xp.uint32)
    n = int(xp.count_nonzero(wrong))
    if n:
        first = np.unravel_index(int(xp.argmax(wrong)), out.shape)
        return Check(
            False,
            float("inf"),
            0.0,
            where,
            f"{n} of {out.size} elements differ (first at {tuple(map(int, first))})",
            "exact",
        )
    return Check(True, 0.0, 0.0, where, "", "exact")

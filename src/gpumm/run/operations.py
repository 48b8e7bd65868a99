"""The operations a catalog variant can compute, each behind one interface.

A variant's ``op`` (catalog key, ``matmul`` by default) names one of these.
An operation says which arrays it takes and makes, how a kernel of it is
launched, how its result is checked before any timing, which shapes it runs
at, and what its rate is counted in. The measurement loop, the launcher and
the profiler go through it, so a new operation is one class here and one
entry per kernel in the catalog:

- ``matmul``: C = A·B, A M×K, B K×N (the multiplies of every seed);
- ``matmul_bf16``: C = A·B in FP32 from BF16 A and B, B held as Bt N×K (the race on the tensor cores);
- ``transpose``: out = inᵀ, in M×N, out N×M (seed 002's transpose, S2-TR);
- ``copy``: out = in, M×N (the transposes' ceiling: the same bytes, no turn).

Shapes are always (M, N, K); the operations that have no K use 1.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpumm.run import memo, verify
from gpumm.setup import regimes


@dataclass(frozen=True)
class Checked:
    """The checks of one shape, and the arrays and the bound launch to time when they pass."""

    exact: verify.Check
    rounding: verify.Check
    arrays: tuple = ()  # (inputs on the device, output, host inputs, the launch)
    launch_ms: float = 0.0  # the last check's launch, on the inputs that are then timed: the first estimate
    checks_s: float = 0.0  # seconds the checks' launches ran: they warm the kernel up for the timing


class Operation:
    name = ""
    unit = ""  # the rate the report shows: GFLOP/s or GB/s
    memory_modes = False  # runs under every memory mode of the config (else device only)
    end_to_end = False  # also timed with its host-to-device copies
    footprint = regimes.FOOTPRINT["transpose"]  # bytes of its arrays at square size n, over n² (the regime)

    def shapes(self, config: dict) -> list[tuple[int, int, int]]:
        raise NotImplementedError

    def profile_arrays(self, seed: int, n: int) -> list[np.ndarray]:
        """Host inputs of the profiled launch at square size n."""
        raise NotImplementedError

    def profile_inputs(self, seed: int, n: int) -> list[np.ndarray]:
        """:meth:`profile_arrays`, made once per operation, seed and size and kept (:mod:`gpumm.run.memo`): every
        variant of the operation is profiled on the same inputs, and making them costs host seconds at the
        profile's DRAM-regime size (two 4096² arrays), which the profile session would otherwise pay per variant.
        Read-only: the launch gets copies (``mode.place``)."""
        return memo.STORE.get(("profile", self.name, seed, n), lambda: self.profile_arrays(seed, n))

    def output_shape(self, M: int, N: int, K: int) -> tuple[int, int]:
        raise NotImplementedError

    def kernel_args(self, inputs, output, M: int, N: int, K: int) -> tuple:
        """The arguments a kernel of this operation takes after its arrays."""
        raise NotImplementedError

    def check(self, launcher, mode, seed: int, cpu_max_mnk: int, shape) -> Checked:
        raise NotImplementedError


def _shapes(sizes, extra, square) -> list[tuple[int, int, int]]:
    shapes = {square(s) for s in sizes} | {tuple(s) for s in extra}
    return sorted(shapes, key=lambda s: (s[0] * s[1] * s[2], s))


class Matmul(Operation):
    name = "matmul"
    unit = "GFLOP/s"
    memory_modes = True
    end_to_end = True
    footprint = regimes.FOOTPRINT["product"]  # A, B and C

    def shapes(self, config):
        return _shapes(config["sizes"], config.get("shapes", []), lambda s: (s, s, s))

    def profile_arrays(self, seed, n):
        return list(verify.random_inputs(seed, n, n, n))

    def output_shape(self, M, N, K):
        return (M, N)

    def inputs(self, exact: bool, seed: int, M: int, N: int, K: int, xp) -> list:
        """The exact check's inputs (small integers) or the rounding check's (random floats), fresh per shape."""
        return list((verify.exact_inputs if exact else verify.random_inputs)(seed, M, N, K, xp))

    def reference(self, inputs: list, cpu_max_mnk: int, absolute: bool):
        """(ref, abs_ref, where): the float64 product of the inputs (and of their absolute values)."""
        A, B = inputs
        return verify.reference(A, B, cpu_max_mnk, absolute=absolute)

    def check(self, launcher, mode, seed, cpu_max_mnk, shape):
        """The exact check (small integers), then the rounding check (random floats); see gpumm.run.verify.
        The inputs and references come from :meth:`inputs` and :meth:`reference`.

        Inputs and references depend only on the seed and the shape: they are made once and kept
        (:mod:`gpumm.run.memo`) for the next memory mode and the next variant at the same shape.
        """
        M, N, K = shape
        on_gpu = launcher.variant.on_gpu
        # shapes checked against a reference on the GPU get their inputs made there too (CuPy's generators)
        xp = _cupy() if on_gpu and M * N * K > cpu_max_mnk else np
        key = (self.name, "gpu" if xp is not np else "cpu", seed, M, N, K)
        spent = 0.0
        if K <= verify.EXACT_MAX_K:
            exact_in = memo.STORE.get(("exact", *key), lambda: self.inputs(True, seed, M, N, K, xp))
            _, C, product = place(launcher, mode, exact_in, (M, N))
            spent += timed_run(product, on_gpu) / 1e3
            ref, _, where = memo.STORE.get(
                ("exact_ref", *key, cpu_max_mnk), lambda: self.reference(exact_in, cpu_max_mnk, absolute=False)
            )
            exact = verify.compare_exact(mode.fetch(C) if where == "cpu_f64" else C, ref, where)
            del ref, C, product
        else:
            exact = verify.Check(True, 0.0, 0.0, "", f"not made: K > {verify.EXACT_MAX_K}", "exact")
        if not exact.ok:
            skipped = verify.Check(False, np.nan, verify.tolerance(K), "", "not made: the exact check failed")
            return Checked(exact, skipped)
        host = memo.STORE.get(("random", *key), lambda: self.inputs(False, seed, M, N, K, xp))
        placed, C, product = place(launcher, mode, host, (M, N))
        launch_ms = timed_run(product, on_gpu)
        ref, abs_ref, where = memo.STORE.get(
            ("random_ref", *key, cpu_max_mnk), lambda: self.reference(host, cpu_max_mnk, absolute=True)
        )
        rounding = verify.compare(mode.fetch(C) if where == "cpu_f64" else C, ref, abs_ref, K, where)
        arrays = (placed, C, host, product)
        return Checked(exact, rounding, arrays, launch_ms, spent + launch_ms / 1e3)


class MatmulBF16(Matmul):
    """C (FP32, M x N) = A · B with A (M x K) and B in BF16, B held K-major as Bt (N x K): the race on the tensor
    cores. Device memory only; the inputs are BF16 words (uint16); the checks are the matmul's, against the float64
    product of the BF16 values. Shapes from the config's ``bf16`` section (K a multiple of 8: the TMA's rule)."""

    name = "matmul_bf16"
    memory_modes = False
    end_to_end = False
    footprint = regimes.FOOTPRINT["bf16"]  # A and Bt in two bytes, C in four

    def shapes(self, config):
        b = config.get("bf16", {})
        return _shapes(b.get("sizes", []), b.get("shapes", []), lambda s: (s, s, s))

    def profile_arrays(self, seed, n):
        return list(verify.bf16_random_inputs(seed, n, n, n))

    def inputs(self, exact, seed, M, N, K, xp):
        """A (M x K) and Bt (N x K) as BF16 words: small integers (exact in BF16) or random values."""
        return list((verify.bf16_exact_inputs if exact else verify.bf16_random_inputs)(seed, M, N, K, xp))

    def reference(self, inputs, cpu_max_mnk, absolute):
        """The float64 product of the values the BF16 words hold."""
        a, bt = (verify.bf16_values(w, _xp(w)) for w in inputs)
        return verify.reference(a, bt.T, cpu_max_mnk, absolute=absolute)

    def checked(self, bind, M: int, N: int, K: int, xp, seed: int = 7) -> str:
        """Both checks at one shape of a product outside the catalog (the explorations under tools/model/): fresh
        inputs, C poisoned with NaN before each launch, the float64 references computed where ``xp`` computes;
        '' where it passes them, else why not. ``bind(A, Bt, C)`` returns the launch (C = A·Btᵀ, FP32)."""
        for exact in (True, False):
            A, W = self.inputs(exact, seed, M, N, K, xp)
            C = xp.full((M, N), np.nan, dtype=xp.float32)
            bind(A, W, C)()
            if xp is not np:
                xp.cuda.Device().synchronize()
            ref, abs_ref, where = self.reference([A, W], M * N * K if xp is np else 0, absolute=not exact)
            check = verify.compare_exact(C, ref, where) if exact else verify.compare(C, ref, abs_ref, K, where)
            if not check.ok:
                return check.reason
        return ""


class Transpose(Operation):
    """out = inᵀ; checked exactly: a transpose only moves bits."""

    name = "transpose"
    unit = "GB/s"

    def shapes(self, config):
        t = config.get("transpose", {})
        return _shapes(t.get("sizes", []), [[m, n, 1] for m, n in t.get("shapes", [])], lambda s: (s, s, 1))

    def profile_arrays(self, seed, n):
        return [self._input(seed, n, n)]

    def output_shape(self, M, N, K):
        return (N, M)

    def kernel_args(self, inputs, output, M, N, K):
        return (inputs[0], output, np.int32(M), np.int32(N))

    @staticmethod
    def _input(seed, M, N, xp=np):
        """Random floats with every bit pattern of the significand in play (never zero), fresh per shape (made on
        the GPU with xp=cupy)."""
        rng = verify._rng(xp, seed, M, N, 7)
        sign = xp.asarray(np.float32([-1, 1]))[rng.integers(0, 2, (M, N))]
        return (rng.random((M, N), dtype=np.float32) + 0.5) * sign

    def expected(self, a):
        """The transposed input, made where it lives by NumPy or CuPy (on the GPU, CuPy's own copy kernel), not by
        a kernel under test."""
        return _xp(a).ascontiguousarray(a.T)

    def check(self, launcher, mode, seed, cpu_max_mnk, shape):
        """Bit for bit against CuPy's own transpose (or copy) of the same input, on the GPU."""
        M, N, _ = shape
        cupy = _cupy()
        host = memo.STORE.get(("transpose_input", seed, M, N), lambda: self._input(seed, M, N, cupy))
        # made before any kernel under test runs, from the kept input (placing it copies it: a kernel that wrote
        # its input cannot change what the next variant is checked against)
        expected = memo.STORE.get((self.name, "expected", seed, M, N), lambda: self.expected(host))
        inputs, out, launch = place(launcher, mode, [host], self.output_shape(M, N, 1))
        launch_ms = timed_run(launch, True)
        exact = verify.compare_equal(out, expected)
        rounding = verify.Check(exact.ok, 0.0, 0.0, exact.reference, exact.reason or "", "rounding")  # nothing to round
        arrays = (inputs, out, [host], launch) if exact.ok else ()
        return Checked(exact, rounding, arrays, launch_ms, launch_ms / 1e3)


class Copy(Transpose):
    """out = in, with the transposes' tiling: their ceiling."""

    name = "copy"

    def output_shape(self, M, N, K):
        return (M, N)

    def expected(self, a):
        """The input copied where it lives."""
        return a.copy()


OPERATIONS: dict[str, Operation] = {op.name: op for op in (Matmul(), MatmulBF16(), Transpose(), Copy())}


def get(name: str | None) -> Operation:
    try:
        return OPERATIONS[name or "matmul"]
    except KeyError:
        raise ValueError(f"unknown operation {name!r}; allowed: {', '.join(OPERATIONS)}") from None


def _cupy():
    import cupy

    return cupy


def _xp(a):
    if isinstance(a, np.ndarray):
        return np
    import cupy

    return cupy


def place(launcher, mode, hosts: list[np.ndarray], out_shape) -> tuple[list, object, Callable[[], None]]:
    """Inputs placed in the memory mode, the output poisoned with NaN, and the bound launch."""
    inputs = [mode.place(h) for h in hosts]
    out = mode.empty(out_shape)
    out.fill(np.nan)  # poison: an element the kernel never writes stays NaN
    return inputs, out, launcher.bind(*inputs, out, scratch=mode.empty)


def timed_run(launch: Callable[[], None], on_gpu: bool) -> float:
    """Milliseconds of one run of ``launch`` (CUDA events on the GPU, the host clock for a CPU variant), waited for."""
    if not on_gpu:
        import time

        t0 = time.perf_counter()
        launch()
        return (time.perf_counter() - t0) * 1e3
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    launch()
    end.record()
    sync(True)
    return cupy.cuda.get_elapsed_time(start, end)


def sync(on_gpu: bool) -> None:
    if on_gpu:
        import cupy

        cupy.cuda.get_current_stream().synchronize()
        cupy.cuda.Device().synchronize()

"""Turn a catalog variant into callables that compute C = A B.

The catalog says what to launch (entry point, block and grid expressions, an
optional preparation kernel); this module holds only the launch. GPU variants
take device-visible CuPy arrays from a memory mode, CPU variants NumPy arrays.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpumm.catalog import Variant


@dataclass
class Bound:
    """A product bound to its arrays: ``run`` is the timed product, ``prepare``
    the step before it (B into B^T) when the variant has one. Calling the
    object does both: C is then A B."""

    run: Callable[[], None]
    prepare: Callable[[], None] | None = None

    def __call__(self) -> None:
        if self.prepare is not None:
            self.prepare()
        self.run()


class Launcher:
    """Loads a variant's cubin once; ``bind`` makes a product for given arrays."""

    def __init__(self, variant: Variant, cubin: Path | None = None):
        self.variant = variant
        self.cubin = cubin
        self._fn = self._prep = None
        if variant.is_cuda:
            import cupy

            if cubin is None or not Path(cubin).is_file():
                raise FileNotFoundError(f"{variant.id}: cubin {cubin} not found; build it first")
            module = cupy.RawModule(path=str(cubin))
            self._fn = module.get_function(variant.entry)
            if variant.prepare:
                self._prep = module.get_function(variant.prepare[0])

    def bind(self, A, B, C) -> Bound:
        """The product of A (M x K) and B (K x N) into C."""
        M, K = A.shape
        N = B.shape[1]
        kind = self.variant.kind
        if kind == "cpu":
            return Bound(_cpu(self.variant.entry, A, B, C))
        if kind == "cublas":
            import cupy

            return Bound(lambda: cupy.matmul(A, B, out=C))
        grid, block = self.variant.grid_dims(M, N, K), self.variant.block_dims()
        fn, ints = self._fn, (np.int32(M), np.int32(N), np.int32(K))
        if self._prep is None:
            args = (A, B, C, *ints)
            return Bound(lambda: fn(grid, block, args))
        import cupy

        BT = cupy.empty((N, K), dtype=B.dtype)  # scratch on the device, whatever the mode of A, B, C
        pgrid, pblock = self.variant.prepare_dims(M, N, K)
        prep, pargs, args = self._prep, (B, BT, np.int32(K), np.int32(N)), (A, BT, C, *ints)
        return Bound(lambda: fn(grid, block, args), lambda: prep(pgrid, pblock, pargs))


def _cpu(entry: str, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> Callable[[], None]:
    if entry == "blas":
        return lambda: np.matmul(A, B, out=C)

    def rows():
        # one row of C at a time: (A[i, k] * B[k, :]) summed over k, vectorised along the row;
        # NumPy runs these element-wise operations on one thread
        for i in range(A.shape[0]):
            np.sum(A[i, :, None] * B, axis=0, out=C[i])

    return rows

"""Turn a catalog variant into a callable that computes C = A B once.

The catalog says what to launch (entry point, block and grid expressions);
this module holds only the launch. Arguments are device-visible CuPy arrays
from a memory mode.
"""

from pathlib import Path

import numpy as np

from gpumm.catalog import Variant


class Launcher:
    """Loads a variant's cubin once; ``bind`` makes a launch for given arrays."""

    def __init__(self, variant: Variant, cubin: Path | None = None):
        self.variant = variant
        self.cubin = cubin
        self._fn = None
        if variant.is_cuda:
            import cupy

            if cubin is None or not Path(cubin).is_file():
                raise FileNotFoundError(f"{variant.id}: cubin {cubin} not found; build it first")
            self._fn = cupy.RawModule(path=str(cubin)).get_function(variant.entry)

    def bind(self, A, B, C):
        """A zero-argument callable launching the product of A (M x K) and B (K x N) into C."""
        M, K = A.shape
        N = B.shape[1]
        if self.variant.kind == "cublas":
            import cupy

            return lambda: cupy.matmul(A, B, out=C)
        grid = self.variant.grid_dims(M, N, K)
        block = self.variant.block_dims()
        args = (A, B, C, np.int32(M), np.int32(N), np.int32(K))
        fn = self._fn
        return lambda: fn(grid, block, args)

"""Turn a catalog variant into callables that compute C = A B.

The catalog says what to launch (entry point, block and grid expressions, an
optional preparation kernel, a compiled host function, a thread count); this
module holds only the launch. GPU variants take device-visible CuPy arrays
from a memory mode, CPU variants NumPy arrays. cuBLAS and the CPU baselines
are defined here entirely: a change to how they (or any variant) are launched
raises the method's version (gpumm.setup.digest.METHOD_VERSION), which every
variant's digest covers.
"""

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpumm.setup.catalog import Variant


@dataclass
class Bound:
    """A product bound to its arrays.

    Calling the object computes C = A B: the preparation step first where
    there is one (B into B^T), then the multiply. ``prepare`` and ``multiply``
    are the two steps on their own, for timing them apart.
    """

    multiply: Callable[[], None]
    prepare: Callable[[], None] | None = None
    library: str = ""  # what computes it, where that is not a kernel of ours (e.g. cuBLAS 13.0 through ctypes)

    def __call__(self) -> None:
        if self.prepare is not None:
            self.prepare()
        self.multiply()


class Launcher:
    """Loads a variant's binary once (cubin or shared object); ``bind`` makes a product for given arrays."""

    def __init__(self, variant: Variant, binary: Path | None = None):
        self.variant = variant
        self.binary = binary
        self._fn = self._prep = self._host = self._sms = self._geom = self.module = None
        self._pdl = False
        self._sgemm = {}
        if variant.is_cuda or (variant.kind == "cpu" and variant.file):
            if binary is None or not Path(binary).is_file():
                raise FileNotFoundError(f"{variant.id}: built binary {binary} not found; build it first")
        if variant.is_cuda:
            import cupy

            module = cupy.RawModule(path=str(binary))
            self.module = module  # its globals, for a build that keeps some (tools/model/trace.py's stamps)
            self._fn = module.get_function(variant.entry)
            self._sms = sm_count() if variant.grid_names_sms else None  # asked once, where the grid needs it
            if variant.prepare:
                self._prep = module.get_function(variant.prepare[0])
            if variant.op == "matmul_bf16":  # the kernel describes its launch (gpumm.run.hopper)
                from gpumm.run import hopper

                self._geom = hopper.geometry(binary)
                self._pdl = hopper.pdl(binary)  # launched with programmatic dependent launch
                hopper.prepare(self._fn, self._geom)
        elif variant.kind == "cpu" and variant.file:
            lib = ctypes.CDLL(str(Path(binary).resolve()))
            self._host = getattr(lib, variant.entry)
            self._host.restype = None
            ptr = ctypes.POINTER(ctypes.c_float)
            self._host.argtypes = [ptr, ptr, ptr, ctypes.c_int, ctypes.c_int, ctypes.c_int]

    @property
    def geometry(self) -> dict | None:
        """A BF16 kernel's launch geometry as its cubin states it (gpumm.run.hopper.geometry), else None."""
        return self._geom

    @property
    def function(self):
        """The loaded kernel (a cupy.RawKernel), None for cuBLAS and the CPU: for a launch ``bind`` does not make
        (tools/model/run.py's chained launches)."""
        return self._fn

    def bind(self, *arrays, scratch: Callable | None = None, grid: tuple | None = None) -> Bound:
        """The variant's operation on its arrays: inputs then output (a matmul: A, B, C).

        ``scratch(shape)`` allocates the intermediate (B^T) where the variant
        has a preparation step: pass the memory mode's ``empty`` so that every
        array the product touches lives in that mode. ``grid``: a BF16
        kernel's grid in place of the catalog's (an exploration's build of its
        file: a persistent knock-out, K split over blocks).
        """
        if self.variant.op == "matmul_bf16":
            return self._bf16(*arrays, grid=grid)
        if grid is not None:
            raise ValueError(f"{self.variant.id}: a grid of its own is for the BF16 kernels only")
        if self.variant.op != "matmul":
            return self._other(arrays)
        A, B, C = arrays
        M, K = A.shape
        N = B.shape[1]
        kind = self.variant.kind
        if kind == "cpu":
            return Bound(self._cpu(A, B, C))
        if kind == "cublas":
            return self._cublas(A, B, C)
        grid, block = self.variant.grid_dims(M, N, K, sms=self._sms), self.variant.block_dims()
        fn, ints = self._fn, (np.int32(M), np.int32(N), np.int32(K))
        if self._prep is None:
            args = (A, B, C, *ints)
            return Bound(lambda: fn(grid, block, args))
        if scratch is None:
            import cupy

            scratch = cupy.empty
        BT = scratch((N, K))
        pgrid, pblock = self.variant.prepare_dims(M, N, K)
        prep, pargs, args = self._prep, (B, BT, np.int32(K), np.int32(N)), (A, BT, C, *ints)
        return Bound(lambda: fn(grid, block, args), lambda: prep(pgrid, pblock, pargs))

    def _other(self, arrays) -> Bound:
        """A kernel of another operation (transpose, copy): its arguments come from the operation."""
        from gpumm.run import operations

        *inputs, out = arrays
        M, N = inputs[0].shape
        args = operations.get(self.variant.op).kernel_args(inputs, out, M, N, 1)
        grid, block, fn = self.variant.grid_dims(M, N, 1), self.variant.block_dims(), self._fn
        return Bound(lambda: fn(grid, block, args))

    def _bf16(self, A, Bt, C, grid: tuple | None = None) -> Bound:
        """C = A·Btᵀ from BF16 words: a kernel of kernels/matmul_bf16 with the arguments and dynamic shared memory
        its geometry asks for (tensor maps by value), launched with PDL where its cubin says (on ``grid`` where
        given), or cublasGemmEx on the current stream."""
        M, K = A.shape
        N = Bt.shape[0]
        if self.variant.kind == "cublas":
            import cupy

            from gpumm.run import cublas

            stream = cupy.cuda.get_current_stream().ptr
            if stream not in self._sgemm:
                self._sgemm[stream] = cublas.GemmBF16(stream)
            gemm = self._sgemm[stream]
            return Bound(lambda: gemm.gemm(A, Bt, C), library=f"cublasGemmEx, cuBLAS {gemm.version}")
        from gpumm.run import hopper

        geom, fn = self._geom, self._fn
        grid, block = grid or self.variant.grid_dims(M, N, K, sms=self._sms), self.variant.block_dims()
        args = hopper.arguments(geom, A, Bt, C, M, N, K)
        if self._pdl:
            return Bound(hopper.launch_pdl(fn, grid, block, geom["smem"], args))
        return Bound(lambda: fn(grid, block, args, shared_mem=geom["smem"]))

    def _cublas(self, A, B, C) -> Bound:
        """cublasSgemm on the current stream, through a handle of our own (capturable in a CUDA graph)."""
        import cupy

        from gpumm.run import cublas

        stream = cupy.cuda.get_current_stream().ptr
        try:
            if stream not in self._sgemm:
                self._sgemm[stream] = cublas.Sgemm(stream)
            sgemm = self._sgemm[stream]
        except (cublas.CublasError, OSError, AttributeError) as exc:  # no direct access: CuPy's matmul (not capturable)
            return Bound(lambda: cupy.matmul(A, B, out=C), library=f"cupy.matmul ({exc})")
        return Bound(lambda: sgemm.gemm(A, B, C), library=f"cublasSgemm_v2, cuBLAS {sgemm.version}")

    def _cpu(self, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> Callable[[], None]:
        v = self.variant
        if v.entry == "blas":
            _blas_threads(v.threads)
            return lambda: np.matmul(A, B, out=C)
        M, K = A.shape
        N = B.shape[1]
        ptr = ctypes.POINTER(ctypes.c_float)
        for a in (A, B, C):
            if not (a.flags.c_contiguous and a.dtype == np.float32):
                raise ValueError(f"{v.id}: arrays must be C-contiguous float32")
        args = (A.ctypes.data_as(ptr), B.ctypes.data_as(ptr), C.ctypes.data_as(ptr), M, N, K)
        host = self._host
        return lambda: host(*args)


_BLAS_LIMIT = None  # the thread limit in force, held for the process (one measurement job runs one variant)


def sm_count() -> int:
    """The current GPU's SM count (a grid may name it: SMS in the catalog; the FP32 rule counts waves with it)."""
    import cupy

    return cupy.cuda.Device().attributes["MultiProcessorCount"]


def _blas_threads(threads: int | None) -> None:
    """Limit NumPy's BLAS to ``threads`` threads, or give it back every core (None)."""
    global _BLAS_LIMIT
    if _BLAS_LIMIT is not None:
        _BLAS_LIMIT.restore_original_limits()
        _BLAS_LIMIT = None
    if threads:
        from threadpoolctl import threadpool_limits

        _BLAS_LIMIT = threadpool_limits(limits=threads, user_api="blas")

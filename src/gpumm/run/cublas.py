"""cuBLAS SGEMM called directly, so that its launches can be captured in a CUDA graph.

CuPy refuses any cuBLAS call while a stream is being captured ("calling
cuBLAS API during stream capture is currently unsupported"), so timing
``cupy.matmul`` at small sizes measures CuPy's Python dispatch (about 25 µs a
call on an H100), not cuBLAS. This module calls ``cublasSgemm_v2`` of the very
library CuPy loaded, through ctypes, on a handle of its own with a fixed
workspace (cuBLAS may then be captured: CUDA programming guide and cuBLAS
documentation, "CUDA Graphs Support"). Default math mode: FP32 throughout,
no TF32, the same SGEMM ``cupy.matmul`` runs for float32.

Row-major C = A·B is the column-major product Cᵀ = Bᵀ·Aᵀ, which is how the
call below passes the operands (no copies, no transposes).
"""

import ctypes
from pathlib import Path

CUBLAS_OP_N = 0
WORKSPACE_BYTES = 32 << 20


class CublasError(RuntimeError):
    """The cuBLAS library could not be found or a call failed."""


def _loaded_library() -> str:
    """Path of the libcublas this process loaded (through CuPy)."""
    import cupy

    cupy.cuda.device.get_cublas_handle()  # makes CuPy load cuBLAS
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if "libcublas.so" in path and "Lt" not in Path(path).name:
            return path
    raise CublasError("libcublas is not loaded in this process (CuPy did not load it)")


class Sgemm:
    """One cuBLAS handle bound to a stream; ``gemm(A, B, C)`` queues C = A·B (row-major float32)."""

    _lib = None

    def __init__(self, stream_ptr: int):
        import cupy

        if Sgemm._lib is None:
            Sgemm._lib = ctypes.CDLL(_loaded_library())
        lib = self.lib = Sgemm._lib
        self.handle = ctypes.c_void_p()
        self._check(lib.cublasCreate_v2(ctypes.byref(self.handle)), "cublasCreate")
        self._check(lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(stream_ptr)), "cublasSetStream")
        self.workspace = cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
        self._check(
            lib.cublasSetWorkspace_v2(
                self.handle, ctypes.c_void_p(self.workspace.data.ptr), ctypes.c_size_t(WORKSPACE_BYTES)
            ),
            "cublasSetWorkspace",
        )
        self.alpha, self.beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
        version = ctypes.c_int()
        self._check(lib.cublasGetVersion_v2(self.handle, ctypes.byref(version)), "cublasGetVersion")
        self.version = version.value

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise CublasError(f"{what} failed with cuBLAS status {status}")

    def gemm(self, A, B, C) -> None:
        M, K = A.shape
        N = B.shape[1]
        if M == 0 or N == 0:
            return
        self._check(
            self.lib.cublasSgemm_v2(
                self.handle,
                CUBLAS_OP_N,
                CUBLAS_OP_N,
                ctypes.c_int(N),
                ctypes.c_int(M),
                ctypes.c_int(K),
                ctypes.byref(self.alpha),
                ctypes.c_void_p(B.data.ptr),
                ctypes.c_int(N),
                ctypes.c_void_p(A.data.ptr),
                ctypes.c_int(K),
                ctypes.byref(self.beta),
                ctypes.c_void_p(C.data.ptr),
                ctypes.c_int(N),
            ),
            "cublasSgemm",
        )

    def __del__(self):
        if getattr(self, "handle", None) and self._lib is not None:
            self._lib.cublasDestroy_v2(self.handle)

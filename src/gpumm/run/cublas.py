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

CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUDA_R_32F, CUDA_R_16BF = 0, 14  # cudaDataType
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1
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


class GemmBF16(Sgemm):
    """cublasGemmEx on the same kind of handle: C (M x N, FP32, row-major) = A (M x K) · B with A and B in BF16
    (uint16 words), B held K-major as Bt (N x K, row-major), FP32 compute (CUBLAS_COMPUTE_32F).

    In cuBLAS's column-major view the row-major C is Cᵀ (N x M, ldc = N) = Bt · Aᵀ: the row-major N x K buffer Bt
    is a column-major K x N matrix used transposed (lda = K), and the row-major M x K buffer A is the column-major
    K x M matrix Aᵀ (ldb = K). The same buffers as the kernels', no copies: the "TN" case."""

    def gemm(self, A, Bt, C) -> None:
        M, K = A.shape
        N = Bt.shape[0]
        if M == 0 or N == 0:
            return
        i, p = ctypes.c_int, ctypes.c_void_p
        self._check(
            self.lib.cublasGemmEx(
                self.handle, i(CUBLAS_OP_T), i(CUBLAS_OP_N), i(N), i(M), i(K), ctypes.byref(self.alpha),
                p(Bt.data.ptr), i(CUDA_R_16BF), i(K), p(A.data.ptr), i(CUDA_R_16BF), i(K), ctypes.byref(self.beta),
                p(C.data.ptr), i(CUDA_R_32F), i(N), i(CUBLAS_COMPUTE_32F), i(CUBLAS_GEMM_DEFAULT),
            ),
            "cublasGemmEx",
        )  # fmt: skip

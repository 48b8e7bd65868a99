// The weight-streaming product for decoding (issue 40, step 2 exploration): C = A · Wᵀ for M ≤ 16 tokens.
// A: M x K BF16, row-major; W: N x K BF16, row-major (an nn.Linear weight [out, in], as the race holds Bt);
// C: M x N FP32. At such M each weight byte is used M times, so the product is a stream of W from DRAM and the
// kernel's whole job is to keep enough of it in flight: each warp owns ROWS rows of W and walks K with one 16-byte
// load per row and lane per step (coalesced: a warp reads 512 contiguous bytes of each row), read once
// (ld.global.cs: evict first); the M rows of A (small, shared by every warp) come through the L1. The FP32
// partial sums of each (row, token) are reduced across the warp at the end. K must be a multiple of 8.
// The candidates that went further are the catalog's kernel files, built by tools/model/run.py with other defines:
// split-K inside a block (kernels/matmul_bf16/stream.cu), the tensor cores (stream_mma.cu), the read rate
// (kernels/memory/read_stream.cu).
#include <cstdint>

__device__ __forceinline__ void unpack(uint32_t x, float &lo, float &hi)
{
    lo = __uint_as_float(x << 16);
    hi = __uint_as_float(x & 0xffff0000u);
}

__device__ __forceinline__ void unpack8(uint4 v, float f[8])
{
    unpack(v.x, f[0], f[1]);
    unpack(v.y, f[2], f[3]);
    unpack(v.z, f[4], f[5]);
    unpack(v.w, f[6], f[7]);
}

// The weight rows n0 .. n0 + ROWS - 1 against the M rows of A over the steps k = first, first + step, ...: each step
// one 16-byte load per row (read once) and per token (through the L1), FP32 sums in acc.
template <int M, int ROWS>
__device__ __forceinline__ void walk(const uint16_t *__restrict__ A, const uint16_t *__restrict__ W, int N, int K,
                                     int n0, int first, int step, float (&acc)[ROWS][M])
{
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
            acc[r][m] = 0.0f;
        }
    }
#pragma unroll 2
    for (int k = first; k < K; k += step) {
        float w[ROWS][8];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const int n = n0 + r < N ? n0 + r : N - 1;  // a row past N reads the last row; its sum is not stored
            unpack8(__ldcs(reinterpret_cast<const uint4 *>(W + (size_t)n * K + k)), w[r]);
        }
#pragma unroll
        for (int m = 0; m < M; ++m) {
            float a[8];
            unpack8(__ldg(reinterpret_cast<const uint4 *>(A + (size_t)m * K + k)), a);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    acc[r][m] = fmaf(a[j], w[r][j], acc[r][m]);
                }
            }
        }
    }
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, off);
    }
    return v;
}

template <int M, int ROWS>
__device__ __forceinline__ void stream_rows(const uint16_t *__restrict__ A, const uint16_t *__restrict__ W,
                                            float *__restrict__ C, int N, int K)
{
    const int lane = threadIdx.x & 31;
    const int n0 = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * ROWS;
    if (n0 >= N) {
        return;
    }
    float acc[ROWS][M];
    walk<M, ROWS>(A, W, N, K, n0, lane * 8, 32 * 8, acc);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
            const float v = warp_sum(acc[r][m]);
            if (lane == 0 && n0 + r < N) {
                C[(size_t)m * N + n0 + r] = v;
            }
        }
    }
}

#define STREAM(M, ROWS)                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) stream_m##M##_r##ROWS(                                   \
        const uint16_t *__restrict__ A, const uint16_t *__restrict__ W, float *__restrict__ C, int N, int K)  \
    {                                                                                                          \
        stream_rows<M, ROWS>(A, W, C, N, K);                                                                   \
    }

STREAM(1, 4)
STREAM(1, 8)
STREAM(16, 2)
STREAM(16, 4)

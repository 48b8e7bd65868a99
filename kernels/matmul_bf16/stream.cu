// The weight stream for decoding (issue 40): C = A · Btᵀ for a few tokens, M ≤ MAX_M, on the CUDA cores.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major: an nn.Linear
// weight [out, in]). At M ≤ 8 each weight byte is used M times: the product is a stream of Bt from DRAM and its
// whole job is to keep enough of the stream in flight. Adds over the race's rungs (built for tiles of 128 tokens):
// (1) no tile of tokens: each block of WARPS warps owns ROWS rows of Bt and its warps take turns along K (split-K
// inside the block: warp w the 16-byte steps w, w + WARPS, ...), so that even a layer of 4096 rows has 8 x 4096
// warps, enough loads in flight to fill the DRAM's latency on 132 SMs; (2) each lane reads 16 bytes of each row
// per step, read once (ld.global.cs: evict first, the weight is not read again this step), a warp 512 contiguous
// bytes; (3) the M rows of A, small and read by every block, through the L1 (ld.global.nc); FP32 sums of each
// (row, token), reduced across the warp by shuffles and across the warps in shared memory.
// Counters it should move: dram__bytes_read.sum.per_second to the card's read rate (the DRAM bound of the shape);
// nothing else matters at M = 1. Where it comes from: the GEMV kernels of inference engines (split-K GEMV, as in
// FasterTransformer's and TensorRT-LLM's decoding kernels), and this project's exploration in tools/model/
// (data/checks/model-decode: a warp per rows reached 49-65% of the bound on the 4096- and 6144-row layers, split-K
// inside a block 82-96%). Shapes: M ≤ MAX_M (the model step, gpumm.run.layers.takes, gives it no larger M; rows of C
// past MAX_M would stay unwritten, as the checks' NaN poison shows), any N, K a multiple of 8 (16-byte loads).
#include <stdint.h>

#include "../need.cuh"
#include "geometry.cuh"
NEED(MAX_M); NEED(ROWS); NEED(WARPS);

BF16_GEOM(.rung = 0, .threads = WARPS * 32, .tma = 0);

__device__ __forceinline__ void unpack(uint32_t x, float &lo, float &hi)
{
    lo = __uint_as_float(x << 16);
    hi = __uint_as_float(x & 0xffff0000u);
}

__device__ __forceinline__ void unpack8(uint4 v, float (&f)[8])
{
    unpack(v.x, f[0], f[1]);
    unpack(v.y, f[2], f[3]);
    unpack(v.z, f[4], f[5]);
    unpack(v.w, f[6], f[7]);
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, off);
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    bf16_stream(const uint16_t *__restrict__ A, const uint16_t *__restrict__ Bt, float *__restrict__ C, int M, int N,
                int K)
{
    __shared__ float part[WARPS][ROWS][MAX_M];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n0 = blockIdx.x * ROWS;
    float acc[ROWS][MAX_M];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int m = 0; m < MAX_M; ++m) {
            acc[r][m] = 0.0f;
        }
    }
#pragma unroll 2
    for (int k = (warp * 32 + lane) * 8; k < K; k += WARPS * 32 * 8) {
        float w[ROWS][8];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const int n = n0 + r < N ? n0 + r : N - 1;  // a row past N reads the last row; its sum is not stored
            unpack8(__ldcs(reinterpret_cast<const uint4 *>(Bt + (size_t)n * K + k)), w[r]);
        }
#pragma unroll
        for (int m = 0; m < MAX_M; ++m) {
            if (m < M) {
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
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int m = 0; m < MAX_M; ++m) {
            const float v = warp_sum(acc[r][m]);
            if (lane == 0) {
                part[warp][r][m] = v;
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < ROWS * MAX_M; i += WARPS * 32) {
        const int r = i / MAX_M, m = i % MAX_M;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            v += part[w][r][m];
        }
        if (m < M && n0 + r < N) {
            C[(size_t)m * N + n0 + r] = v;
        }
    }
}

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
// PDL = 1 (bf16_stream_pdl; pdl.cuh): launched with programmatic dependent launch, every block lets the next launch
// start, asks for the first HOLD steps of each of its rows into registers (HOLD x 4 KiB of a row: all of a
// 4096-wide one), then waits for the kernel before, whose output the tokens are, and goes on as without: the next
// launch's blocks read their rows while this one's last blocks finish, as the weight read alone with PDL does
// (read_stream.cu's read_rows2_pdl). Counter it should move: the gap between two launches' DRAM reads. On an H200
// at one token, cold: QKV 77.9 -> 86.2-86.9% of the bound, the output layer 69.5 -> 79.5%, gate and up 94.2 ->
// 96.7-97.6%, down 87.8 -> 92.4%, the logits 99.2 -> 100.2-100.6% (`r2h2`, `r1h2`); PDL alone (no rows held) 1-4
// points, more steps held (holding down's seven, or 16 warps a block) lose (data/checks/model-decode-rows-hold-h200).
#include <stdint.h>

#include "../need.cuh"
#include "geometry.cuh"
#include "pdl.cuh"
NEED(MAX_M); NEED(ROWS); NEED(WARPS); NEED(HOLD);
static_assert(HOLD == 0 || PDL, "HOLD: the weight held in registers across the wait of a PDL launch");

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

// 16 bytes of the tokens: through the L1's read-only path (ld.global.nc) where they stay put for the whole launch;
// under PDL the kernel before writes them while this one starts, and ptxas moves ld.global.nc loads above
// griddepcontrol.wait (data/checks/model-decode-boundary-h200), so a coherent load (ld.global.ca) there
__device__ __forceinline__ uint4 token_load(const uint16_t *p)
{
#if PDL
    return __ldca(reinterpret_cast<const uint4 *>(p));
#else
    return __ldg(reinterpret_cast<const uint4 *>(p));
#endif
}

// the ROWS rows' 16 bytes at k into the FP32 sums of each (row, token)
template <int R>
__device__ __forceinline__ void fma_step(float (&acc)[R][MAX_M], const float (&w)[R][8], const uint16_t *A, int M,
                                         int K, int k)
{
#pragma unroll
    for (int m = 0; m < MAX_M; ++m) {
        if (m < M) {
            float a[8];
            unpack8(token_load(A + (size_t)m * K + k), a);
#pragma unroll
            for (int r = 0; r < R; ++r) {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    acc[r][m] = fmaf(a[j], w[r][j], acc[r][m]);
                }
            }
        }
    }
}

// a row of the weight past N reads the last row in its place; its sum is not stored
__device__ __forceinline__ int clamped_row(int n, int N) { return n < N ? n : N - 1; }

// 16 bytes of row n of the weight at k, read once (ld.global.cs: evict first)
__device__ __forceinline__ uint4 weight16(const uint16_t *Bt, int n, int K, int k)
{
    return __ldcs(reinterpret_cast<const uint4 *>(Bt + (size_t)n * K + k));
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
    constexpr int STEP = WARPS * 32 * 8;  // a block's step along K
    int k0 = (warp * 32 + lane) * 8;
    pdl_launch_dependents();  // PDL: the next launch may start once every block is here
    if (HOLD) {  // PDL: the first HOLD steps of the rows in registers before the wait (no kernel before writes them)
        uint4 held[HOLD ? HOLD : 1][ROWS];
#pragma unroll
        for (int h = 0; h < HOLD; ++h) {
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const int n = clamped_row(n0 + r, N), k = k0 + h * STEP;
                held[h][r] = k < K ? weight16(Bt, n, K, k) : make_uint4(0, 0, 0, 0);
                // used here, so asked for before the wait (else the compiler may sink the loads below it)
                asm volatile("" : "+r"(held[h][r].x), "+r"(held[h][r].y), "+r"(held[h][r].z), "+r"(held[h][r].w));
            }
        }
        pdl_wait();  // the tokens are the kernel before's output
#pragma unroll
        for (int h = 0; h < HOLD; ++h) {
            if (k0 + h * STEP < K) {
                float w[ROWS][8];
#pragma unroll
                for (int r = 0; r < ROWS; ++r) {
                    unpack8(held[h][r], w[r]);
                }
                fma_step(acc, w, A, M, K, k0 + h * STEP);
            }
        }
        k0 += HOLD * STEP;
    } else {
        pdl_wait();
    }
#pragma unroll 2
    for (int k = k0; k < K; k += STEP) {
        float w[ROWS][8];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            unpack8(weight16(Bt, clamped_row(n0 + r, N), K, k), w[r]);
        }
        fma_step(acc, w, A, M, K, k);
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

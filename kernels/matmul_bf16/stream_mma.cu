// The weight stream on the tensor cores (issue 40): C = A · Btᵀ for up to MAX_M tokens, mma.sync m16n8k16 with
// the weight as the 16-row operand.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major). Computed as
// Cᵀ = Bt · Aᵀ: each instruction takes 16 rows of the weight against 8 tokens, so M tokens cost M / 8 instructions
// and M / 8 loads of A per 16 rows and 32 steps of K, where the CUDA-core stream (stream.cu) loads A M times per
// row: at M = 16 those loads through the L1, not the DRAM, set its pace (20-51% of the bound in tools/model/).
// Adds over stream.cu: (1) the tensor cores' mma.sync (BF16 in, FP32 sums), fed straight from global memory
// without shared memory: the order of K inside a 32-wide chunk does not change the sum, so lane (g, t) loads 16
// contiguous bytes (k = 8t .. 8t + 7) of weight rows g and g + 8 and of token g, and the chunk's two instructions
// take their halves, where the instruction's layout names k = 2t, 2t + 1, 2t + 8, 2t + 9 (the same map for both
// operands, so the products pair up); (2) the block's WARPS warps take turns along K over its 16 rows, CHUNKS
// chunks of the weight in flight per lane, PIPE: the next CHUNKS chunks' loads issued before this batch's
// instructions; (3) L2_PREFETCH 128: each weight load asks the L2 for its whole 128-byte line (a warp reads 64
// contiguous bytes of each of 16 rows, half a line, the neighbouring warp the other half: fetched from the DRAM
// once, early; 2.5 to 5.4 points of the read rate at M = 16 on an H200, data/checks/model-decode-m16-h200).
// Counters it should move: dram__bytes_read.sum.per_second to the read rate at M = 16, where stream.cu is held
// by l1tex throughput (lg throttle). Where it comes from: the "swap A and B" of decoding GEMMs (TensorRT-LLM's
// and Marlin's small-batch kernels put the weight on the instruction's M side), the PTX ISA's m16n8k16 fragment
// layouts, and this project's exploration (tools/model/stream.cu, data/checks/model-decode).
// Shapes: M ≤ MAX_M (the model step, gpumm.run.layers.takes, gives it no larger M; rows of C past MAX_M would stay
// unwritten, as the checks' NaN poison shows), any N, K a multiple of 8 (16-byte loads).
#include <stdint.h>

#include "../need.cuh"
#include "geometry.cuh"
NEED(MAX_M); NEED(WARPS); NEED(CHUNKS); NEED(PIPE); NEED(L2_PREFETCH);
#define TILES (MAX_M / 8)  // tiles of 8 tokens
static_assert(MAX_M % 8 == 0, "MAX_M: tiles of 8 tokens");

BF16_GEOM(.rung = 0, .threads = WARPS * 32, .tma = 0);

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

static_assert(L2_PREFETCH == 0 || L2_PREFETCH == 128, "L2_PREFETCH: 0 or 128 bytes");

// 16 bytes of the weight, read once (evict first); L2_PREFETCH: the L2 fetches the whole 128-byte line
__device__ __forceinline__ uint4 weight_load(const uint16_t *p)
{
    if (L2_PREFETCH == 0) {
        return __ldcs(reinterpret_cast<const uint4 *>(p));
    }
    uint4 v;
    asm("ld.global.cs.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// CHUNKS chunks of weight rows g and g + 8 from step k, `stride` elements apart; zeros past K
__device__ __forceinline__ void load_rows(const uint16_t *w0, const uint16_t *w1, int k, int stride, int t, int K,
                                          uint4 (&wa)[CHUNKS], uint4 (&wb)[CHUNKS])
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < CHUNKS; ++u) {
        const int kk = k + u * stride;
        const bool in = kk + 8 * t < K;
        wa[u] = in ? weight_load(w0 + kk) : zero;
        wb[u] = in ? weight_load(w1 + kk) : zero;
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    bf16_stream_mma(const uint16_t *__restrict__ A, const uint16_t *__restrict__ Bt, float *__restrict__ C, int M,
                    int N, int K)
{
    __shared__ float part[WARPS][TILES * 8][16];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * 16;
    const uint16_t *w0 = Bt + (size_t)min(n0 + g, N - 1) * K + 8 * t;  // rows past N read the last; not stored
    const uint16_t *w1 = Bt + (size_t)min(n0 + g + 8, N - 1) * K + 8 * t;
    const uint16_t *a[TILES];
    bool live[TILES];  // token j * 8 + g exists (else its operand is zeros)
#pragma unroll
    for (int j = 0; j < TILES; ++j) {
        live[j] = j * 8 + g < M;
        a[j] = A + (size_t)min(j * 8 + g, M - 1) * K + 8 * t;
    }
    float acc[TILES][4];
#pragma unroll
    for (int j = 0; j < TILES; ++j) {
        acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    }
    const uint4 zero = make_uint4(0, 0, 0, 0);
    constexpr int STRIDE = WARPS * 32;
    uint4 wa[CHUNKS], wb[CHUNKS];
    if (PIPE) {
        load_rows(w0, w1, warp * 32, STRIDE, t, K, wa, wb);
    }
    for (int k = warp * 32; k < K; k += STRIDE * CHUNKS) {
        uint4 na[CHUNKS], nb[CHUNKS];
        if (PIPE) {
            load_rows(w0, w1, k + STRIDE * CHUNKS, STRIDE, t, K, na, nb);
        } else {
            load_rows(w0, w1, k, STRIDE, t, K, wa, wb);
        }
#pragma unroll
        for (int u = 0; u < CHUNKS; ++u) {
            const int kk = k + u * STRIDE;
            const bool in = kk + 8 * t < K;
#pragma unroll
            for (int j = 0; j < TILES; ++j) {
                const uint4 x = in && live[j] ? __ldg(reinterpret_cast<const uint4 *>(a[j] + kk)) : zero;
                mma16816(acc[j], wa[u].x, wb[u].x, wa[u].y, wb[u].y, x.x, x.y);
                mma16816(acc[j], wa[u].z, wb[u].z, wa[u].w, wb[u].w, x.z, x.w);
            }
        }
        if (PIPE) {
#pragma unroll
            for (int u = 0; u < CHUNKS; ++u) {
                wa[u] = na[u];
                wb[u] = nb[u];
            }
        }
    }
    // acc[j]: (row g, tokens j * 8 + 2t and 2t + 1), then (row g + 8, the same tokens)
#pragma unroll
    for (int j = 0; j < TILES; ++j) {
        part[warp][j * 8 + 2 * t][g] = acc[j][0];
        part[warp][j * 8 + 2 * t + 1][g] = acc[j][1];
        part[warp][j * 8 + 2 * t][g + 8] = acc[j][2];
        part[warp][j * 8 + 2 * t + 1][g + 8] = acc[j][3];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < TILES * 8 * 16; i += WARPS * 32) {
        const int m = i >> 4, r = i & 15;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            v += part[w][m][r];
        }
        if (m < M && n0 + r < N) {
            C[(size_t)m * N + n0 + r] = v;
        }
    }
}

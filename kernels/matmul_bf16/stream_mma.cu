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
// operands, so the products pair up); (2) the block's WARPS warps take turns along K over its 16 x RTILES rows,
// CHUNKS chunks of the weight in flight per lane, PIPE: the next CHUNKS chunks' loads issued before this batch's
// instructions; (3) RTILES tiles of 16 weight rows per warp share each load of the tokens (RTILES = 1: the
// tokens loaded once per 16 rows, as many bytes through the L1 as the weight's at M = 16; 2: half as many, and
// twice the weight's loads in flight per lane, as two rows a block do for stream.cu).
// Counters it should move: dram__bytes_read.sum.per_second to the read rate at M = 16, where stream.cu is held
// by l1tex throughput (lg throttle). Where it comes from: the "swap A and B" of decoding GEMMs (TensorRT-LLM's
// and Marlin's small-batch kernels put the weight on the instruction's M side), the PTX ISA's m16n8k16 fragment
// layouts, and this project's exploration (tools/model/stream.cu, data/checks/model-decode).
// Shapes: M ≤ MAX_M (the model step, gpumm.run.layers.takes, gives it no larger M; rows of C past MAX_M would stay
// unwritten, as the checks' NaN poison shows), any N, K a multiple of 8 (16-byte loads).
#include <stdint.h>

#include "../need.cuh"
#include "geometry.cuh"
NEED(MAX_M); NEED(WARPS); NEED(CHUNKS); NEED(PIPE); NEED(RTILES); NEED(CONTIG); NEED(L2_PREFETCH); NEED(L1_KEEP);
#define TILES (MAX_M / 8)    // tiles of 8 tokens
#define ROWS (16 * RTILES)  // weight rows a block
#define ROWS_LOG2 (4 + (RTILES > 1) + (RTILES > 2))
static_assert(RTILES == 1 || RTILES == 2 || RTILES == 4, "RTILES: 1, 2 or 4 tiles of 16 rows");
static_assert(L2_PREFETCH == 0 || L2_PREFETCH == 128 || L2_PREFETCH == 256, "L2_PREFETCH: 0, 128 or 256 bytes");

// 16 bytes of the weight, read once (evict first); L2_PREFETCH: the L2 fetches that many bytes around them;
// L1_KEEP: not kept in the L1 at all, which keeps the tokens there
__device__ __forceinline__ uint4 weight_load(const uint16_t *p)
{
    if (L2_PREFETCH == 0 && !L1_KEEP) {
        return __ldcs(reinterpret_cast<const uint4 *>(p));
    }
    uint4 v;
    if (L1_KEEP && L2_PREFETCH == 128) {
        asm("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    } else if (L1_KEEP) {
        asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    } else if (L2_PREFETCH == 128) {
        asm("ld.global.cs.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else {
        asm("ld.global.cs.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    }
    return v;
}
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

// 16 bytes of the tokens, read by every block (L1_KEEP: the last the L1 evicts)
__device__ __forceinline__ uint4 token_load(const uint16_t *p)
{
    if (!L1_KEEP) {
        return __ldg(reinterpret_cast<const uint4 *>(p));
    }
    uint4 v;
    asm("ld.global.nc.L1::evict_last.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// CHUNKS chunks of weight rows g and g + 8 of each tile from step k, `stride` elements apart; zeros past K
__device__ __forceinline__ void load_rows(const uint16_t *(&w0)[RTILES], const uint16_t *(&w1)[RTILES],
                                          int k, int stride, int t, int K, uint4 (&wa)[RTILES][CHUNKS],
                                          uint4 (&wb)[RTILES][CHUNKS])
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < CHUNKS; ++u) {
        const int kk = k + u * stride;
        const bool in = kk + 8 * t < K;
#pragma unroll
        for (int r = 0; r < RTILES; ++r) {
            wa[r][u] = in ? weight_load(w0[r] + kk) : zero;
            wb[r][u] = in ? weight_load(w1[r] + kk) : zero;
        }
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    bf16_stream_mma(const uint16_t *__restrict__ A, const uint16_t *__restrict__ Bt, float *__restrict__ C, int M,
                    int N, int K)
{
    __shared__ float part[WARPS][TILES * 8][ROWS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * ROWS;
    const uint16_t *w0[RTILES], *w1[RTILES];  // rows past N read the last; not stored
#pragma unroll
    for (int r = 0; r < RTILES; ++r) {
        w0[r] = Bt + (size_t)min(n0 + 16 * r + g, N - 1) * K + 8 * t;
        w1[r] = Bt + (size_t)min(n0 + 16 * r + g + 8, N - 1) * K + 8 * t;
    }
    const uint16_t *a[TILES];
    bool live[TILES];  // token j * 8 + g exists (else its operand is zeros)
#pragma unroll
    for (int j = 0; j < TILES; ++j) {
        live[j] = j * 8 + g < M;
        a[j] = A + (size_t)min(j * 8 + g, M - 1) * K + 8 * t;
    }
    float acc[RTILES][TILES][4];
#pragma unroll
    for (int r = 0; r < RTILES; ++r) {
#pragma unroll
        for (int j = 0; j < TILES; ++j) {
            acc[r][j][0] = acc[r][j][1] = acc[r][j][2] = acc[r][j][3] = 0.0f;
        }
    }
    const uint4 zero = make_uint4(0, 0, 0, 0);
    constexpr int STRIDE = WARPS * 32;
    // CONTIG: a warp's CHUNKS chunks side by side along K (64 x CHUNKS bytes of each row); else WARPS chunks apart
    constexpr int STEP = CONTIG ? 32 : STRIDE;
    const int first = CONTIG ? warp * 32 * CHUNKS : warp * 32;
    uint4 wa[RTILES][CHUNKS], wb[RTILES][CHUNKS];
    if (PIPE) {
        load_rows(w0, w1, first, STEP, t, K, wa, wb);
    }
    for (int k = first; k < K; k += STRIDE * CHUNKS) {
        uint4 na[RTILES][CHUNKS], nb[RTILES][CHUNKS];
        if (PIPE) {
            load_rows(w0, w1, k + STRIDE * CHUNKS, STEP, t, K, na, nb);
        } else {
            load_rows(w0, w1, k, STEP, t, K, wa, wb);
        }
#pragma unroll
        for (int u = 0; u < CHUNKS; ++u) {
            const int kk = k + u * STEP;
            const bool in = kk + 8 * t < K;
#pragma unroll
            for (int j = 0; j < TILES; ++j) {
                const uint4 x = in && live[j] ? token_load(a[j] + kk) : zero;
#pragma unroll
                for (int r = 0; r < RTILES; ++r) {
                    mma16816(acc[r][j], wa[r][u].x, wb[r][u].x, wa[r][u].y, wb[r][u].y, x.x, x.y);
                    mma16816(acc[r][j], wa[r][u].z, wb[r][u].z, wa[r][u].w, wb[r][u].w, x.z, x.w);
                }
            }
        }
        if (PIPE) {
#pragma unroll
            for (int u = 0; u < CHUNKS; ++u) {
#pragma unroll
                for (int r = 0; r < RTILES; ++r) {
                    wa[r][u] = na[r][u];
                    wb[r][u] = nb[r][u];
                }
            }
        }
    }
    // acc[r][j]: (row 16r + g, tokens j * 8 + 2t and 2t + 1), then (row 16r + g + 8, the same tokens)
#pragma unroll
    for (int r = 0; r < RTILES; ++r) {
#pragma unroll
        for (int j = 0; j < TILES; ++j) {
            part[warp][j * 8 + 2 * t][16 * r + g] = acc[r][j][0];
            part[warp][j * 8 + 2 * t + 1][16 * r + g] = acc[r][j][1];
            part[warp][j * 8 + 2 * t][16 * r + g + 8] = acc[r][j][2];
            part[warp][j * 8 + 2 * t + 1][16 * r + g + 8] = acc[r][j][3];
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < TILES * 8 * ROWS; i += WARPS * 32) {
        const int m = i >> ROWS_LOG2, r = i & (ROWS - 1);
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

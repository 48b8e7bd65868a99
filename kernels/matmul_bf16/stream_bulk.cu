// The weight stream through the TMA's bulk copies (issue 40): C = A · Btᵀ for up to MAX_M tokens, the weight
// copied into shared memory by cp.async.bulk and multiplied there by mma.sync with the weight as the 16-row operand.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major). A block owns
// 16 rows of the weight; one producer thread copies them and the tokens' rows in stages of KC elements a row (one
// bulk copy a row: 16 of the weight, one a token, completing on the stage's mbarrier), STAGES stages in flight;
// WARPS consumer warps take the stage's 32-wide chunks in turn and multiply them as stream_mma.cu does (lane (g, t)
// takes k = 8t .. 8t + 7 of weight rows g and g + 8 and of token g, the chunk's two instructions their halves),
// both operands from shared memory, then free the stage.
// Adds over stream_mma.cu (each lane loads its weight chunks into registers, CHUNKS at a time, and its tokens'
// through the L1): the loads in flight no longer live in registers, and no consumer waits on a global load. A
// block keeps STAGES x 16 x KC x 2 bytes of the weight in flight (32 KiB at KC = 256 and 4 stages), issued by one
// thread as whole row segments, where the register stream keeps 2 x CHUNKS x 16 bytes a lane.
// Counters it should move: dram__bytes_read.sum.per_second toward the weight read alone (gpumm.run.reads.ceiling)
// at M = 16, where stream_mma.cu stays 8 to 13 points under it on the H100 (data/checks/model-decode-ceiling-h100);
// with the tokens through the L1 (the first version of this file) consumers waited on them: 34-63% of the bound.
// Where it comes from: the PTX ISA's cp.async.bulk (non-tensor bulk copies) and mbarrier transaction counts; the
// producer and consumer stages of this ladder's Hopper rungs (warpspec.cu, pipeline.cuh); the "swap A and B" of
// decoding GEMMs (stream_mma.cu).
// Shapes: M ≤ MAX_M (the model step gives it no larger M), any N (rows past N read the last row and are not
// stored), K a multiple of 8 (bulk copies of 16-byte multiples from 16-byte aligned rows).
#include <stdint.h>

#include "../need.cuh"
#include "geometry.cuh"
#include "hopper.cuh"
NEED(MAX_M); NEED(WARPS); NEED(KC); NEED(STAGES);
#define TILES (MAX_M / 8)  // tiles of 8 tokens
static_assert(MAX_M % 8 == 0, "MAX_M: tiles of 8 tokens");
static_assert(KC % 32 == 0, "KC: whole 32-wide chunks");

constexpr int ROWB = KC * 2 + 64;  // a row of a stage in shared memory, bytes: 64 more, so rows start on other banks
constexpr int STAGE_BYTES = (16 + MAX_M) * ROWB;  // 16 weight rows, then MAX_M tokens' rows
constexpr int PART_BYTES = WARPS * MAX_M * 16 * 4;  // the consumers' partial sums
constexpr int SMEM = STAGES * STAGE_BYTES + PART_BYTES + 2 * STAGES * 8;

BF16_GEOM(.rung = 0, .stages = STAGES, .threads = (WARPS + 1) * 32, .smem = SMEM, .tma = 0);

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// `bytes` from global `src` to shared `dst`, completing on mbarrier `bar` (a block is its own cluster of one)
__device__ __forceinline__ void bulk_load(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

extern "C" __global__ void __launch_bounds__((WARPS + 1) * 32)
    bf16_stream_bulk(const uint16_t *__restrict__ A, const uint16_t *__restrict__ Bt, float *__restrict__ C, int M,
                     int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem[];
    float(*part)[MAX_M][16] = reinterpret_cast<float(*)[MAX_M][16]>(smem + STAGES * STAGE_BYTES);
    const uint32_t bars = smem_u32(smem + STAGES * STAGE_BYTES + PART_BYTES);  // full[STAGES], then empty[STAGES]
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * 16;
    const int steps = (K + KC - 1) / KC;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bars + 8 * s, 1);                 // full: the producer's arrival and the copies' bytes
            mbar_init(bars + 8 * (STAGES + s), WARPS);  // empty: one arrival a consumer warp
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (warp == WARPS) {  // the producer: one thread issues every copy
        if (lane == 0) {
            for (int i = 0; i < steps; ++i) {
                const int slot = i % STAGES, phase = (i / STAGES) & 1;
                const int k0 = i * KC;
                const uint32_t bytes = 2u * (uint32_t)min(KC, K - k0);
                mbar_wait(bars + 8 * (STAGES + slot), phase ^ 1);  // its consumers are done with it
                const uint32_t full = bars + 8 * slot;
                const int tokens = min(M, MAX_M);
                mbar_expect_tx(full, (16 + tokens) * bytes);
                const uint32_t dst = smem_u32(smem + slot * STAGE_BYTES);
                for (int r = 0; r < 16; ++r) {
                    bulk_load(dst + r * ROWB, Bt + (size_t)min(n0 + r, N - 1) * K + k0, bytes, full);
                }
                for (int m = 0; m < tokens; ++m) {
                    bulk_load(dst + (16 + m) * ROWB, A + (size_t)m * K + k0, bytes, full);
                }
            }
        }
    } else {  // the consumers
        bool live[TILES];  // token j * 8 + g exists (else its operand is zeros: its row of the stage is not copied)
#pragma unroll
        for (int j = 0; j < TILES; ++j) {
            live[j] = j * 8 + g < M;
        }
        float acc[TILES][4];
#pragma unroll
        for (int j = 0; j < TILES; ++j) {
            acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
        }
        const uint4 zero = make_uint4(0, 0, 0, 0);
        for (int i = 0; i < steps; ++i) {
            const int slot = i % STAGES, phase = (i / STAGES) & 1;
            const int k0 = i * KC;
            mbar_wait(bars + 8 * slot, phase);
            const unsigned char *stage = smem + slot * STAGE_BYTES;
#pragma unroll
            for (int c = warp; c < KC / 32; c += WARPS) {
                const int kk = c * 32 + 8 * t;  // in the stage
                const bool in = k0 + kk < K;    // zeros past K: the last stage's copies end there
                const uint4 wa = in ? *reinterpret_cast<const uint4 *>(stage + g * ROWB + 2 * kk) : zero;
                const uint4 wb = in ? *reinterpret_cast<const uint4 *>(stage + (g + 8) * ROWB + 2 * kk) : zero;
#pragma unroll
                for (int j = 0; j < TILES; ++j) {
                    const unsigned char *row = stage + (16 + j * 8 + g) * ROWB + 2 * kk;
                    const uint4 x = in && live[j] ? *reinterpret_cast<const uint4 *>(row) : zero;
                    mma16816(acc[j], wa.x, wb.x, wa.y, wb.y, x.x, x.y);
                    mma16816(acc[j], wa.z, wb.z, wa.w, wb.w, x.z, x.w);
                }
            }
            __syncwarp();
            if (lane == 0) {
                mbar_arrive(bars + 8 * (STAGES + slot));
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
    }
    __syncthreads();
    for (int i = threadIdx.x; i < MAX_M * 16; i += (WARPS + 1) * 32) {
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

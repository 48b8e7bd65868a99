// What the TMA's weight stream keeps apart from its kernel (stream_tma.cu; stream_sk.cu shared it while it was
// explored): the stage (KSUB boxes of the weight's 64 rows and of the 16 tokens, side by side along K), its load by
// one producer thread with the weight's boxes evict first in the L2, its wgmmas, and the store of a block's 64
// rows x 16 tokens from the accumulators. Not a kernel.
#pragma once
#include "../need.cuh"
#include "geometry.cuh"
#include "pipeline.cuh"

NEED(MAX_M); NEED(STAGES); NEED(KSUB); NEED(PDL_L2);
static_assert(MAX_M == 16, "MAX_M: the tokens are wgmma's N side of 16");
#define ROWS 64           // weight rows a block: one consumer warpgroup
#define THREADS (128 + 32)  // the consumer warpgroup, then the producer's warp
#define KS (BK * KSUB)    // a stage's depth along K: KSUB boxes of 64 side by side
// the stages: the tokens as the A tile, the weight as the B tile; box j of a stage at j x its box's bytes
using Smem = Stages<16 * KSUB, ROWS * KSUB, STAGES>;

// box j of stage s (columns k0 + 64 j on): the tokens' (16 rows, zeros past M), and the weight's rows n0.. with the
// L2 `policy` (l2_evict_first: read once this step, as the CUDA-core streams' ld.global.cs, so that the tokens and
// the next layer's reads keep their lines; 0.9 to 3.0 points of the DRAM bound at 16 tokens on an H200,
// data/checks/model-decode-evict-h200), each completing on `bar`
__device__ __forceinline__ void token_box(const Smem &sm, int s, int j, uint32_t bar, const CUtensorMap *tmA, int k0)
{
    tma_load(sm.a_at(s) + j * 16 * 128, tmA, bar, k0 + j * BK, 0);
}

__device__ __forceinline__ void weight_box(const Smem &sm, int s, int j, uint32_t bar, const CUtensorMap *tmW, int k0,
                                           int n0, uint64_t policy)
{
    tma_load_hint(sm.b_at(s) + j * ROWS * 128, tmW, bar, k0 + j * BK, n0, policy);
}

// stage s: the KSUB boxes of the tokens and of the weight from column k0 on, each token box before its weight box
__device__ __forceinline__ void load_stage(const Smem &sm, int s, uint32_t bar, const CUtensorMap *tmA,
                                           const CUtensorMap *tmW, int k0, int n0, uint64_t policy)
{
#pragma unroll
    for (int j = 0; j < KSUB; ++j) {
        token_box(sm, s, j, bar, tmA, k0);
        weight_box(sm, s, j, bar, tmW, k0, n0, policy);
    }
}

// load_stage's two halves, for a producer that loads the first stages' weight before it may read the tokens
// (PDL, stream_tma.cu): the weight's boxes of stage s, and the tokens'
__device__ __forceinline__ void load_weight(const Smem &sm, int s, uint32_t bar, const CUtensorMap *tmW, int k0,
                                            int n0, uint64_t policy)
{
#pragma unroll
    for (int j = 0; j < KSUB; ++j) {
        weight_box(sm, s, j, bar, tmW, k0, n0, policy);
    }
}

__device__ __forceinline__ void load_tokens(const Smem &sm, int s, uint32_t bar, const CUtensorMap *tmA, int k0)
{
#pragma unroll
    for (int j = 0; j < KSUB; ++j) {
        token_box(sm, s, j, bar, tmA, k0);
    }
}

// the weight's boxes of stage s asked of the L2 (no shared memory, no barrier): for PDL_L2 stages past those in
// flight while a PDL build waits for the kernel before (stream_tma.cu)
__device__ __forceinline__ void prefetch_weight(const CUtensorMap *tmW, int k0, int n0)
{
#pragma unroll
    for (int j = 0; j < KSUB; ++j) {
        asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"((uint64_t)tmW),
                     "r"(k0 + j * BK), "r"(n0)
                     : "memory");
    }
}

// stage s's wgmmas: the weight's box as wgmma's A (64 rows), the tokens' as its B (N = 16); `first`: D = A * B
__device__ __forceinline__ void mma_stage(float (&d)[8], const Smem &sm, int s, bool first)
{
#pragma unroll
    for (int j = 0; j < KSUB; ++j) {
        mma_ktile<16>(d, sm.b_at(s) + j * ROWS * 128, sm.a_at(s) + j * 16 * 128, first && j == 0);
    }
}

// C's values from d (consumer thread tid): d[4j + 2h + e] is weight row 16 w + g + 8h of the block's 64 from n0,
// token 8j + 2t + e (lane = 4g + t, warp w)
__device__ __forceinline__ void store_rows(const float (&d)[8], float *C, int M, int N, int n0, int tid)
{
    const int lane = tid % 32, n = n0 + 16 * (tid / 32) + (lane >> 2), m = 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = n + 8 * ((i >> 1) & 1), tok = m + 8 * (i >> 2) + (i & 1);
        if (tok < M && row < N) {
            C[(size_t)tok * N + row] = d[i];
        }
    }
}

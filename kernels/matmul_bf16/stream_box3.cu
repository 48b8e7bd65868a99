// The TMA's weight stream with one copy a stage (issue 40): C = A · Btᵀ for up to 16 tokens, each stage's KSUB
// k-tiles of the weight (and of the tokens) asked for by one 3-D TMA box.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major), as
// stream_tma.cu computes it (a block per 64 weight rows on wgmma m64n16k16's M side, the tokens on its N side, one
// producer thread keeping STAGES stages of KSUB k-tiles in flight, the weight evict first in the L2).
// Adds over stream_tma.cu (2 x KSUB copies a stage, a 2-D box of 64 rows x 64 columns each, and the tokens' 16 x 64):
// the launcher also passes 3-D maps of A and Bt that view them as (64 columns, rows, k-tiles), and a stage is one
// box of each, 64 (16) rows x KSUB k-tiles, landing in shared memory as the KSUB 2-D boxes would. In one H200 call
// the boxes cut smaller lost in step with their count (data/checks/model-decode-boxes-h200: 8-row boxes, 36
// copies a stage, read down at 43.7% of the DRAM bound at 16 tokens against 86.8% with 8 copies), so the copy
// count, not the bytes, may be what holds the stream under the weight read alone. Counter it should move:
// dram__bytes_read.sum.per_second toward the read alone's on down and on gate and up. The last stage, where K
// leaves fewer than KSUB whole k-tiles, is loaded box by box through the 2-D maps (zeros past K).
// Where it comes from: the PTX ISA's cp.async.bulk.tensor.3d and the driver's tiled tensor maps of up to 5
// dimensions with any 16-byte-multiple strides (CUTLASS's TMA copies of multi-mode tiles). sm_90a.
// Shapes: M ≤ 16, any N, K a multiple of 8 (the TMA's row pitch); edges zero-filled by the TMA.
#include "stream_tma.cuh"

static_assert(BOXR == ROWS, "one box a stage: the weight's box is the block's 64 rows");

BF16_GEOM(.rung = 0, .bm = 16, .bn = ROWS, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = 1, .abox = 16, .bbox = ROWS, .tma = 1, .box3 = KSUB);

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_stream_box3(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                     const __grid_constant__ CUtensorMap tmA3, const __grid_constant__ CUtensorMap tmW3,
                     float *__restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, n0 = blockIdx.x * ROWS;
    const int nk = (K + KS - 1) / KS, whole = K / BK;  // stages; whole k-tiles

    if (tid == 0) {
        tma_prefetch_map(&tmA3);
        tma_prefetch_map(&tmW3);
    }
    sm.init(&tmA, &tmW, 4);  // a stage is free once each of the 4 consumer warps has released it
    __syncthreads();

    // warp-uniform where the compiler can see it: a divergent branch around wgmma would serialise them (ptxas C7518)
    if (__shfl_sync(0xffffffffu, tid / 128, 0) == 1) {  // the producer's warp: one thread issues the copies
        if (tid == 128) {
            Ring<STAGES> ring;
            const uint64_t policy = l2_evict_first();
            produce(ring, sm.full, sm.empty, nk, Smem::TX, [&](int s, uint32_t bar, int k) {
                const int t0 = (k / BK) * KSUB;  // the stage's first k-tile (produce counts k in steps of BK)
                if (t0 + KSUB <= whole) {
                    tma_load3(sm.a_at(s), &tmA3, bar, 0, 0, t0);
                    tma_load3_hint(sm.b_at(s), &tmW3, bar, 0, n0, t0, policy);
                } else {
                    load_stage(sm, s, bar, &tmA, &tmW, t0 * BK, n0, policy);
                }
            });
        }
        return;
    }
    float d[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        d[i] = 0.f;
    }
    const Release<1> release{sm.empty};
    Ring<STAGES> ring;
    int prev = 0;
    consume(ring, prev, sm.full, nk, [&](int s, int kt) { mma_stage(d, sm, s, kt == 0); }, release);
    wg_wait<0>();  // the last group done (its stage need not be freed: no copy comes after it)
    fence_acc(d);
    store_rows(d, C, M, N, n0, tid);
}

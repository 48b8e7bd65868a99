// The weight stream through the TMA and wgmma (issue 40): C = A · Btᵀ for up to 16 tokens, the weight as wgmma's
// 64-row operand, deep stages of a few rows.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major). Computed as
// Cᵀ = Bt · Aᵀ: a block owns 64 weight rows, and one consumer warpgroup multiplies them with wgmma m64n16k16 (the
// weight's 64 rows on the instruction's M side, the 16 tokens on its N side) along all of K.
// Adds over stream_mma.cu (mma.sync fed from registers: at 16 tokens 8 to 16 points under the weight read alone on
// down, QKV and the output layer, data/checks/model-decode-m16-h200): one producer thread keeps STAGES stages in flight
// through the TMA, on mbarriers, each KSUB boxes of the weight (64 rows x 64 columns, side by side along K: KSUB x 128
// contiguous bytes of each row) and the same of the tokens (16 x 64, zeros past M); the consumers free a stage as soon
// as their wgmma has read it. One block an SM holds 128 to 160 KiB of the weight in flight (160 to 200 KiB with the
// tokens'), where warps hold what their registers take. Counters it should move: dram__bytes_read.sum.per_second toward
// the weight read alone's on the layers of few rows (down: 64 blocks; the output layer), with 5 warps resident.
// Explored (data/checks/model-decode-tma-h200): one box a stage, 128 and 256 rows a block, two or three blocks an SM,
// and K split across a cluster's blocks with the partial sums added through distributed shared memory all lose to this
// shape; an L2 evict-first hint on the weight's boxes (stream_tma.cuh) gains 0.9 to 3.0 points of the bound at 16
// tokens, and a Stream-K split of the stages over every SM loses on down, QKV and the output layer
// (data/checks/model-decode-evict-h200); the tokens' boxes multicast to a cluster of 2 or 4 blocks lose about 3 points
// on every layer (data/checks/model-decode-mc-h200); the weight in boxes of 8 to 32 rows loses in step with the copies'
// count, and one 3-D box of the weight and one of the tokens a stage are level with these 8 copies
// (data/checks/model-decode-boxes-h200); the next stages' weight prefetched into the L2 ahead of the loads loses 5 to
// 26 points (data/checks/model-decode-l2pf-h200). The tensor maps have the L2 fetch 128 bytes for a miss (`.l2_fetch`:
// a box row's width) in place of the launcher's 256: 4.6 points of the bound on gate and up and 4.2 on the logits at 16
// tokens, 2.0 on down (data/checks/model-decode-promotion-h200). Where it comes from: cuBLAS's own choice at these
// shapes (Nsight Compute names nvjet_sm90_tss_128x16, TMA-fed, at 14% occupancy, data/checks/model-decode-m16-h200),
// the "swap A and B" of decoding GEMMs, and this ladder's TMA pipeline (pipeline.cuh, rung 3 on). sm_90a.
// Shapes: M ≤ 16 (rows of C past 16 would stay unwritten, as the checks' NaN poison shows; the model step gives it
// no more, gpumm.run.layers.takes), any N, K a multiple of 8 (the TMA's row pitch); edges zero-filled by the TMA.
// PDL = 1 (bf16_stream_tma_pdl; pdl.cuh): launched with programmatic dependent launch, the producer loads the first
// STAGES stages' weight (and asks the L2 for the next PDL_L2 stages' where the tune says), waits for the kernel
// before, then loads their tokens and goes on as without; the consumers wait too before they store C. Counter it
// should move: the gap between two launches' DRAM reads (a layer's time per launch in a CUDA graph of launches
// toward its bytes over the read rate). On an H200 at 16 tokens, cold: gate and up 91.6 -> 94.4% of the bound, down
// 87.6 -> 90.6%, the logits 97.5 -> 98.3%, QKV 77.6 -> 83.2%, the output layer 74.1 -> 76.3%; four stages asked of
// the L2 add 1.3 points on down and 2.6 on the output layer and cost 1 to 7 elsewhere, eight or more cost on every
// layer but down (data/checks/model-decode-pdl-h200).
#include "pdl.cuh"
#include "stream_tma.cuh"

BF16_GEOM(.rung = 0, .bm = 16, .bn = ROWS, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = 1, .abox = 16, .bbox = ROWS, .tma = 1, .l2_fetch = 128);

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_stream_tma(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                    float *__restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, n0 = blockIdx.x * ROWS;
    const int nk = (K + KS - 1) / KS;  // stages

    pdl_launch_dependents();  // the next launch may start once every block is here
    sm.init(&tmA, &tmW, 4);  // a stage is free once each of the 4 consumer warps has released it
    __syncthreads();

    // warp-uniform where the compiler can see it: a divergent branch around wgmma would serialise them (ptxas C7518)
    if (__shfl_sync(0xffffffffu, tid / 128, 0) == 1) {  // the producer's warp: one thread issues the copies
        if (tid == 128) {
            Ring<STAGES> ring;
            const uint64_t policy = l2_evict_first();
            int first = 0;  // stages loaded before produce
#if PDL
            first = nk < STAGES ? nk : STAGES;  // fresh stages: no wait for a consumer
            for (int s = 0; s < first; ++s) {
                mbar_expect_tx(sm.full + 8 * s, Smem::TX);
                load_weight(sm, s, sm.full + 8 * s, &tmW, s * KS, n0, policy);
            }
            for (int s = first; s < nk && s < first + PDL_L2; ++s) {
                prefetch_weight(&tmW, s * KS, n0);
            }
            pdl_wait();  // the tokens are the kernel before's output
            for (int s = 0; s < first; ++s) {
                load_tokens(sm, s, sm.full + 8 * s, &tmA, s * KS);
                ring.next();
            }
#endif
            produce(ring, sm.full, sm.empty, nk - first, Smem::TX, [&](int s, uint32_t bar, int k) {
                load_stage(sm, s, bar, &tmA, &tmW, (k / BK + first) * KS, n0, policy);  // produce counts k by BK
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
    pdl_wait();  // C may be what the kernel before reads
    store_rows(d, C, M, N, n0, tid);
}

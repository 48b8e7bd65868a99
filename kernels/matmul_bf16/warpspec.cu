// Rung 4 of the BF16 ladder: warp specialization. A producer warpgroup (one thread of it) issues the TMA copies,
// NCONS consumer warpgroups issue wgmma; they hand the STAGES shared stages back and forth through two mbarriers
// per stage (full: the TMA's bytes have landed; empty: every consumer warp is done reading it). setmaxnreg moves
// registers from the producer (down to 40) to the consumers (up to 232). sm_90a.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major).
// Block tile BM x BN, BM = 64 * NCONS (each consumer warpgroup m64 x BN), BK = 64, one tile per CTA.
// Adds over rung 3 (wgmma_tma): no CTA-wide barrier in the main loop and no wgmma waited to completion before
// the next is issued: a consumer keeps one k-tile's wgmma group in flight (wgmma.wait_group 1) and frees the
// stage of the previous one, while the producer refills any freed stage at once; the loads never wait for the
// math of other warps, the math never waits for the issue of loads. Counters it should move: tensor pipe
// utilisation up; warp stalls on barriers (stall_barrier) and on the mbarrier waits (long scoreboard / wait)
// down. Where the idea comes from: CUTLASS 3's "KernelTmaWarpSpecialized" (producer/consumer warpgroups,
// PipelineTmaAsync, setmaxnreg register reconfiguration) and the "Outperforming cuBLAS on H100" worklog.
// Shapes: any M, N >= 1; K a multiple of 8 (TMA row pitch); edges zero-filled by the TMA.
#include "../need.cuh"
#include "geometry.cuh"
#include "pipeline.cuh"

NEED(NCONS); NEED(BN); NEED(STAGES);
#define BM (64 * NCONS)
#define THREADS (128 * (NCONS + 1))
using Smem = Stages<BM, BN, STAGES>;
static_assert(BN % 64 == 0 && BN <= 256 && NCONS >= 1 && NCONS <= 3, "tile shape");

BF16_GEOM(.rung = 4, .bm = BM, .bn = BN, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = 1, .abox = BM, .bbox = BN, .tma = 1);

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, float *__restrict__ C,
              int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, wg = tid / 128;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int nk = (K + BK - 1) / BK;

    sm.init(&tmA, &tmB, 4 * NCONS);  // a stage is empty when lane 0 of every consumer warp has released it
    __syncthreads();

    Ring<STAGES> ring;
    if (wg == 0) {  // producer: one thread issues every copy
        reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            produce(ring, sm.full, sm.empty, nk, Smem::TX, [&](int s, uint32_t bar, int k) {
                tma_load(sm.a_at(s), &tmA, bar, k, m0);
                tma_load(sm.b_at(s), &tmB, bar, k, n0);
            });
        }
    } else {  // consumers: warpgroup c computes rows 64c..64c+63 of the tile
        reg_alloc<CONSUMER_REGS>();
        const int c = wg - 1;
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) {
            d[i] = 0.f;
        }
        int prev = 0;
        consume(
            ring, prev, sm.full, nk,
            [&](int s, int) { mma_ktile<BN>(d, sm.a_at(s) + c * 64 * 128, sm.b_at(s), false); },
            Release<1>{sm.empty});
        wg_wait<0>();
        fence_acc(d);
        store_block<BN, false>(d, nullptr, 0, C, M, N, m0 + c * 64, n0, false, 0);
    }
}

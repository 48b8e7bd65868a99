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
#include "hopper.cuh"

#ifndef NCONS
#error "NCONS is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
#ifndef BN
#error "BN is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
#ifndef STAGES
#error "STAGES is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
#define BM (64 * NCONS)
#define BK 64
#define THREADS (128 * (NCONS + 1))
#define A_BYTES (BM * 128)
#define B_BYTES (BN * 128)
#define SMEM_BYTES (STAGES * (A_BYTES + B_BYTES) + 1024 + 16 * STAGES)
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232
#endif
static_assert(BN % 64 == 0 && BN <= 256 && NCONS >= 1 && NCONS <= 3, "tile shape");

BF16_GEOM(4, BM, BN, BK, STAGES, THREADS, SMEM_BYTES, 1, 0, 0, BM, BN, 1, 0, 0, 0);

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, float *__restrict__ C,
              int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t sA = base, sB = base + STAGES * A_BYTES;
    const uint32_t full = sB + STAGES * B_BYTES, empty = full + 8 * STAGES;
    const int tid = threadIdx.x, wg = tid / 128;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int nk = (K + BK - 1) / BK;

    if (tid == 0) {
        tma_prefetch_map(&tmA);
        tma_prefetch_map(&tmB);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 4 * NCONS);  // lane 0 of every consumer warp
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) {  // producer
        reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            int s = 0;
            uint32_t ph = 0;
            for (int kt = 0; kt < nk; ++kt) {
                mbar_wait(empty + 8 * s, ph ^ 1);  // a fresh barrier passes parity 1 at once
                mbar_expect_tx(full + 8 * s, A_BYTES + B_BYTES);
                tma_load(sA + s * A_BYTES, &tmA, full + 8 * s, kt * BK, m0);
                tma_load(sB + s * B_BYTES, &tmB, full + 8 * s, kt * BK, n0);
                if (++s == STAGES) {
                    s = 0;
                    ph ^= 1;
                }
            }
        }
    } else {  // consumers
        reg_alloc<CONSUMER_REGS>();
        const int c = wg - 1, lane = tid % 32, w = (tid / 32) % 4;
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) {
            d[i] = 0.f;
        }
        int s = 0, prev = 0;
        uint32_t ph = 0;
        for (int kt = 0; kt < nk; ++kt) {
            mbar_wait(full + 8 * s, ph);
            const uint64_t da = desc_sw128(sA + s * A_BYTES + c * 64 * 128), db = desc_sw128(sB + s * B_BYTES);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                Wgmma<BN>::mma(d, da + 2 * kk, db + 2 * kk, 1);
            }
            wg_commit();
            wg_wait<1>();  // k-tile kt-1's group is done: its stage can be refilled
            if (kt > 0 && lane == 0) {
                mbar_arrive(empty + 8 * prev);
            }
            prev = s;
            if (++s == STAGES) {
                s = 0;
                ph ^= 1;
            }
        }
        wg_wait<0>();
        fence_acc(d);
        const bool fast = (m0 + BM <= M) && (n0 + BN <= N) && (N % 2 == 0);
        store_direct<BN>(d, C, M, N, m0 + c * 64 + 16 * w + (lane >> 2), n0 + 2 * (lane & 3), fast);
    }
}

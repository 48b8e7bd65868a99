// Rung 3 of the BF16 ladder: Hopper's own path. wgmma.mma_async (m64nBNk16, bf16 in, fp32 accumulate) reading
// A and B straight from shared memory through descriptors, the tiles brought by the TMA
// (cp.async.bulk.tensor.2d) into the 128-byte-swizzled layout wgmma reads, each stage completing on an mbarrier
// (transaction bytes), STAGES stages. sm_90a.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major), both
// K-major: what TMA and wgmma like best. Block tile BM x BN with BM / 64 warpgroups (each m64 x BN), BK = 64.
// Adds over rung 2 (mma.sync): (1) warpgroup-wide asynchronous MMAs (SASS HGMMA) that read their operands from
// shared memory themselves: no ldmatrix, no operand registers, 4x the work per instruction; (2) one thread moves
// a whole tile with one TMA instruction (address generation, bounds and zero fill and the swizzle done by the copy
// engine) instead of every thread issuing cp.async; (3) completion tracked by mbarrier transaction counts instead
// of cp.async groups. Still simple: every thread computes, thread 0 also issues the copies, and a CTA-wide
// barrier after each k-tile's wgmma (waited to completion) frees its stage. Counters it should move: tensor pipe
// utilisation (sm__pipe_tensor_op_hmma_cycles_active, which with ncu 2025.3 on sm_90 counts HGMMA too), issued
// instructions (sm__inst_executed) down by an order of magnitude, shared-memory wavefronts for operand loads to
// zero (the MMA reads shared memory itself). Where the idea comes from: the PTX ISA (wgmma,
// cp.async.bulk.tensor, mbarrier), NVIDIA's CUTLASS 3 sm90 "TMA + GMMA" mainloops, and the public
// "Outperforming cuBLAS on H100" worklog (Pranjal Shankhdhar, 2024), whose first Hopper kernel is this one.
// Shapes: any M, N >= 1; K a multiple of 8 (the TMA needs the row pitch, 2K bytes, to be a multiple of 16);
// edges zero-filled by the TMA.
#include "../need.cuh"
#include "geometry.cuh"
#include "pipeline.cuh"

NEED(BM); NEED(BN); NEED(STAGES);
#define NWG (BM / 64)
#define THREADS (128 * NWG)
using Smem = Stages<BM, BN, STAGES>;
static_assert(BM % 64 == 0 && BN % 64 == 0 && BN <= 256 && BM <= 256, "tile shape");

BF16_GEOM(.rung = 3, .bm = BM, .bn = BN, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = 1, .abox = BM, .bbox = BN, .tma = 1);

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, float *__restrict__ C,
              int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32, w = (tid / 32) % 4;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int nk = (K + BK - 1) / BK;
    // k-tile kt into stage kt % STAGES, completing on that stage's full barrier
    auto load = [&](int kt) {
        const int s = kt % STAGES;
        mbar_expect_tx(sm.full + 8 * s, Smem::TX);
        tma_load(sm.a_at(s), &tmA, sm.full + 8 * s, kt * BK, m0);
        tma_load(sm.b_at(s), &tmB, sm.full + 8 * s, kt * BK, n0);
    };

    sm.init(&tmA, &tmB, 0);
    __syncthreads();
    if (tid == 0) {
        for (int kt = 0; kt < STAGES && kt < nk; ++kt) {
            load(kt);
        }
    }

    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        d[i] = 0.f;
    }
    for (int kt = 0; kt < nk; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(sm.full + 8 * s, (kt / STAGES) & 1);
        wg_fence();
        mma_ktile<BN>(d, sm.a_at(s) + wg * 64 * 128, sm.b_at(s), false);
        wg_commit();
        wg_wait<0>();
        fence_acc(d);
        __syncthreads();  // every warpgroup is done reading stage s
        if (tid == 0 && kt + STAGES < nk) {
            load(kt + STAGES);
        }
    }

    const bool fast = (m0 + BM <= M) && (n0 + BN <= N) && (N % 2 == 0);
    store_direct<BN>(d, C, M, N, m0 + wg * 64 + 16 * w + (lane >> 2), n0 + 2 * (lane & 3), fast);
}

// Ping-pong consumers on rung 5's persistent warp-specialized kernel: each consumer warpgroup owns whole output
// tiles (128 x BN, two m64nBN wgmmas per k-step) and the two take the CTA's tiles in turn, so that one
// warpgroup's epilogue (writing 64 KB of fp32 C through shared memory and TMA stores) runs while the other's main
// loop keeps the tensor cores busy. sm_90a.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major).
// The CTA's units are u = first, first + step, ... (persistent, grouped order as in rung 5); unit number i of the
// CTA goes to consumer warpgroup i % 2. The producer loads the units' k-tiles in that order into one ring of
// STAGES stages (A 128 x 64 + B BN x 64 each), so k-tile number i * nk + kt of the CTA's sequence sits in stage
// (i * nk + kt) % STAGES, phase ((i * nk + kt) / STAGES) & 1; each stage is consumed by one warpgroup only (its
// empty barrier counts 4 warps, x2 with a cluster). Two named barriers order the main loops: warpgroup c starts
// unit i > 0 only after the other warpgroup has waited for and issued every k-tile of unit i - 1 (bar.arrive
// there, bar.sync here). That keeps the tensor cores to one warpgroup at a time, and it is what makes the parity
// waits sound: without it, a warpgroup would wait on a stage two phases behind and take the other's data.
// CL=2: 2-CTA clusters on pairs of tile-rows sharing the B tile, each CTA loading half of it and multicasting
// (as rung 6, MC=0): per SM per k-tile 16 + 8 KB from L2 instead of 16 + 16 KB.
// Adds over rung 5 (persistent, cooperative: both warpgroups on one 128 x 256 tile, storing it together while
// the tensor cores idle, at the same moment on every SM): the epilogue leaves the critical path, and the C
// write bursts of the SMs spread out in time. Costs: 128 x 128 tiles move 4/3 the L2 -> SM bytes per FLOP of
// 128 x 256 (CL=2 brings it back), and one warpgroup alone must keep the tensor cores fed.
// Counters it should move: tensor pipe utilisation (sm__pipe_tensor_op_hmma_cycles_active) up by the epilogue's
// share (~4-5% at 4096^3); L2 -> SM sectors (lts__t_sectors_srcunit_tex) up by a third without CL.
// Where the idea comes from: CUTLASS 3's KernelTmaWarpSpecializedPingpong (ordered math warpgroups, one tile
// each) and its OrderedSequenceBarrier; the PTX ISA for bar.arrive / bar.sync with a thread count.
// Shapes: any M, N >= 1; K a multiple of 8 (TMA row pitch); edges zero-filled by the TMA loads, clipped by the
// TMA stores or bounds-checked by the direct stores (STORE=0, or when N % 4 != 0).
#include "../need.cuh"
#include "geometry.cuh"
#include "pipeline.cuh"

NEED(BN); NEED(STAGES); NEED(GM); NEED(STORE); NEED(CL);
#define BM 128
#define THREADS 384
#define C_STAGE_BYTES (STORE ? 16384 : 0)  // per consumer warpgroup: two 8 KB chunks of 64 x 32 fp32
#define BAR_GO 3  // named barriers 3 and 4: "consumer warpgroup 0 / 1 may start its next main loop"
using Smem = Stages<BM, BN, STAGES, 2 * C_STAGE_BYTES>;
static_assert(BN % 64 == 0 && BN <= 192, "tile shape: 2 x BN/2 accumulators per thread");
static_assert(CL == 1 || CL == 2, "cluster of 1 or 2");
static_assert(Smem::SMEM <= 232448, "shared memory: at most 227 KB per block");

#if CL == 2
#define CLUSTER_ATTR __cluster_dims__(2, 1, 1)
#else
#define CLUSTER_ATTR
#endif

BF16_GEOM(.rung = 7, .bm = BM, .bn = BN, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = CL, .persistent = 1, .store = STORE, .abox = BM, .bbox = BN / CL, .tma = 1, .gm = GM,
          .cbox_cols = 32, .cbox_rows = 64);

// units in groups of GM / CL unit-rows (GM tile-rows), as in rung 5
constexpr int G = GM / CL > 0 ? GM / CL : 1;

__device__ __forceinline__ void cta_sync()
{
#if CL == 2
    cluster_sync();
#else
    __syncthreads();
#endif
}

extern "C" __global__ void CLUSTER_ATTR __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
              const __grid_constant__ CUtensorMap tmC, float *__restrict__ C, int M, int N, int K, int c_tma)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, wg = tid / 128;
    const int nk = (K + BK - 1) / BK, nm = (M + BM - 1) / BM, nn = (N + BN - 1) / BN;
#if CL == 2
    const int rank = (int)cluster_rank(), snm = (nm + 1) / 2, first = blockIdx.x / 2, step = gridDim.x / 2;
#else
    const int rank = 0, snm = nm, first = blockIdx.x, step = gridDim.x;
#endif
    const int nunits = snm * nn;

    sm.init(&tmA, &tmB, 4 * CL);  // the 4 warps of the consuming warpgroup (of both CTAs)
    cta_sync();                   // with CL = 2: both CTAs' barriers initialised before any multicast or arrival

    if (wg == 0) {  // producer
        reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            Ring<STAGES> ring;
            for (int u = first; u < nunits; u += step) {
                int mt, nt;
                grouped<G>(u, snm, nn, mt, nt);
                mt = CL * mt + rank;
                produce(ring, sm.full, sm.empty, nk, Smem::TX, [&](int s, uint32_t bar, int k) {
                    tma_load(sm.a_at(s), &tmA, bar, k, mt * BM);
                    if (CL == 2) {
                        tma_load_multicast(sm.b_at(s) + rank * (BN / 2) * 128, &tmB, bar, k, nt * BN + rank * (BN / 2),
                                           0x3);
                    } else {
                        tma_load(sm.b_at(s), &tmB, bar, k, nt * BN);
                    }
                });
            }
        }
        if (CL == 2) {
            cluster_sync();  // no CTA leaves while its peer may still multicast into it or arrive on its barriers
        }
    } else {  // consumers: warpgroup c takes the CTA's units c, c + 2, c + 4, ...
        reg_alloc<CONSUMER_REGS>();
        const int c = wg - 1;
        float d0[BN / 2], d1[BN / 2];  // rows 0-63 and 64-127 of the unit's tile
        for (int i = c, u = first + c * step; u < nunits; i += 2, u += 2 * step) {
            int mt, nt;
            grouped<G>(u, snm, nn, mt, nt);
            mt = CL * mt + rank;
            if (i > 0) {
                named_sync(BAR_GO + c, 256);  // the other warpgroup has issued all of unit i - 1
            }
            // this unit's first k-tile is number i * nk of the CTA's sequence: there the ring stands for it
            const long long g0 = (long long)i * nk;
            Ring<STAGES> ring;
            ring.s = (int)(g0 % STAGES);
            ring.ph = (uint32_t)((g0 / STAGES) & 1);
            int prev = ring.s;
            consume(
                ring, prev, sm.full, nk,
                [&](int s, int kt) {  // the two halves of the tile, k-step by k-step
                    const uint64_t da0 = desc_sw128(sm.a_at(s)), da1 = desc_sw128(sm.a_at(s) + 64 * 128);
                    const uint64_t db = desc_sw128(sm.b_at(s));
#pragma unroll
                    for (int kk = 0; kk < BK / 16; ++kk) {
                        const int acc = (kt > 0 || kk > 0) ? 1 : 0;  // first: D = A*B
                        Wgmma<BN>::mma(d0, da0 + 2 * kk, db + 2 * kk, acc);
                        Wgmma<BN>::mma(d1, da1 + 2 * kk, db + 2 * kk, acc);
                    }
                },
                Release<CL>{sm.empty});
            if (u + step < nunits) {
                named_arrive(BAR_GO + (1 - c), 256);  // unit i + 1 exists: its warpgroup may start
            }
            retire(prev, Release<CL>{sm.empty}, d0, d1);
            const int m0 = mt * BM, n0 = nt * BN;
            if (m0 >= M) {
                continue;  // the phantom half of a cluster pair at the edge
            }
            store_block<BN, STORE>(d0, &tmC, sm.c + c * C_STAGE_BYTES, C, M, N, m0, n0, c_tma, 1 + c);
            if (m0 + 64 < M) {
                store_block<BN, STORE>(d1, &tmC, sm.c + c * C_STAGE_BYTES, C, M, N, m0 + 64, n0, c_tma, 1 + c);
            }
        }
        store_drain<STORE>(c_tma);
        if (CL == 2) {
            cluster_sync();
        }
    }
}

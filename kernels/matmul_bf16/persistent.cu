// Rung 5 of the BF16 ladder: a persistent grid (one CTA per SM, each looping over output tiles) on rung 4's
// warp-specialized pipeline, with a tile order chosen for L2 reuse and a choice of epilogue. sm_90a.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major).
// Adds over rung 4 (warpspec): (1) no CTA launch, barrier set-up or pipeline fill/drain per tile: the producer
// runs on into the next tile's k-tiles while the consumers store this tile's C, so the epilogue overlaps loads;
// the mbarrier phases simply continue across tiles; (2) tiles taken in groups of GM tile-rows, column by column
// inside a group (tile t and t+1 share their B tile; the tiles in flight at once touch GM rows of A and
// ~132/GM columns of B), so that the L2 serves most re-reads;
// (3) STORE=1: C written by the TMA from a 128-byte-swizzled shared staging buffer (2 x 8 KB per consumer
// warpgroup: an fp32 128 x 256 tile would need 128 KB, so it goes out in 64 x 32 chunks, one copying while the
// next is written; used when N % 4 == 0, the TMA's row-pitch rule for fp32 C; else direct stores),
// STORE=0: direct 8-byte stores of the accumulators (each warp store fills whole 32-B sectors).
// Counters it should move: tensor pipe utilisation up (less idle time between tiles, no tail per CTA); L2 hit
// rate (lts__t_sector_hit_rate) up and DRAM bytes read down with the grouped order; STORE=1 trades the
// consumers' global store instructions for shared stores and TMA stores.
// Where the idea comes from: CUTLASS 3's persistent tile schedulers (KernelTmaWarpSpecializedCooperative,
// rasterization with a swizzle / group size), Triton's matmul tutorial ("L2 cache optimizations", grouped
// ordering), and the "Outperforming cuBLAS on H100" worklog (persistent kernel, TMA stores).
// Shapes: any M, N >= 1; K a multiple of 8 (TMA row pitch); edges zero-filled by the TMA loads, clipped by the
// TMA stores or bounds-checked by the direct stores.
#include "../need.cuh"
#include "geometry.cuh"
#include "pipeline.cuh"

NEED(NCONS); NEED(BN); NEED(STAGES); NEED(GM); NEED(STORE);
#define BM (64 * NCONS)
#define THREADS (128 * (NCONS + 1))
#define C_STAGE_BYTES (STORE ? 16384 : 0)  // per consumer warpgroup
using Smem = Stages<BM, BN, STAGES, NCONS * C_STAGE_BYTES>;
static_assert(BN % 64 == 0 && BN <= 256 && NCONS >= 1 && NCONS <= 3, "tile shape");
static_assert(Smem::SMEM <= 232448, "shared memory: at most 227 KB per block");

BF16_GEOM(.rung = 5, .bm = BM, .bn = BN, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = 1, .persistent = 1, .store = STORE, .abox = BM, .bbox = BN, .tma = 1, .gm = GM, .cbox_cols = 32,
          .cbox_rows = 64);

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
              const __grid_constant__ CUtensorMap tmC, float *__restrict__ C, int M, int N, int K, int c_tma)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, wg = tid / 128;
    const int nk = (K + BK - 1) / BK, nm = (M + BM - 1) / BM, nn = (N + BN - 1) / BN, ntiles = nm * nn;

    sm.init(&tmA, &tmB, 4 * NCONS);
    __syncthreads();

    Ring<STAGES> ring;  // the phases run on from tile to tile
    if (wg == 0) {      // producer
        reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
                int mt, nt;
                grouped<GM>(t, nm, nn, mt, nt);
                produce(ring, sm.full, sm.empty, nk, Smem::TX, [&](int s, uint32_t bar, int k) {
                    tma_load(sm.a_at(s), &tmA, bar, k, mt * BM);
                    tma_load(sm.b_at(s), &tmB, bar, k, nt * BN);
                });
            }
        }
    } else {  // consumers
        reg_alloc<CONSUMER_REGS>();
        const int c = wg - 1;
        int prev = 0;
        float d[BN / 2];
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
            int mt, nt;
            grouped<GM>(t, nm, nn, mt, nt);
            consume(
                ring, prev, sm.full, nk,
                [&](int s, int kt) { mma_ktile<BN>(d, sm.a_at(s) + c * 64 * 128, sm.b_at(s), kt == 0); },
                Release<1>{sm.empty});
            retire(prev, Release<1>{sm.empty}, d);
            const int m0 = mt * BM + c * 64;
            if (m0 < M) {  // else this warpgroup's rows lie past the edge
                store_block<BN, STORE>(d, &tmC, sm.c + c * C_STAGE_BYTES, C, M, N, m0, nt * BN, c_tma, 1 + c);
            }
        }
        store_drain<STORE>(c_tma);
    }
}

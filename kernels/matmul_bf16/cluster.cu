// Rung 6 of the BF16 ladder: thread-block clusters of 2 CTAs with TMA multicast of the operand they share, on
// rung 5's persistent warp-specialized kernel. sm_90a.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major).
// The two CTAs of a cluster take neighbouring tiles that share an operand: MC=0 (default) two tile-rows of the
// same tile-column, sharing the B tile (BN x 64 per k-tile, the larger one at 128 x 256); MC=1 two tile-columns
// of the same tile-row, sharing the A tile. Each CTA loads half of the shared tile and the TMA multicasts it
// into both CTAs' shared memory (same offset), completing on both CTAs' full barrier; so a stage's empty barrier
// counts the consumer warps of both CTAs (each consumer warp arrives on its own CTA's and, through mapa, on its
// peer's), since a stage may be refilled only when both CTAs are done reading it.
// Adds over rung 5 (persistent): each shared tile crosses the L2 -> SM path once per cluster instead of once
// per CTA: per stage a CTA pulls 16 + 16 KB instead of 16 + 32 KB (MC=0, 128 x 256 tiles), a third less
// L2 -> SM traffic, and the L2 sees half the requests for B. Counters it should move: L2 -> L1/shared bytes
// (lts__t_sectors_srcunit_tex / the TMA's L2 reads) down, L2 throughput share down, tensor pipe utilisation up
// where the L2 bandwidth was the limit. Where the idea comes from: the CUDA programming guide ("Thread Block
// Clusters", distributed shared memory), the PTX ISA (cp.async.bulk.tensor .multicast::cluster, mapa,
// barrier.cluster), CUTLASS 3's sm90 TMA multicast pipelines (PipelineTmaAsync with cluster shapes), and the
// "Outperforming cuBLAS on H100" worklog (clusters multicasting A).
// Shapes: any M, N >= 1; K a multiple of 8 (TMA row pitch). A cluster whose second tile lies past the edge still
// loads (zero-filled) and computes it, so that both CTAs run the same pipeline; it stores nothing.
#include "../need.cuh"
#include "geometry.cuh"
#include "pipeline.cuh"

// MC: 0: the pair shares B (two tile-rows); 1: the pair shares A (two tile-columns)
NEED(NCONS); NEED(BN); NEED(STAGES); NEED(GM); NEED(STORE); NEED(MC);
#define BM (64 * NCONS)
#define THREADS (128 * (NCONS + 1))
#define C_STAGE_BYTES (STORE ? 16384 : 0)
using Smem = Stages<BM, BN, STAGES, NCONS * C_STAGE_BYTES>;
static_assert(BN % 64 == 0 && BN <= 256 && NCONS >= 2 && NCONS <= 3, "tile shape (half of A multicast: BM >= 128)");
static_assert(Smem::SMEM <= 232448, "shared memory: at most 227 KB per block");

BF16_GEOM(.rung = 6, .bm = BM, .bn = BN, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = 2, .persistent = 1, .store = STORE, .abox = MC == 1 ? BM / 2 : BM, .bbox = MC == 0 ? BN / 2 : BN,
          .tma = 1, .gm = GM, .cbox_cols = 32, .cbox_rows = 64);

// the pair's tiles in groups of about GM tile-rows, as in rung 5
constexpr int G = MC == 0 ? (GM / 2 > 0 ? GM / 2 : 1) : GM;

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
              const __grid_constant__ CUtensorMap tmC, float *__restrict__ C, int M, int N, int K, int c_tma)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, wg = tid / 128;
    const uint32_t rank = cluster_rank();
    const int nk = (K + BK - 1) / BK, nm = (M + BM - 1) / BM, nn = (N + BN - 1) / BN;
    // super grid: pairs of tile-rows (MC=0) or of tile-columns (MC=1)
    const int snm = MC == 0 ? (nm + 1) / 2 : nm, snn = MC == 0 ? nn : (nn + 1) / 2, nsuper = snm * snn;
    const int cid = blockIdx.x / 2, ncl = gridDim.x / 2;
    // super-tile t -> this CTA's tile
    auto tile = [&](int t, int &mt, int &nt) {
        int pm, pn;
        grouped<G>(t, snm, snn, pm, pn);
        mt = MC == 0 ? 2 * pm + rank : pm;
        nt = MC == 0 ? pn : 2 * pn + rank;
    };

    sm.init(&tmA, &tmB, 2 * 4 * NCONS);  // the consumer warps of both CTAs
    cluster_sync();                      // both CTAs' barriers initialised before any multicast or remote arrival

    Ring<STAGES> ring;
    if (wg == 0) {  // producer: its own tile of the unshared operand, half of the shared one for both CTAs
        reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            for (int t = cid; t < nsuper; t += ncl) {
                int mt, nt;
                tile(t, mt, nt);
                produce(ring, sm.full, sm.empty, nk, Smem::TX, [&](int s, uint32_t bar, int k) {
                    if (MC == 0) {
                        tma_load(sm.a_at(s), &tmA, bar, k, mt * BM);
                        tma_load_multicast(sm.b_at(s) + rank * (BN / 2) * 128, &tmB, bar, k, nt * BN + rank * (BN / 2),
                                           0x3);
                    } else {
                        tma_load_multicast(sm.a_at(s) + rank * (BM / 2) * 128, &tmA, bar, k, mt * BM + rank * (BM / 2),
                                           0x3);
                        tma_load(sm.b_at(s), &tmB, bar, k, nt * BN);
                    }
                });
            }
        }
        cluster_sync();  // no CTA leaves while its peer may still arrive on its barriers
    } else {             // consumers: each stage released in both CTAs
        reg_alloc<CONSUMER_REGS>();
        const int c = wg - 1;
        int prev = 0;
        float d[BN / 2];
        for (int t = cid; t < nsuper; t += ncl) {
            int mt, nt;
            tile(t, mt, nt);
            consume(
                ring, prev, sm.full, nk,
                [&](int s, int kt) { mma_ktile<BN>(d, sm.a_at(s) + c * 64 * 128, sm.b_at(s), kt == 0); },
                Release<2>{sm.empty});
            retire(prev, Release<2>{sm.empty}, d);
            const int m0 = mt * BM + c * 64, n0 = nt * BN;
            if (m0 < M && n0 < N) {  // else the phantom half of an edge pair
                store_block<BN, STORE>(d, &tmC, sm.c + c * C_STAGE_BYTES, C, M, N, m0, n0, c_tma, 1 + c);
            }
        }
        store_drain<STORE>(c_tma);
        cluster_sync();
    }
}

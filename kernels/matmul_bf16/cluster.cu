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
#ifndef GM
#error "GM is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
#ifndef STORE
#error "STORE is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
// MC: 0: the pair shares B (two tile-rows); 1: the pair shares A (two tile-columns)
#ifndef MC
#error "MC is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
#define BM (64 * NCONS)
#define BK 64
#define THREADS (128 * (NCONS + 1))
#define A_BYTES (BM * 128)
#define B_BYTES (BN * 128)
#define C_STAGE_BYTES (STORE ? 16384 : 0)
#define SMEM_BYTES (STAGES * (A_BYTES + B_BYTES) + NCONS * C_STAGE_BYTES + 1024 + 16 * STAGES)
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232
#endif
#define ABOX (MC == 1 ? BM / 2 : BM)
#define BBOX (MC == 0 ? BN / 2 : BN)
static_assert(BN % 64 == 0 && BN <= 256 && NCONS >= 2 && NCONS <= 3, "tile shape (half of A multicast: BM >= 128)");
static_assert(SMEM_BYTES <= 232448, "shared memory: at most 227 KB per block");

BF16_GEOM(6, BM, BN, BK, STAGES, THREADS, SMEM_BYTES, 2, 1, STORE, ABOX, BBOX, 1, GM, 32, 64);

// super-tile (a pair of tiles) t -> (super row, super column), grouped as in rung 5
__device__ __forceinline__ void tile_coords(int t, int nm, int nn, int &pm, int &pn)
{
    constexpr int G = (MC == 0 ? (GM / 2 > 0 ? GM / 2 : 1) : GM);
    const int group = G * nn, g = t / group, first = g * G, gsz = min(nm - first, G), r = t - g * group;
    pm = first + r % gsz;
    pn = r / gsz;
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
              const __grid_constant__ CUtensorMap tmC, float *__restrict__ C, int M, int N, int K, int c_tma)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t sA = base, sB = base + STAGES * A_BYTES, sC = sB + STAGES * B_BYTES;
    const uint32_t full = sC + NCONS * C_STAGE_BYTES, empty = full + 8 * STAGES;
    const int tid = threadIdx.x, wg = tid / 128;
    const uint32_t rank = cluster_rank();
    const int nk = (K + BK - 1) / BK, nm = (M + BM - 1) / BM, nn = (N + BN - 1) / BN;
    // super grid: pairs of tile-rows (MC=0) or of tile-columns (MC=1)
    const int snm = MC == 0 ? (nm + 1) / 2 : nm, snn = MC == 0 ? nn : (nn + 1) / 2, nsuper = snm * snn;
    const int cid = blockIdx.x / 2, ncl = gridDim.x / 2;

    if (tid == 0) {
        tma_prefetch_map(&tmA);
        tma_prefetch_map(&tmB);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 2 * 4 * NCONS);  // the consumer warps of both CTAs
        }
        mbar_init_fence();
    }
    cluster_sync();  // both CTAs' barriers initialised before any multicast or remote arrival

    if (wg == 0) {  // producer
        reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            int s = 0;
            uint32_t ph = 0;
            for (int t = cid; t < nsuper; t += ncl) {
                int pm, pn;
                tile_coords(t, snm, snn, pm, pn);
                const int mt = MC == 0 ? 2 * pm + rank : pm, nt = MC == 0 ? pn : 2 * pn + rank;
                for (int kt = 0; kt < nk; ++kt) {
                    mbar_wait(empty + 8 * s, ph ^ 1);
                    mbar_expect_tx(full + 8 * s, A_BYTES + B_BYTES);
#if MC == 0
                    tma_load(sA + s * A_BYTES, &tmA, full + 8 * s, kt * BK, mt * BM);
                    tma_load_multicast(sB + s * B_BYTES + rank * (BN / 2) * 128, &tmB, full + 8 * s, kt * BK,
                                       nt * BN + rank * (BN / 2), 0x3);
#else
                    tma_load_multicast(sA + s * A_BYTES + rank * (BM / 2) * 128, &tmA, full + 8 * s, kt * BK,
                                       mt * BM + rank * (BM / 2), 0x3);
                    tma_load(sB + s * B_BYTES, &tmB, full + 8 * s, kt * BK, nt * BN);
#endif
                    if (++s == STAGES) {
                        s = 0;
                        ph ^= 1;
                    }
                }
            }
        }
        cluster_sync();  // no CTA leaves while its peer may still arrive on its barriers
    } else {             // consumers
        reg_alloc<CONSUMER_REGS>();
        const int c = wg - 1, wg_tid = tid % 128, lane = tid % 32, w = wg_tid / 32;
        int s = 0, prev = 0;
        uint32_t ph = 0;
        float d[BN / 2];
        for (int t = cid; t < nsuper; t += ncl) {
            int pm, pn;
            tile_coords(t, snm, snn, pm, pn);
            const int mt = MC == 0 ? 2 * pm + rank : pm, nt = MC == 0 ? pn : 2 * pn + rank;
            for (int kt = 0; kt < nk; ++kt) {
                mbar_wait(full + 8 * s, ph);
                const uint64_t da = desc_sw128(sA + s * A_BYTES + c * 64 * 128), db = desc_sw128(sB + s * B_BYTES);
                wg_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    Wgmma<BN>::mma(d, da + 2 * kk, db + 2 * kk, (kt > 0 || kk > 0) ? 1 : 0);
                }
                wg_commit();
                wg_wait<1>();
                if (kt > 0 && lane == 0) {
                    mbar_arrive_cluster(empty + 8 * prev, 0);
                    mbar_arrive_cluster(empty + 8 * prev, 1);
                }
                prev = s;
                if (++s == STAGES) {
                    s = 0;
                    ph ^= 1;
                }
            }
            wg_wait<0>();
            fence_acc(d);
            if (lane == 0) {
                mbar_arrive_cluster(empty + 8 * prev, 0);
                mbar_arrive_cluster(empty + 8 * prev, 1);
            }
            const int m0 = mt * BM + c * 64, n0 = nt * BN;
            if (m0 >= M || n0 >= N) {
                continue;  // the phantom half of an edge pair
            }
#if STORE
            if (c_tma) {
                store_tma<BN>(d, &tmC, sC + c * C_STAGE_BYTES, m0, n0, wg_tid, 1 + c);
                continue;
            }
#endif
            const bool fast = (m0 + 64 <= M) && (n0 + BN <= N) && (N % 2 == 0);
            store_direct<BN>(d, C, M, N, m0 + 16 * w + (lane >> 2), n0 + 2 * (lane & 3), fast);
        }
#if STORE
        if (c_tma && wg_tid == 0) {
            bulk_wait<0>();
        }
#endif
        cluster_sync();
    }
}

// Rung 5 of the BF16 ladder: a persistent grid (one CTA per SM, each looping over output tiles) on rung 4's
// warp-specialized pipeline, with a tile order chosen for L2 reuse and a choice of epilogue. sm_90a.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major).
// Adds over rung 4 (warpspec): (1) no CTA launch, barrier set-up or pipeline fill/drain per tile: the producer
// runs on into the next tile's k-tiles while the consumers store this tile's C, so the epilogue overlaps loads;
// the mbarrier phases simply continue across tiles; (2) tiles taken in groups of GM tile-rows, column by column
// inside a group (tile t and t+1 share their B tile; the tiles in flight at once touch GM rows of A and
// ~132/GM columns of B), so that the L2 serves most re-reads (ORDER=1: plain row-major order, for comparison);
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
#ifndef ORDER
#define ORDER 0
#endif
#ifndef STORE
#error "STORE is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
#define BM (64 * NCONS)
#define BK 64
#define THREADS (128 * (NCONS + 1))
#define A_BYTES (BM * 128)
#define B_BYTES (BN * 128)
#define C_STAGE_BYTES (STORE ? 16384 : 0)  // per consumer warpgroup
#define SMEM_BYTES (STAGES * (A_BYTES + B_BYTES) + NCONS * C_STAGE_BYTES + 1024 + 16 * STAGES)
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232
#endif
static_assert(BN % 64 == 0 && BN <= 256 && NCONS >= 1 && NCONS <= 3, "tile shape");
static_assert(SMEM_BYTES <= 232448, "shared memory: at most 227 KB per block");

BF16_GEOM(5, BM, BN, BK, STAGES, THREADS, SMEM_BYTES, 1, 1, STORE, BM, BN, 1, GM, 32, 64);

// tile t -> (tile row, tile column)
__device__ __forceinline__ void tile_coords(int t, int nm, int nn, int &mt, int &nt)
{
#if ORDER == 0
    const int group = GM * nn, g = t / group, first = g * GM, gsz = min(nm - first, GM), r = t - g * group;
    mt = first + r % gsz;
    nt = r / gsz;
#else
    mt = t / nn;
    nt = t % nn;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
              const __grid_constant__ CUtensorMap tmC, float *__restrict__ C, int M, int N, int K, int c_tma)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t sA = base, sB = base + STAGES * A_BYTES, sC = sB + STAGES * B_BYTES;
    const uint32_t full = sC + NCONS * C_STAGE_BYTES, empty = full + 8 * STAGES;
    const int tid = threadIdx.x, wg = tid / 128;
    const int nk = (K + BK - 1) / BK, nm = (M + BM - 1) / BM, nn = (N + BN - 1) / BN, ntiles = nm * nn;

    if (tid == 0) {
        tma_prefetch_map(&tmA);
        tma_prefetch_map(&tmB);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 4 * NCONS);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) {  // producer
        reg_dealloc<PRODUCER_REGS>();
        if (tid == 0) {
            int s = 0;
            uint32_t ph = 0;
            for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
                int mt, nt;
                tile_coords(t, nm, nn, mt, nt);
                for (int kt = 0; kt < nk; ++kt) {
                    mbar_wait(empty + 8 * s, ph ^ 1);
                    mbar_expect_tx(full + 8 * s, A_BYTES + B_BYTES);
                    tma_load(sA + s * A_BYTES, &tmA, full + 8 * s, kt * BK, mt * BM);
                    tma_load(sB + s * B_BYTES, &tmB, full + 8 * s, kt * BK, nt * BN);
                    if (++s == STAGES) {
                        s = 0;
                        ph ^= 1;
                    }
                }
            }
        }
    } else {  // consumers
        reg_alloc<CONSUMER_REGS>();
        const int c = wg - 1, wg_tid = tid % 128, lane = tid % 32, w = wg_tid / 32;
        int s = 0, prev = 0;
        uint32_t ph = 0;
        float d[BN / 2];
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
            int mt, nt;
            tile_coords(t, nm, nn, mt, nt);
            for (int kt = 0; kt < nk; ++kt) {
                mbar_wait(full + 8 * s, ph);
                const uint64_t da = desc_sw128(sA + s * A_BYTES + c * 64 * 128), db = desc_sw128(sB + s * B_BYTES);
                wg_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    Wgmma<BN>::mma(d, da + 2 * kk, db + 2 * kk, (kt > 0 || kk > 0) ? 1 : 0);  // first: D = A*B
                }
                wg_commit();
                wg_wait<1>();
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
            if (lane == 0) {
                mbar_arrive(empty + 8 * prev);  // the tile's last stage
            }
            const int m0 = mt * BM + c * 64, n0 = nt * BN;
            if (m0 >= M) {
                continue;  // this warpgroup's rows lie past the edge
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
    }
}

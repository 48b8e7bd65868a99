// Exploration (issue 30, call 11), not a catalog rung: rung 5 (kernels/matmul_bf16/persistent.cu, copied whole)
// with STAGGER=1, the two consumer warpgroups taking turns at the epilogue (named barriers 3 and 4: warpgroup 0
// writes its half of a tile's C once warpgroup 1 has written its half of the previous tile, warpgroup 1 once 0 has
// written this tile's). After the first tile, warpgroup 0 runs ahead by one epilogue, so that each warpgroup's
// epilogue overlaps the other's wgmma instead of both stopping the tensor cores at once.
// Counter it should move: the tensor pipe's active share (sm__pipe_tensor_op_hmma_cycles_active), up by the
// epilogue's share of a tile (estimated 1-2%). Outcome on the H100 (NOTES.md, call 11): 100.2% of cuBLAS at 4096^3
// against 99.7% for rung 5, within the noise; tensor pipe 90.5% against 90.3% under ncu: it moved nothing.
// Where the idea comes from: CUTLASS 3's OrderedSequenceBarrier (the ping-pong kernel's ordered epilogues), here
// with the two warpgroups sharing each stage as in the cooperative kernel.
#include "../../kernels/matmul_bf16/hopper.cuh"

#ifndef NCONS
#define NCONS 2
#endif
#ifndef BN
#define BN 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GM
#define GM 8
#endif
#ifndef ORDER
#define ORDER 0
#endif
#ifndef STORE
#define STORE 0
#endif
#ifndef STAGGER
#define STAGGER 0
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
static_assert(!STAGGER || NCONS == 2, "the staggered epilogue takes turns between two consumer warpgroups");
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
#if STAGGER
            // the warpgroups take turns at the epilogue: 0 once 1 has finished its previous one, 1 once 0 has
            // finished this one (named barriers 3 and 4: 128 threads arrive, the other 128 wait)
            if (c == 0 && t != (int)blockIdx.x) {
                named_sync(4, 256);
            } else if (c == 1) {
                named_sync(3, 256);
            }
#endif
            if (m0 < M) {  // else this warpgroup's rows lie past the edge
#if STORE
                if (c_tma) {
                    store_tma<BN>(d, &tmC, sC + c * C_STAGE_BYTES, m0, n0, wg_tid, 1 + c);
                } else
#endif
                {
                    const bool fast = (m0 + 64 <= M) && (n0 + BN <= N) && (N % 2 == 0);
                    store_direct<BN>(d, C, M, N, m0 + 16 * w + (lane >> 2), n0 + 2 * (lane & 3), fast);
                }
            }
#if STAGGER
            if (c == 0) {
                named_arrive(3, 256);
            } else if (t + (int)gridDim.x < ntiles) {
                named_arrive(4, 256);  // warpgroup 0 waits for it before its next epilogue
            }
#endif
        }
#if STORE
        if (c_tma && wg_tid == 0) {
            bulk_wait<0>();
        }
#endif
    }
}

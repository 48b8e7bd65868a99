// Stream-K for the last partial wave, on rung 5's persistent cooperative kernel (128 x 256 tiles, a producer and
// two consumer warpgroups, grouped tile order, TMA stores of C). sm_90a.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major).
// With T tiles on G CTAs (G = the SM count), T = W * G + R: the first W * G tiles go round-robin as whole tiles
// (data-parallel), and the k-iterations of the last R tiles (R * nk of them, tile-major) are cut into G equal
// contiguous ranges, one per CTA ("stream-K"). A CTA's range covers the tail of one tile (its first piece), maybe
// whole tiles, and the head of another (its last piece). A piece that does not start at k = 0 is written to the
// CTA's workspace slot (128 x 256 fp32, in the accumulators' own order, float4 per thread: coalesced) and
// flagged (fence.acq_rel.gpu, then a relaxed store of 1); the CTA holding a tile's head piece waits for the flags
// of the CTAs holding the rest of that tile (ld.acquire.gpu), adds their partial sums and stores C, and resets
// the flags for the next launch. A piece with a partial sum is always its CTA's first piece and a head piece its
// last, so no CTA waits on work that comes after its own wait: no deadlock with all CTAs resident.
// Adds over rung 5: at 4096^3 (512 tiles, 3.88 waves) the last wave's 116 tiles are spread over all 132 SMs
// (56.2 k-iterations each instead of 64 on 116 SMs and none on 16); at 8192^3 (15.5 waves) 68 tiles, 66 instead
// of 128. Costs: one partial write and one read-and-add of 128 KB per split tile.
// Counters it should move: SM active cycles evened out across SMs (sm__cycles_active.max vs .avg), kernel time
// by about the tail's share (2-3% predicted at 4096, 3% at 8192); L2 traffic up by the workspace.
// Where the idea comes from: Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
// Multiplication on the GPU" (PPoPP 2023, the data-parallel + one stream-K wave hybrid); CUTLASS 3's
// PersistentTileSchedulerSm90StreamK (partials in a workspace, a flag per tile); the PTX memory model for the
// release / acquire pattern.
// Shapes: any M, N >= 1; K a multiple of 8. With fewer tiles than SMs every tile is stream-K (small test shapes
// then split each tile over several CTAs: the fix-up path is checked at every shape).
#include "hopper.cuh"  // the BF16 kernels at commit dd79733 (build.sh puts them in cubins/base/)

#ifndef BN
#define BN 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GM
#define GM 16
#endif
#ifndef STORE
#define STORE 1
#endif
#define NCONS 2
#define BM 128
#define BK 64
#define THREADS 384
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
#define BAR_SK 3  // named barrier of the 256 consumer threads around the workspace hand-over
static_assert(BN % 64 == 0 && BN <= 256, "tile shape");
static_assert(SMEM_BYTES <= 232448, "shared memory: at most 227 KB per block");

BF16_GEOM(8, BM, BN, BK, STAGES, THREADS, SMEM_BYTES, 1, 1, STORE, BM, BN, 1, GM, 32, 64, 1);

__device__ __forceinline__ void tile_coords(int t, int nm, int nn, int &mt, int &nt)
{
    const int group = GM * nn, g = t / group, first = g * GM, gsz = min(nm - first, GM), r = t - g * group;
    mt = first + r % gsz;
    nt = r / gsz;
}

// the schedule, walked identically by the producer and the consumers. 32-bit unsigned arithmetic: needs
// G * R * nk < 2^32 (R < G = 132: K below about 15 million)
struct Sched {
    unsigned G, dp, nk;  // CTAs, data-parallel tiles (a multiple of G), k-tiles per tile
    unsigned total;      // stream-K k-iterations (the last R tiles, tile-major)
    __device__ __forceinline__ unsigned start(unsigned cta) const { return cta * total / G; }
};
// a CTA's position in its work: data-parallel tiles blockIdx.x, + G, ... (k 0..nk), then the pieces of its
// stream-K range [start(blockIdx.x), start(blockIdx.x + 1))
struct Cursor {
    unsigned dp_next;  // next data-parallel tile, >= dp when done
    unsigned g, end;   // next stream-K iteration, end of the range
};
// the CTA's next unit (tile, k-tiles k0..k1); false when none is left
__device__ __forceinline__ bool next_unit(const Sched &sc, Cursor &cu, int &tile, int &k0, int &k1)
{
    if (cu.dp_next < sc.dp) {
        tile = (int)cu.dp_next;
        k0 = 0;
        k1 = (int)sc.nk;
        cu.dp_next += sc.G;
        return true;
    }
    if (cu.g >= cu.end) {
        return false;
    }
    const unsigned j = cu.g / sc.nk, kb = cu.g - j * sc.nk, ke = min(sc.nk, kb + (cu.end - cu.g));
    tile = (int)(sc.dp + j);
    k0 = (int)kb;
    k1 = (int)ke;
    cu.g += ke - kb;
    return true;
}

__device__ __forceinline__ void flag_release(int *p)
{
    asm volatile("fence.acq_rel.gpu;\n\tst.relaxed.gpu.global.s32 [%0], 1;" ::"l"(p) : "memory");
}
__device__ __forceinline__ int flag_acquire(const int *p)
{
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void flag_clear(int *p)
{
    asm volatile("st.relaxed.gpu.global.s32 [%0], 0;" ::"l"(p) : "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
              const __grid_constant__ CUtensorMap tmC, float *__restrict__ C, int M, int N, int K, int c_tma,
              float *__restrict__ ws, int *flags)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t sA = base, sB = base + STAGES * A_BYTES, sC = sB + STAGES * B_BYTES;
    const uint32_t full = sC + NCONS * C_STAGE_BYTES, empty = full + 8 * STAGES;
    const int tid = threadIdx.x, wg = tid / 128;
    const int nk = (K + BK - 1) / BK, nm = (M + BM - 1) / BM, nn = (N + BN - 1) / BN, ntiles = nm * nn;
    Sched sc;
    sc.G = gridDim.x;
    sc.nk = (unsigned)nk;
    sc.dp = (unsigned)ntiles - (unsigned)ntiles % sc.G;
    sc.total = ((unsigned)ntiles - sc.dp) * sc.nk;
    const unsigned bid = blockIdx.x;

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
            Cursor cu{bid, sc.start(bid), sc.start(bid + 1)};
            int t, k0, k1;
            while (next_unit(sc, cu, t, k0, k1)) {
                int mt, nt;
                tile_coords(t, nm, nn, mt, nt);
                for (int kt = k0; kt < k1; ++kt) {
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
        const int c = wg - 1, wg_tid = tid % 128, lane = tid % 32, w = wg_tid / 32, ctid = tid - 128;
        int s = 0, prev = 0;
        uint32_t ph = 0;
        float d[BN / 2];
        Cursor cu{bid, sc.start(bid), sc.start(bid + 1)};
        int t, k0, k1;
        while (next_unit(sc, cu, t, k0, k1)) {
            int mt, nt;
            tile_coords(t, nm, nn, mt, nt);
            for (int kt = k0; kt < k1; ++kt) {
                mbar_wait(full + 8 * s, ph);
                const uint64_t da = desc_sw128(sA + s * A_BYTES + c * 64 * 128), db = desc_sw128(sB + s * B_BYTES);
                wg_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    Wgmma<BN>::mma(d, da + 2 * kk, db + 2 * kk, (kt > k0 || kk > 0) ? 1 : 0);  // first: D = A*B
                }
                wg_commit();
                wg_wait<1>();
                if (kt > k0 && lane == 0) {
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
                mbar_arrive(empty + 8 * prev);  // the unit's last stage
            }
            float4 *slot = reinterpret_cast<float4 *>(ws);
            if (k0 > 0) {  // not the tile's head: hand the partial sum over and store nothing
                float4 *p = slot + (size_t)bid * (BN / 2 / 4) * 256 + ctid;
#pragma unroll
                for (int q = 0; q < BN / 8; ++q) {
                    p[q * 256] = make_float4(d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]);
                }
                named_sync(BAR_SK, 256);
                if (ctid == 0) {
                    flag_release(flags + bid);
                }
                continue;
            }
            if (k1 < nk) {  // the head of a split tile: add the pieces of the CTAs after this one
                const unsigned tile_end = ((unsigned)t - sc.dp + 1) * sc.nk;
                for (unsigned o = bid + 1; o < sc.G && sc.start(o) < tile_end; ++o) {
                    if (sc.start(o + 1) == sc.start(o)) {
                        continue;  // an empty range
                    }
                    if (ctid == 0) {
                        while (flag_acquire(flags + o) != 1) {
                        }
                        flag_clear(flags + o);
                    }
                    named_sync(BAR_SK, 256);
                    const float4 *p = slot + (size_t)o * (BN / 2 / 4) * 256 + ctid;
#pragma unroll
                    for (int q = 0; q < BN / 8; ++q) {
                        const float4 v = __ldcg(p + q * 256);
                        d[4 * q] += v.x;
                        d[4 * q + 1] += v.y;
                        d[4 * q + 2] += v.z;
                        d[4 * q + 3] += v.w;
                    }
                }
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

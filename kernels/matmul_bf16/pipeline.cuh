// The Hopper pipeline the BF16 rungs 3-7 share, each piece once: the shared-memory stages and their mbarriers,
// the stage ring (slot and phase), the producer's loop over a tile's k-tiles, the consumers' loop and their
// epilogue, and the grouped tile order. A rung's own file then holds its idea: who issues what (one thread of
// the block, or a producer warpgroup), which tiles a block takes (one, or a persistent walk; alone, or as a
// cluster pair), how a stage is loaded (plain or multicast) and released (here, or in both CTAs of a pair).
// Written from the PTX ISA (mbarrier phases and parity waits, wgmma groups) and the structure of CUTLASS 3's sm90
// mainloops (PipelineTmaAsync: full and empty barriers per stage, producer and consumer states); not a kernel.
#pragma once
#include "hopper.cuh"

constexpr int BK = 64;  // a k-tile: 64 bf16 = one 128-byte swizzled row per tile row, what the TMA box and wgmma read
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;  // setmaxnreg: the producer warpgroup gives, consumers take

// The block's dynamic shared memory: NST stages of an A tile (TILE_M x BK) and a B tile (TILE_N x BK), C_BYTES of
// staging for C's TMA stores, then a full and an empty mbarrier per stage; from a 1024-B aligned base (the
// 128-byte swizzle's atom).
template <int TILE_M, int TILE_N, int NST, int C_BYTES = 0> struct Stages {
    static constexpr int A_BYTES = TILE_M * 128, B_BYTES = TILE_N * 128, TX = A_BYTES + B_BYTES;
    static constexpr int SMEM = NST * TX + C_BYTES + 1024 + 16 * NST;  // the alignment slack, the barriers
    uint32_t a, b, c, full, empty;
    __device__ __forceinline__ explicit Stages(const uint8_t *raw)
    {
        a = (smem_u32(raw) + 1023) & ~1023u;
        b = a + NST * A_BYTES;
        c = b + NST * B_BYTES;
        full = c + C_BYTES;
        empty = full + 8 * NST;
    }
    __device__ __forceinline__ uint32_t a_at(int s) const { return a + s * A_BYTES; }
    __device__ __forceinline__ uint32_t b_at(int s) const { return b + s * B_BYTES; }
    // thread 0: the tensor maps prefetched, each stage's full barrier (one arrival: the producer's, with the TMA's
    // bytes) and, where `readers` > 0, its empty barrier (`readers` arrivals) initialised
    __device__ __forceinline__ void init(const CUtensorMap *mapA, const CUtensorMap *mapB, uint32_t readers) const
    {
        if (threadIdx.x == 0) {
            tma_prefetch_map(mapA);
            tma_prefetch_map(mapB);
            for (int s = 0; s < NST; ++s) {
                mbar_init(full + 8 * s, 1);
                if (readers) {
                    mbar_init(empty + 8 * s, readers);
                }
            }
            mbar_init_fence();
        }
    }
};

// Where the producer and each consumer are in the ring of stages: the stage and the parity of its current phase.
// Both walk the k-tiles in the same order, so a k-tile sits at the same (s, ph) for both.
template <int NST> struct Ring {
    int s = 0;
    uint32_t ph = 0;
    __device__ __forceinline__ void next()
    {
        if (++s == NST) {
            s = 0;
            ph ^= 1;
        }
    }
};

// The producer's loop over one tile's nk k-tiles: wait until the stage is empty, announce its bytes on its full
// barrier, and `load(s, full barrier, k)` it.
template <int NST, class Load>
__device__ __forceinline__ void produce(Ring<NST> &ring, uint32_t full, uint32_t empty, int nk, uint32_t bytes,
                                        Load load)
{
    for (int kt = 0; kt < nk; ++kt) {
        mbar_wait(empty + 8 * ring.s, ring.ph ^ 1);  // a fresh barrier passes parity 1 at once
        mbar_expect_tx(full + 8 * ring.s, bytes);
        load(ring.s, full + 8 * ring.s, kt * BK);
        ring.next();
    }
}

// A consumer warpgroup's loop over one tile's nk k-tiles: wait until the stage is full, `mma(s, kt)` (the
// wgmmas of one k-tile, as one group), keep that group in flight and, once the previous one is done, `release`
// the previous k-tile's stage (lane 0 of each warp). `prev` is left on the tile's last stage, still held.
template <int NST, class Mma, class Release>
__device__ __forceinline__ void consume(Ring<NST> &ring, int &prev, uint32_t full, int nk, Mma mma,
                                        Release release)
{
    const bool lane0 = threadIdx.x % 32 == 0;
    for (int kt = 0; kt < nk; ++kt) {
        mbar_wait(full + 8 * ring.s, ring.ph);
        wg_fence();
        mma(ring.s, kt);
        wg_commit();
        wg_wait<1>();  // k-tile kt-1's group is done: its stage can be refilled
        if (kt > 0 && lane0) {
            release(prev);
        }
        prev = ring.s;
        ring.next();
    }
}

// The wgmmas of one k-tile for a warpgroup's 64 x TN accumulators, A and B tiles at shared addresses a and b;
// `first`: the tile's first k-tile, where D = A * B instead of D += A * B
template <int TN>
__device__ __forceinline__ void mma_ktile(float (&d)[TN / 2], uint32_t a, uint32_t b, bool first)
{
    const uint64_t da = desc_sw128(a), db = desc_sw128(b);
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
        Wgmma<TN>::mma(d, da + 2 * kk, db + 2 * kk, (first && kk == 0) ? 0 : 1);
    }
}

// How a consumer warp frees a stage: an arrival on its empty barrier, in its own CTA (CTAS 1) or, through mapa, in
// both CTAs of a cluster pair (CTAS 2: each stage is refilled by multicasts that land in both)
template <int CTAS> struct Release {
    uint32_t empty;
    __device__ __forceinline__ void operator()(int s) const
    {
        if (CTAS == 1) {
            mbar_arrive(empty + 8 * s);
        } else {
            mbar_arrive_cluster(empty + 8 * s, 0);
            mbar_arrive_cluster(empty + 8 * s, 1);
        }
    }
};

// The wgmmas of a tile done (the tile's last group waited on, its accumulators `acc` fenced) and its last stage
// freed
template <class Release, class... Acc> __device__ __forceinline__ void retire(int prev, Release release, Acc &...acc)
{
    wg_wait<0>();
    (fence_acc(acc), ...);
    if (threadIdx.x % 32 == 0) {
        release(prev);
    }
}

// Tile t of an nm x nn grid of tiles, taken in groups of G tile-rows, column by column inside a group: tiles t and
// t + 1 share their B tile, and the tiles in flight at once touch G rows of A and about (resident tiles) / G
// columns of B, which the L2 keeps (Triton's "grouped ordering", CUTLASS's rasterization swizzle)
template <int G> __device__ __forceinline__ void grouped(int t, int nm, int nn, int &mt, int &nt)
{
    const int group = G * nn, g = t / group, first = g * G, gsz = min(nm - first, G), r = t - g * group;
    mt = first + r % gsz;
    nt = r / gsz;
}

// A consumer warpgroup's 64 x TN block of C at (m0, n0): by the TMA from its staging buffer `stage` where the rung
// stores so (TMA_STORE) and the launch gave C's tensor map (c_tma: N % 4 == 0), else by direct stores, whole
// 8-byte pairs where the block lies inside C, element by element at the edges
template <int TN, bool TMA_STORE>
__device__ __forceinline__ void store_block(const float (&d)[TN / 2], const CUtensorMap *mapC, uint32_t stage,
                                            float *C, int M, int N, int m0, int n0, bool c_tma, int bar_id)
{
    const int wg_tid = threadIdx.x % 128, lane = wg_tid % 32, w = wg_tid / 32;
    if (TMA_STORE && c_tma) {
        store_tma<TN>(d, mapC, stage, m0, n0, wg_tid, bar_id);
        return;
    }
    const bool fast = (m0 + 64 <= M) && (n0 + TN <= N) && (N % 2 == 0);
    store_direct<TN>(d, C, M, N, m0 + 16 * w + (lane >> 2), n0 + 2 * (lane & 3), fast);
}

// After a consumer's last tile: its TMA stores have completed before the block may end
template <bool TMA_STORE> __device__ __forceinline__ void store_drain(bool c_tma)
{
    if (TMA_STORE && c_tma && threadIdx.x % 128 == 0) {
        bulk_wait<0>();
    }
}

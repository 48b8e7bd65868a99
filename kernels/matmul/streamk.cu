// streamk: `interior` as a persistent kernel. One block per SM (grid = the
// GPU's SM count: SMS in the catalog) walks the tiles of C a wave at a time;
// when the last wave would leave at least SK_IDLE_PCT% of the SMs idle, the
// k iterations of its tiles are split evenly over every block instead
// (Stream-K). A block whose share of such a tile is not the whole of it
// writes its partial tile to a workspace; the block that completes the
// tile's k iterations (a per-tile counter, atomicAdd) sums the partial tiles
// in k order (so the result does not depend on which block came last) and
// writes C. A block takes the later of its two tiles first (its share of it
// starts at k = 0, as most blocks' do): 1.7 to 2.5 points of cuBLAS faster
// than the other order where every wave is split, the same at 8192.
//
// Source: Osama et al., "Stream-K: Work-centric Parallel Decomposition for
// Dense Matrix-Matrix Multiplication on the GPU" (PPoPP 2023), its
// data-parallel + Stream-K hybrid; CUTLASS's persistent tile schedulers;
// issue 19's "what the last partial wave costs (split-K or stream-K)". The
// exploration on an H100 (data/checks/race-explore-h100, rounds 10 to 17)
// chose the 8 x 8 thread tiles and the 25% rule.
//
// Adds over `interior`: at 8192 with 256 x 128 tiles there are 2048 tiles for
// 132 SMs (one block each): 15.5 waves take the time of 16. Here the last
// half wave is spread over every SM. A k iteration of a split tile runs about
// 1.35 times as long as one of a whole tile on an H100 (stamped with
// %globaltimer: SK_TRACE, tools/race/trace.py), waiting on its global loads
// (split at 4096, the kernel's long-scoreboard stalls rise from 0.02 to 0.14
// per issue), so splitting pays only
// when the last wave leaves many SMs idle: at 4096 (3.88 waves) it runs whole,
// the blocks staying resident from tile to tile.
// The counter it should move: SM active cycles against elapsed cycles
// (sm__cycles_active.avg over sm__cycles_elapsed.avg), at the same FFMA work
// plus the partial tiles' traffic (two or three 128 KiB tiles per split
// tile, in the L2).
//
// Constraints: launches of one build must not overlap (the workspace and the
// counters are the module's own, and each completing block resets its
// counter); a grid wider than SK_MAX_BLOCKS runs whole waves only (correct,
// with the partial wave).

#include "../need.cuh"
#include "interior.cuh"

#ifndef SK_MAX_BLOCKS
#define SK_MAX_BLOCKS 160  // the workspace: 2 tiles of 128 KiB per block, 40 MiB
#endif
NEED(SK_IDLE_PCT);
constexpr int TILE_FLOATS = WMITER * TM * WNITER * TN * NT;  // BM * BN, as the threads hold it

// SK_TRACE=1 (tools/race/trace.py): thread 0 of each block stamps the GPU's nanosecond clock at the phases'
// ends into sk_trace (start, whole tiles done, each split tile's product and fixup, end); off in the catalog
#if SK_TRACE
__device__ unsigned long long sk_trace[SK_MAX_BLOCKS * 8];
#define SK_MARK(i)                                                                          \
    if (threadIdx.x == 0) {                                                                 \
        unsigned long long ns;                                                              \
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));                             \
        sk_trace[blockIdx.x * 8 + (i)] = ns;                                                \
    }
#else
#define SK_MARK(i)
#endif

__device__ float sk_partials[SK_MAX_BLOCKS * 2 * TILE_FLOATS];  // each block's (at most two) partial tiles
__device__ unsigned int sk_done[SK_MAX_BLOCKS];                 // per left-over tile: k iterations summed so far

// acc = the product of this block's tile over k iterations [i0, i1) (BK deep each). The choice between the
// interior and edge movers repeats matmul_interior's on purpose: one helper shared by both kernels made ptxas
// allocate them differently, and `streamk` 2-4 points of cuBLAS slower (data/checks/race-explore-h100, round 18)
__device__ __forceinline__ void tile_product(const float *A, const float *B, int M, int N, int K, const BlockPos &b,
                                             int i0, int i1, float (*As)[BK * BM], float (*Bs)[BK * BN],
                                             float (&acc)[WMITER * TM][WNITER * TN])
{
    zero(acc);
    const int k0 = i0 * BK, k1 = min(i1 * BK, K);
    if (b.vec && b.row0 + BM <= M && b.col0 + BN <= N && K % BK == 0) {
        double_buffered_product<AInteriorTile<BM, BK, NT>, BInteriorTile<BK, BN, NT>>(A, B, M, N, K, b, As, Bs, acc,
                                                                                      k0, k1);
    } else {
        double_buffered_product<ASwizzledTile<BM, BK, NT>, BTile<BK, BN, NT>>(A, B, M, N, K, b, As, Bs, acc, k0,
                                                                               k1);
    }  // the loop's last barrier: every warp is done with the shared tiles before the next tile's stores
}

// the first of the left-over iterations that block g takes (R of them over G blocks)
__device__ __forceinline__ long long sk_first(long long R, int G, int g)
{
    return R * g / G;
}

// the block whose share holds left-over iteration x
__device__ __forceinline__ int sk_owner(long long x, long long R, int G)
{
    int g = (int)(x * G / R);
    while (g + 1 < G && sk_first(R, G, g + 1) <= x) {
        ++g;
    }
    while (g > 0 && sk_first(R, G, g) > x) {
        --g;
    }
    return g;
}

extern "C" __global__ void __launch_bounds__(NT, 1)
    matmul_streamk(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK * BM];
    __shared__ __align__(16) float Bs[2][BK * BN];
    __shared__ bool completes;

    BlockPos b = block_pos(A, B, C, N, K);
    const int G = gridDim.x, g = blockIdx.x;
    const int tiles_n = (N + BN - 1) / BN;
    const int T = ((M + BM - 1) / BM) * tiles_n;  // tiles of C
    const int I = (K + BK - 1) / BK;              // k iterations of a tile
    // the tiles of the partial wave, split over every block if they leave at least SK_IDLE_PCT% of the SMs idle
    int left = T % G;
    if (G > SK_MAX_BLOCKS || left * 100 > G * (100 - SK_IDLE_PCT)) {
        left = 0;
    }
    const int whole = T - left;
    float acc[WMITER * TM][WNITER * TN];
    SK_MARK(0);
    for (int t = g; t < whole; t += G) {  // whole tiles, a wave at a time
        b.row0 = (t / tiles_n) * BM, b.col0 = (t % tiles_n) * BN;
        tile_product(A, B, M, N, K, b, 0, I, As, Bs, acc);
        warp_tile_store(C, M, N, b, acc);
    }
    SK_MARK(1);
    if (left == 0 || I == 0) {
        return;
    }
    const long long R = (long long)left * I;  // the split tiles' k iterations, shared out over the blocks
    const long long begin = sk_first(R, G, g), end = sk_first(R, G, g + 1);
    const int nseg = begin == end ? 0 : (int)((end - 1) / I - begin / I) + 1;  // split tiles of this block
    for (int q = 0; q < nseg; ++q) {
        const int seg = nseg - 1 - q;  // the later tile first: its share starts at k = 0, as most blocks' do
        const int s = (int)(begin / I) + seg;  // the split tile
        const int i0 = (int)(max(begin, (long long)s * I) - (long long)s * I);
        const int i1 = (int)(min(end, (long long)(s + 1) * I) - (long long)s * I);
        const int t = whole + s;
        b.row0 = (t / tiles_n) * BM, b.col0 = (t % tiles_n) * BN;
        tile_product(A, B, M, N, K, b, i0, i1, As, Bs, acc);
        SK_MARK(2 + 2 * q);
        if (i0 == 0 && i1 == I) {
            warp_tile_store(C, M, N, b, acc);
            continue;
        }
        float *mine = sk_partials + ((size_t)g * 2 + seg) * TILE_FLOATS;
#pragma unroll
        for (int i = 0; i < WMITER * TM; ++i) {
#pragma unroll
            for (int j = 0; j < WNITER * TN; ++j) {
                __stcg(&mine[(i * WNITER * TN + j) * NT + b.tid], acc[i][j]);
            }
        }
        __threadfence();
        __syncthreads();
        if (b.tid == 0) {
            completes = atomicAdd(&sk_done[s], (unsigned)(i1 - i0)) + (unsigned)(i1 - i0) == (unsigned)I;
        }
        __syncthreads();
        SK_MARK(3 + 2 * q);
        if (!completes) {
            continue;
        }
        __threadfence();
        // every share of tile s, in k order: blocks first .. last (a block's slot: 0 if s is its first tile)
        const int first = sk_owner((long long)s * I, R, G), last = sk_owner((long long)(s + 1) * I - 1, R, G);
        zero(acc);
        for (int o = first; o <= last; ++o) {
            const long long o0 = sk_first(R, G, o);
            if (o0 == sk_first(R, G, o + 1)) {
                continue;  // an empty share
            }
            const float *part = sk_partials + ((size_t)o * 2 + (o0 / I == s ? 0 : 1)) * TILE_FLOATS;
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i) {
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j) {
                    acc[i][j] += __ldcg(&part[(i * WNITER * TN + j) * NT + b.tid]);
                }
            }
        }
        warp_tile_store(C, M, N, b, acc);
        if (b.tid == 0) {
            sk_done[s] = 0;  // ready for the next launch
        }
        SK_MARK(3 + 2 * q);
    }
    SK_MARK(7);
}

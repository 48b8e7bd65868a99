// The pieces of `double_buffer` (double_buffer.cu) that the rungs above it build on; its kernel is in double_buffer.cu.
#pragma once

#include "warptile.cuh"

// The double-buffered main loop over k in [k0, k1) (k0 a multiple of BK; the whole of K unless a rung splits
// it, as `streamk` does), for any tile movers AT (A's BM x BK tile) and BT (B's BK x BN tile) with fetch() and
// store() as in tile_io.cuh: `swizzled` and `interior` run it with their own movers.
template <class AT, class BT>
__device__ __forceinline__ void double_buffered_product(const float *__restrict__ A, const float *__restrict__ B,
                                                        int M, int N, int K, const BlockPos &b,
                                                        float (*As)[BK * BM], float (*Bs)[BK * BN],
                                                        float (&acc)[WMITER * TM][WNITER * TN], int k0 = 0,
                                                        int k1 = -1)
{
    const int row0 = b.row0, col0 = b.col0, tid = b.tid;
    const bool vec = b.vec;
    if (k1 < 0) {
        k1 = K;
    }
    AT at;
    BT bt;
    at.fetch(A, M, K, row0, k0, vec, tid);
    bt.fetch(B, N, K, k0, col0, vec, tid);
    at.store(As[0], tid);
    bt.store(Bs[0], tid);
    __syncthreads();

    int cur = 0;
    for (int t = k0; t < k1; t += BK) {
        const bool more = t + BK < k1;
        if (more) {  // issue the next step's loads; their registers are read after the product
            at.fetch(A, M, K, row0, t + BK, vec, tid);
            bt.fetch(B, N, K, t + BK, col0, vec, tid);
        }
        warp_tile_product<AT>(As[cur], Bs[cur], b.w, acc);
        if (more) {
            // the other buffer was last read in the previous step, before that step's barrier
            at.store(As[cur ^ 1], tid);
            bt.store(Bs[cur ^ 1], tid);
        }
        __syncthreads();
        cur ^= 1;
    }
}

// A double-buffered rung's block from start to end: its place, its accumulators zeroed, `product(b, As, Bs, acc)`
// (a double_buffered_product with the rung's tile movers) on two shared buffers of each tile, its tile of C stored
template <class Product>
__device__ __forceinline__ void double_buffered_block(const float *__restrict__ A, const float *__restrict__ B,
                                                      float *__restrict__ C, int M, int N, int K, Product product)
{
    __shared__ __align__(16) float As[2][BK * BM];
    __shared__ __align__(16) float Bs[2][BK * BN];

    const BlockPos b = block_pos(A, B, C, N, K);
    float acc[WMITER * TM][WNITER * TN];
    zero(acc);
    product(b, As, Bs, acc);
    warp_tile_store(C, M, N, b, acc);
}

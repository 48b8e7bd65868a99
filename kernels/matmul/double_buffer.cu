// double_buffer: the warp-tiled product with two shared-memory buffers and
// the next tiles fetched from global memory into registers while the current
// ones are multiplied; one barrier per BK step instead of two.
//
// Source: the double-buffering rung of the public SGEMM ladders and the
// register-prefetch software pipeline of CUTLASS's SGEMM mainloop (and of the
// seeds' `prefetch`, here at the warp-tile level); issue 11's rung 5. The
// fragment product and epilogue are `warptile`'s (included below).
//
// Adds over `warptile`: the latency of the global loads of step t+1 hides
// behind the FFMAs of step t (the loads are issued before the product and
// their registers are only read after it), and the second buffer removes the
// barrier that kept the next store from overwriting tiles still being read.
// The counters it should move: the stall reasons "long scoreboard" (waiting
// on global loads) and "barrier", and with them issue-slot utilisation.
// cp.async is not used: A must be transposed on its way into shared memory,
// which an asynchronous copy cannot do; the register stage does it.
//
// Launch and edges as `warptile` (same defines). The main loop is a template over the tile movers, so
// that the rungs above (`swizzled`, `interior`) change how tiles move, not the loop.

#define matmul_warptile matmul_warptile_unused_in_double_buffer
#include "warptile.cu"
#undef matmul_warptile

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
        warp_tile_product(As[cur], Bs[cur], b.w, acc);
        if (more) {
            // the other buffer was last read in the previous step, before that step's barrier
            at.store(As[cur ^ 1], tid);
            bt.store(Bs[cur ^ 1], tid);
        }
        __syncthreads();
        cur ^= 1;
    }
}

extern "C" __global__ void __launch_bounds__(NT) matmul_double_buffer(const float *__restrict__ A,
                                                                     const float *__restrict__ B,
                                                                     float *__restrict__ C,
                                                                     int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK * BM];
    __shared__ __align__(16) float Bs[2][BK * BN];

    const BlockPos b = block_pos(A, B, C, N, K);
    float acc[WMITER * TM][WNITER * TN];
    zero(acc);
    double_buffered_product<ATile<BM, BK, NT>, BTile<BK, BN, NT>>(A, B, M, N, K, b, As, Bs, acc);
    warp_tile_store(C, M, N, b, acc);
}

// double_buffer: the warp-tiled product with two shared-memory buffers and
// the next tiles fetched from global memory into registers while the current
// ones are multiplied; one barrier per BK step instead of two.
//
// Source: the double-buffering rung of the public SGEMM ladders and the
// register-prefetch software pipeline of CUTLASS's SGEMM mainloop (and of the
// seeds' `prefetch`, here at the warp-tile level); issue 11's rung 5. The
// fragment product and epilogue are `warptile`'s (warptile.cuh).
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

#include "double_buffer.cuh"

extern "C" __global__ void __launch_bounds__(NT)
    matmul_double_buffer(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                         int M, int N, int K)
{
    double_buffered_block(A, B, C, M, N, K, [&](const BlockPos &b, auto As, auto Bs, auto &acc) {
        double_buffered_product<ATile<BM, BK, NT>, BTile<BK, BN, NT>>(A, B, M, N, K, b, As, Bs, acc);
    });
}

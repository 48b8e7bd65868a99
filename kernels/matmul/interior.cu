// interior: `swizzled` with an interior fast path: a block whose tiles lie
// wholly inside A, B and C (and K a multiple of BK, every matrix 16-byte
// aligned) fetches them with plain 128-bit loads, without the per-float4
// bounds checks and the element-wise fallback of tile_io.cuh; the blocks on
// the edges keep them.
//
// Source: issue 19's second rung; the "interior / residue" split of CUTLASS's
// predicated tile iterators. Its catalog entry is also the race's tuning
// search: `tune` lists the block, warp and thread tiles tried on the run's GPU
// (each a build of its own, verified and timed like every variant; the ladder
// shows the fastest). The first is cuBLAS's own block shape on Hopper
// (256 x 128 x 8 over 8 warps of 64 x 64, 8 x 16 per thread): the exploration
// on an H100 (data/checks/race-explore-h100) found it the fastest, and found
// that the fast path, not the shape alone, lifts it (86% of cuBLAS with the
// checks, 92% without them, in the same run).
//
// The counter it should move: issue-slot utilisation, through fewer
// instructions per FFMA in the loads (the checks' integer and predicate work),
// at unchanged DRAM and shared-memory traffic.

#include "interior.cuh"

extern "C" __global__ void __launch_bounds__(NT, 1)
    matmul_interior(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                    int M, int N, int K)
{
    double_buffered_block(A, B, C, M, N, K, [&](const BlockPos &b, auto As, auto Bs, auto &acc) {
        if (b.vec && b.row0 + BM <= M && b.col0 + BN <= N && K % BK == 0) {
            double_buffered_product<AInteriorTile<BM, BK, NT>, BInteriorTile<BK, BN, NT>>(A, B, M, N, K, b, As, Bs,
                                                                                          acc);
        } else {
            double_buffered_product<ASwizzledTile<BM, BK, NT>, BTile<BK, BN, NT>>(A, B, M, N, K, b, As, Bs, acc);
        }
    });
}

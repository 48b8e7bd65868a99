// warptile: a three-level tiling. A block computes a BM x BN tile of C, each
// of its warps a WM x WN warp tile, each thread WMITER x WNITER thread tiles of
// TM x TN (its slices of the warp tile, WSUBM x WSUBN apart).
//
// Source: the "warptiling" rung of the public SGEMM ladders and CUTLASS's
// threadblock / warp / thread hierarchy; issue 11's rung 4. Loads and edges:
// tile_io.cuh (float4 where the shapes allow, A transposed in shared memory).
//
// Adds over `vectorized`: the 32 threads of a warp read one compact WM x WN
// region of the shared tiles. For a step k, a warp's fragment reads of B cover
// WSUBN consecutive floats per sub-tile (no bank conflicts, one wavefront per
// LDS.128), and the fragments of A are shared by the lanes of a row
// (broadcast). The counters it should move: shared-memory bank conflicts and
// wavefronts per shared load, and the stall reason "MIO throttle" / "short
// scoreboard" that the shared-memory pipe causes; registers per thread rise
// (WMITER*TM*WNITER*TN accumulators), so achieved occupancy is the price.
//
// Launch: NT = 32*(BM/WM)*(BN/WN) threads, grid (cdiv(N, BN), cdiv(M, BM)).
// The fragment product and the epilogue are device functions that
// `double_buffer` reuses.

#include "warptile.cuh"

extern "C" __global__ void __launch_bounds__(NT)
    matmul_warptile(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                    int M, int N, int K)
{
    __shared__ __align__(16) float As[BK * BM];
    __shared__ __align__(16) float Bs[BK * BN];

    const BlockPos b = block_pos(A, B, C, N, K);
    float acc[WMITER * TM][WNITER * TN];
    zero(acc);
    ATile<BM, BK, NT> at;
    BTile<BK, BN, NT> bt;

    for (int t = 0; t < K; t += BK) {
        at.fetch(A, M, K, b.row0, t, b.vec, b.tid);
        bt.fetch(B, N, K, t, b.col0, b.vec, b.tid);
        at.store(As, b.tid);
        bt.store(Bs, b.tid);
        __syncthreads();
        warp_tile_product<ATile<BM, BK, NT>>(As, Bs, b.w, acc);
        __syncthreads();
    }
    warp_tile_store(C, M, N, b, acc);
}

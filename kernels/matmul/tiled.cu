// tiled: each block stages a TILE x TILE tile of A and of B in shared memory,
// and every thread computes one element of C from the staged tiles.
//
// Source: seed 000 Section 3.4, Figure 5 and Table 3 (tiles 4 to 16 on G80);
// seed 002's "tiled" kernels (block 16 and 32); seed 003's SDK matrixMul.
//
// Adds over `naive`: reuse. Each element loaded from global memory is read
// TILE times from shared memory, so global traffic drops by a factor of TILE
// and every global load is coalesced (threadIdx.x runs along rows of both
// tiles). TILE is a compile-time define (4 to 32: TILE*TILE threads must fit
// in a 1024-thread block), so the inner loop has a constant trip count that
// the compiler unrolls.
//
// Edges: tiles that overhang A or B are padded with zeros, and only threads
// inside C write, so M, N and K need not be multiples of TILE (12 included).
//
// NO_UNROLL=1 keeps the inner product loop rolled (`#pragma unroll 1`): that
// build is the `tiled_nounroll` variant, seed 000's "tiled" against "tiled and
// unrolled" (Section 3.5, Figure 7).

#include "tiled.cuh"

extern "C" __global__ void
    matmul_tiled(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const auto [tx, ty, row, col] = tile_thread();

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        // Each thread loads one element of each tile; zeros beyond the edges.
        As[ty][tx] = (row < M && t + tx < K) ? A[(size_t)row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(size_t)(t + ty) * N + col] : 0.0f;
        __syncthreads();
#if NO_UNROLL
#pragma unroll 1
#else
#pragma unroll
#endif
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();  // the tiles are overwritten by the next step
    }
    if (row < M && col < N) {
        C[(size_t)row * N + col] = acc;
    }
}

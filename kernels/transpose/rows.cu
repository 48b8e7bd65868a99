// rows: the padded transpose with a TILE x BLOCK_ROWS block walking its
// TILE x TILE tile, each thread moving TILE / BLOCK_ROWS elements.
//
// Source: the classic CUDA transpose study (Harris, "An Efficient Matrix
// Transpose in CUDA C/C++", transposeNoBankConflicts with TILE_DIM 32,
// BLOCK_ROWS 8), beyond seed 002.
//
// Adds over `padded`: 256 threads per block instead of 1024, each issuing
// four loads before it stores: more bytes in flight per thread, cheaper
// index arithmetic per element, and more blocks per SM (a 1024-thread block
// leaves an SM with at most 2 blocks). Same access pattern per warp: reads
// and writes coalesced, no bank conflicts.

#ifndef TILE
#define TILE 32
#endif
#include "../need.cuh"
// BLOCK_ROWS: any 1..TILE; the last step of a walk stops at the tile's edge
NEED(BLOCK_ROWS);

extern "C" __global__ void transpose_rows(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    __shared__ float tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x = blockIdx.x * TILE + tx;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int r = ty + j;
        const int y = blockIdx.y * TILE + r;
        if (r < TILE && x < N && y < M) {
            tile[r][tx] = in[(size_t)y * N + x];
        }
    }
    __syncthreads();
    const int ox = blockIdx.y * TILE + tx;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int r = ty + j;
        const int oy = blockIdx.x * TILE + r;
        if (r < TILE && ox < M && oy < N) {
            out[(size_t)oy * M + ox] = tile[tx][r];
        }
    }
}

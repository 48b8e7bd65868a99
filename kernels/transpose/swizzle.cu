// swizzle: `rows` with an XOR-swizzled tile instead of a padded one.
//
// Source: the swizzled shared-memory layouts of CUTLASS and of Hopper's
// tensor-memory accelerator, applied to the classic transpose; beyond seed 002.
//
// Adds over `rows`: element (r, c) of the 32 x 32 tile is stored at column
// c ^ r of row r. A warp writing a row (fixed r, c = 0..31) hits columns
// c ^ r, all different; a warp reading a column (fixed c, r = 0..31) hits
// banks (c ^ r) mod 32, all different: no bank conflicts, as with padding,
// but without the 33rd column (a tile of exactly 4 KiB, and addresses a
// 16-byte access could use). The counter: shared bank conflicts, zero.

#define TILE 32
#include "../need.cuh"
NEED(BLOCK_ROWS);

extern "C" __global__ void transpose_swizzle(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    __shared__ float tile[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x = blockIdx.x * TILE + tx;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int r = ty + j;
        const int y = blockIdx.y * TILE + r;
        if (x < N && y < M) {
            tile[r][tx ^ r] = in[(size_t)y * N + x];
        }
    }
    __syncthreads();
    const int ox = blockIdx.y * TILE + tx;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int c = ty + j;  // column of the tile = row of out within the tile
        const int oy = blockIdx.x * TILE + c;
        if (ox < M && oy < N) {
            out[(size_t)oy * M + ox] = tile[tx][c ^ tx];
        }
    }
}

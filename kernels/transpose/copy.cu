// copy: the same tiles and indexing as the transposes, with no transpose:
// out = in, both M x N row-major. The ceiling every transpose is measured
// against (a transpose moves the same bytes; anything it loses to the copy
// is the price of turning rows into columns).
//
// Source: the CUDA SDK's transpose study ("copy" kernel, TILE_DIM 32,
// BLOCK_ROWS 8), as seed 002's transpose section presumes.
//
// A 32 x 8 block moves a 32 x 32 tile, each thread 4 elements one below the
// other: a warp reads and writes 32 consecutive floats (128 bytes) per step.
// Any M, N: threads outside the matrix do nothing.

#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void copy_tiled(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    const int x = blockIdx.x * TILE + threadIdx.x;   // column
    const int y0 = blockIdx.y * TILE + threadIdx.y;  // first row of this thread
    if (x >= N) {
        return;
    }
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int y = y0 + j;
        if (y < M) {
            out[(size_t)y * N + x] = in[(size_t)y * N + x];
        }
    }
}

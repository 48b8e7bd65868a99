// scalar_tile.cuh: one 32 x 32 tile of a transpose moved element by element
// by a block of 256 threads, through a tile with the XOR swizzle of
// `swizzle` (element (r, c) at column c ^ r). The 16-byte transposes (`vec4`,
// `pair`) take this path for the whole launch when M or N is not a multiple
// of 4 (their rows are then not 16-byte aligned).

#ifndef TILE
#define TILE 32
#endif

// the tile in tile-row `by` (input rows by*TILE ...) and tile-column blockIdx.x
__device__ __forceinline__ void scalar_tile(const float *__restrict__ in, float *__restrict__ out, int M, int N,
                                            float (*tile)[TILE], int by)
{
    // the block as 256 threads: thread t moves column t % 32 of rows t / 32, t / 32 + 8, ...
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    const int tx = t % TILE, ty = t / TILE;
    const int x = blockIdx.x * TILE + tx;
    for (int r = ty; r < TILE; r += 8) {
        const int y = by * TILE + r;
        if (x < N && y < M) {
            tile[r][tx ^ r] = in[(size_t)y * N + x];
        }
    }
    __syncthreads();
    const int ox = by * TILE + tx;
    for (int c = ty; c < TILE; c += 8) {
        const int oy = blockIdx.x * TILE + c;
        if (ox < M && oy < N) {
            out[(size_t)oy * M + ox] = tile[tx][c ^ tx];
        }
    }
}

// vec4: the swizzled transpose with 16-byte (float4) global accesses.
//
// Source: beyond seed 002: the 128-bit loads and stores HOPPER.md and the
// CUDA best-practices guide recommend for memory-bound kernels.
//
// Adds over `swizzle`: a block of 8 x 32 threads moves a 32 x 32 tile, each
// thread loading four float4 (4 rows x 4 consecutive columns) and storing
// four float4: a quarter of the load and store instructions for the same
// bytes (requests per byte fall 4x; sectors per request go from 4 to 16).
// The tile keeps the XOR swizzle, at the granularity of rows: element (r, c)
// sits at column c ^ r. 16-byte accesses need 16-byte aligned rows, so when
// M or N is not a multiple of 4 the kernel takes the scalar path of `swizzle`
// for the whole launch (a run-time branch, uniform across the grid;
// scalar_tile.cuh).

#include "scalar_tile.cuh"

extern "C" __global__ void transpose_vec4(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    __shared__ float tile[TILE][TILE];
    if ((M & 3) || (N & 3)) {
        scalar_tile(in, out, M, N, tile, blockIdx.y);
        return;
    }
    // blockDim = (8, 32): threadIdx.x picks 4 columns (a float4), threadIdx.y a row
    const int c4 = threadIdx.x * 4;  // first of this thread's 4 columns within the tile
    const int r = threadIdx.y;       // row within the tile
    const int x = blockIdx.x * TILE + c4;
    const int y = blockIdx.y * TILE + r;
    if (y < M && x < N) {  // N is a multiple of 4, so x < N means all 4 columns are inside
        const float4 v = *reinterpret_cast<const float4 *>(in + (size_t)y * N + x);
        tile[r][(c4 + 0) ^ r] = v.x;
        tile[r][(c4 + 1) ^ r] = v.y;
        tile[r][(c4 + 2) ^ r] = v.z;
        tile[r][(c4 + 3) ^ r] = v.w;
    }
    __syncthreads();
    // write: row `r` of the output tile (column r of the input tile), 4 consecutive output columns
    const int ox = blockIdx.y * TILE + c4;  // output column = input row
    const int oy = blockIdx.x * TILE + r;   // output row = input column
    if (oy < N && ox < M) {  // M is a multiple of 4
        float4 v;
        v.x = tile[c4 + 0][r ^ (c4 + 0)];
        v.y = tile[c4 + 1][r ^ (c4 + 1)];
        v.z = tile[c4 + 2][r ^ (c4 + 2)];
        v.w = tile[c4 + 3][r ^ (c4 + 3)];
        *reinterpret_cast<float4 *>(out + (size_t)oy * M + ox) = v;
    }
}

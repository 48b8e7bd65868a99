// pair: `vec4` with two 32 x 32 tiles per block, one below the other in the
// input (so one beside the other in the output).
//
// Source: issue 19's transpose exploration (data/checks/transpose-explore):
// on an H200, two tiles per block lifted the transpose from 84% to 89-90% of
// the device-to-device copy (on an H100 from 93% to 93-94%); four tiles and
// streaming cache hints did not help.
//
// Adds over `vec4`: each thread issues both of its float4 loads before its
// first shared-memory store, so twice the bytes in flight per thread (what
// HBM3e's higher bandwidth needs to be kept busy), and the block writes 256
// contiguous bytes of each of its 32 output rows instead of 128. The counter:
// DRAM throughput (bytes per second against the copy's), at the same bytes
// moved. Grid: cdiv(N, 32) x cdiv(M, 64). When M or N is not a multiple of 4
// the whole launch takes the scalar path (scalar_tile.cuh), tile by tile.

#include "scalar_tile.cuh"

#define TILES 2

extern "C" __global__ void transpose_pair(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    __shared__ float tile[TILES][TILE][TILE];
    if ((M & 3) || (N & 3)) {
        for (int t = 0; t < TILES; ++t) {
            scalar_tile(in, out, M, N, tile[t], blockIdx.y * TILES + t);
        }
        return;
    }
    // blockDim = (8, 32): threadIdx.x picks 4 columns (a float4), threadIdx.y a row of each tile
    const int c4 = threadIdx.x * 4;
    const int r = threadIdx.y;
    const int x = blockIdx.x * TILE + c4;
    float4 v[TILES];
    bool inside[TILES];
#pragma unroll
    for (int t = 0; t < TILES; ++t) {  // every load first
        const int y = (blockIdx.y * TILES + t) * TILE + r;
        inside[t] = y < M && x < N;  // N is a multiple of 4: the 4 columns are inside
        if (inside[t]) {
            v[t] = *reinterpret_cast<const float4 *>(in + (size_t)y * N + x);
        }
    }
#pragma unroll
    for (int t = 0; t < TILES; ++t) {  // element (r, c) of a tile at column c ^ r: no bank conflicts
        if (inside[t]) {
            tile[t][r][(c4 + 0) ^ r] = v[t].x;
            tile[t][r][(c4 + 1) ^ r] = v[t].y;
            tile[t][r][(c4 + 2) ^ r] = v[t].z;
            tile[t][r][(c4 + 3) ^ r] = v[t].w;
        }
    }
    __syncthreads();
    const int oy = blockIdx.x * TILE + r;  // output row = input column
#pragma unroll
    for (int t = 0; t < TILES; ++t) {
        const int ox = (blockIdx.y * TILES + t) * TILE + c4;  // output column = input row
        if (oy < N && ox < M) {  // M is a multiple of 4: the 4 rows are inside
            float4 w;
            w.x = tile[t][c4 + 0][r ^ (c4 + 0)];
            w.y = tile[t][c4 + 1][r ^ (c4 + 1)];
            w.z = tile[t][c4 + 2][r ^ (c4 + 2)];
            w.w = tile[t][c4 + 3][r ^ (c4 + 3)];
            *reinterpret_cast<float4 *>(out + (size_t)oy * M + ox) = w;
        }
    }
}

// The square tiling that `tiled`, `prefetch` and `coalesced_bt` share (seed 001 Section 4.2.3, seed 002 "Tiled"):
// a TILE x TILE block of threads computes a TILE x TILE tile of C, thread (tx, ty) the element C[row][col],
// staging TILE x TILE tiles of the operands in shared memory step by step along k. Each kernel's file shows how it
// loads the tiles; this is where a thread works.
#pragma once

#include "../need.cuh"
NEED(TILE);
static_assert(TILE >= 1 && TILE <= 32, "TILE must be 1..32: a block has TILE * TILE threads, at most 1024");

struct TileThread {
    int tx, ty;    // the thread's column and row in its block
    int row, col;  // the element of C it computes
};

__device__ __forceinline__ TileThread tile_thread()
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    return {tx, ty, (int)blockIdx.y * TILE + ty, (int)blockIdx.x * TILE + tx};
}

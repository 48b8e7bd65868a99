// How the block-tiled rungs (`blocktile_1d`, `blocktile_2d`) fill their shared tiles:
// element by element, consecutive threads on consecutive columns of the matrix (coalesced reads: along k for A's
// tile, along n for B's), zeros where the tile overhangs the matrix, so that any M, N, K works.
#pragma once

// A ROWS x COLS block of a row-major rows x cols matrix X at (r0, c0) into S (row-major: S[r * COLS + c]) by
// THREADS threads
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_block(float *S, const float *__restrict__ X, int rows, int cols, int r0, int c0,
                                           int tid)
{
#pragma unroll
    for (int e = tid; e < ROWS * COLS; e += THREADS) {
        const int r = e / COLS, c = e % COLS;
        S[e] = (r0 + r < rows && c0 + c < cols) ? X[(size_t)(r0 + r) * cols + c0 + c] : 0.0f;
    }
}

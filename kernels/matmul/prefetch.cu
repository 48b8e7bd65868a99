// prefetch: the tiled kernel that loads the next tiles into registers while
// the current ones are multiplied.
//
// Source: seed 002, "Prefetching the tile of data" ("initiating long-latency
// global loads into an additional local variable register long before the
// variable is used"), with loop unrolling.
//
// Adds over `tiled`: the global loads of step t+1 are issued before the inner
// product of step t, so their latency overlaps the arithmetic instead of
// stalling the warp after each __syncthreads(). The inner product loop is
// fully unrolled. Same tiles, same shared memory, two more registers.

#include "tiled.cuh"

extern "C" __global__ void
    matmul_prefetch(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                    int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const auto [tx, ty, row, col] = tile_thread();

    // the first tiles, into registers
    float a_next = (row < M && tx < K) ? A[(size_t)row * K + tx] : 0.0f;
    float b_next = (ty < K && col < N) ? B[(size_t)ty * N + col] : 0.0f;

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = a_next;
        Bs[ty][tx] = b_next;
        __syncthreads();
        const int tn = t + TILE;  // issue the next tiles' loads now; they land during the loop below
        a_next = (row < M && tn + tx < K) ? A[(size_t)row * K + tn + tx] : 0.0f;
        b_next = (tn + ty < K && col < N) ? B[(size_t)(tn + ty) * N + col] : 0.0f;
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[(size_t)row * N + col] = acc;
    }
}

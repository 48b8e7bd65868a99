// coalesced_bt: the tiled kernel reading B^T instead of B, so that both
// operands are read along rows.
//
// Source: seed 002, "Coalesced implementation": "an obvious solution is to
// transpose matrix B ... before offloading it". Here B is transposed on the
// GPU by transpose_b (transpose.cuh), timed and reported on its own.
//
// Adds over `tiled`: both tiles are loaded the same way, a row of A and a row
// of B^T per thread row, consecutive threads reading consecutive k. The cost
// moves into shared memory: the inner product reads Bs[tx][k], so the threads
// of a warp read one column of the tile, TILE words apart: with TILE = 16 or
// 32 those words sit in the same bank and the reads are serialised (bank
// conflicts, which `no_bank_conflict` removes).

#include "tiled.cuh"
#include "transpose.cuh"

#ifndef PAD
#define PAD 0  // no_bank_conflict.cu sets 1
#endif

extern "C" __global__ void
    matmul_coalesced_bt(const float *__restrict__ A, const float *__restrict__ BT, float *__restrict__ C,
                        int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + PAD];  // Bs[j][k] = B[k][col0 + j]

    const auto [tx, ty, row, col] = tile_thread();
    const int bt_row = blockIdx.x * TILE + ty;  // the row of B^T this thread loads

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M && t + tx < K) ? A[(size_t)row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (bt_row < N && t + tx < K) ? BT[(size_t)bt_row * K + t + tx] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[tx][k];  // a column of Bs across the warp
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[(size_t)row * N + col] = acc;
    }
}

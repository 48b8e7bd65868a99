// outer_product: each block computes a BM x BN tile of C by outer products.
// A's BM x BK tile is staged in shared memory; each thread owns one column of
// the C tile (BM accumulators in registers) and, at every step k, one element
// of B in a register: c[i] += As[i][k] * b for i = 0..BM-1.
//
// Source: seed 001 Section 4.2.4 ("compute optimized": "each thread loads a
// single element of B and a single column of C in registers") and seed 002,
// "Outer product"; the scheme of Volkov and Demmel's SGEMM.
//
// Adds over the tiled kernels: B never goes through shared memory and every
// element of A read from shared memory feeds a multiply-add whose other
// operand and accumulator are registers. All threads read the same As[i][k]
// (a broadcast, no bank conflict); a warp reads 32 consecutive elements of a
// row of B (coalesced). One global load of B per BM multiply-adds.
//
// UNROLL_K=0 (this variant) keeps the loop over k rolled; the loop over the
// BM accumulators is always unrolled, so that they stay in registers.
// UNROLL_K=1 is the `unrolled` variant (seed 001 Section 4.2.5).
// LAUNCH_BOUNDS=0 drops __launch_bounds__, which otherwise overrides nvcc's
// -maxrregcount: the `unrolled_cap` builds need the cap to apply.
// Edges: A's tile is zero-padded; B beyond K or N reads as zero; only columns
// and rows inside C are written.

#include "../need.cuh"
// BM: rows of the C tile, accumulators per thread; BN: columns of the C tile, threads per block; BK: depth of A's tile
NEED(BM); NEED(BN); NEED(BK); NEED(UNROLL_K);
#ifndef LAUNCH_BOUNDS
#define LAUNCH_BOUNDS 1
#endif
#if LAUNCH_BOUNDS
#define BOUNDS __launch_bounds__(BN)
#else
#define BOUNDS
#endif

extern "C" __global__ void BOUNDS
    matmul_outer_product(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                         int M, int N, int K)
{
    __shared__ float As[BM][BK];

    const int tid = threadIdx.x;
    const int col = blockIdx.x * BN + tid;
    const int row0 = blockIdx.y * BM;

    float c[BM];
#pragma unroll
    for (int i = 0; i < BM; ++i) {
        c[i] = 0.0f;
    }

    for (int t = 0; t < K; t += BK) {
        // BM*BK elements of A, BN threads: consecutive threads read consecutive k
#pragma unroll
        for (int e = tid; e < BM * BK; e += BN) {
            const int i = e / BK;
            const int kk = e % BK;
            As[i][kk] = (row0 + i < M && t + kk < K) ? A[(size_t)(row0 + i) * K + t + kk] : 0.0f;
        }
        __syncthreads();
#if UNROLL_K
#pragma unroll
#else
#pragma unroll 1
#endif
        for (int kk = 0; kk < BK; ++kk) {
            const float b = (t + kk < K && col < N) ? B[(size_t)(t + kk) * N + col] : 0.0f;
#pragma unroll
            for (int i = 0; i < BM; ++i) {
                c[i] += As[i][kk] * b;  // column kk of A's tile times one element of B
            }
        }
        __syncthreads();
    }
    if (col < N) {
#pragma unroll
        for (int i = 0; i < BM; ++i) {
            if (row0 + i < M) {
                C[(size_t)(row0 + i) * N + col] = c[i];
            }
        }
    }
}

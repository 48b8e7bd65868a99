// The pieces of `interior` (interior.cu) that the rungs above it build on; its kernel is in interior.cu.
#pragma once

#include "swizzled.cuh"

// the same tiles, fetched without bounds checks (only for blocks wholly inside the matrices)
template <int ROWS, int DEPTH, int THREADS>
struct AInteriorTile : ASwizzledTile<ROWS, DEPTH, THREADS> {
    __device__ __forceinline__ void fetch(const float *A, int, int K, int row0, int k0, bool, int tid)
    {
#pragma unroll
        for (int p = 0; p < ATile<ROWS, DEPTH, THREADS>::PER; ++p) {
            const int e = tid + p * THREADS;
            const int m = e / (DEPTH / 4), k = (e % (DEPTH / 4)) * 4;
            this->r[p] = *reinterpret_cast<const float4 *>(A + (size_t)(row0 + m) * K + k0 + k);
        }
    }
};

template <int DEPTH, int COLS, int THREADS>
struct BInteriorTile : BTile<DEPTH, COLS, THREADS> {
    __device__ __forceinline__ void fetch(const float *B, int N, int, int k0, int col0, bool, int tid)
    {
#pragma unroll
        for (int p = 0; p < BTile<DEPTH, COLS, THREADS>::PER; ++p) {
            const int e = tid + p * THREADS;
            const int k = e / (COLS / 4), n = (e % (COLS / 4)) * 4;
            this->r[p] = *reinterpret_cast<const float4 *>(B + (size_t)(k0 + k) * N + col0 + n);
        }
    }
};

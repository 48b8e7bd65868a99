// The pieces of `swizzled` (swizzled.cu) that the rungs above it build on; its kernel is in swizzled.cu.
#pragma once

#include "double_buffer.cuh"

static_assert(BM % 32 == 0, "the swizzle permutes columns within 32-float groups");
static_assert(BK == 8 || BK == 16 || BK == 32, "a swizzle of 4-float groups for BK / 4 of them in 32 banks");

// A's tile as ATile moves it, stored through the swizzle: column k of the transposed tile has its rows permuted
// by m ^ swizzle(k), the same for the four k of a float4 (the product reads As through it)
template <int ROWS, int DEPTH, int THREADS>
struct ASwizzledTile : ATile<ROWS, DEPTH, THREADS> {
    static __device__ __forceinline__ int swizzle(int k) { return ((k >> 2) % (DEPTH / 4)) * (128 / DEPTH); }

    __device__ __forceinline__ void store(float *As, int tid) const
    {
#pragma unroll
        for (int p = 0; p < ATile<ROWS, DEPTH, THREADS>::PER; ++p) {
            const int e = tid + p * THREADS;
            const int m = e / (DEPTH / 4), k = (e % (DEPTH / 4)) * 4;
            const int ms = m ^ swizzle(k);  // one swizzle for k .. k + 3 (a multiple of 4 apart)
            const float4 v = this->r[p];
            As[(k + 0) * ROWS + ms] = v.x;
            As[(k + 1) * ROWS + ms] = v.y;
            As[(k + 2) * ROWS + ms] = v.z;
            As[(k + 3) * ROWS + ms] = v.w;
        }
    }
};

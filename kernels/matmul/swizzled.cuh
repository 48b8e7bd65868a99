// The pieces of `swizzled` (swizzled.cu) that the rungs above it build on; its kernel is in swizzled.cu.
#pragma once

#include "tile_io.cuh"

#ifndef BK
#error "BK is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
#define A_SWIZZLE(k) ((((k) >> 2) % (BK / 4)) * (128 / BK))

#include "double_buffer.cuh"

static_assert(BM % 32 == 0, "the swizzle permutes columns within 32-float groups");
static_assert(BK == 8 || BK == 16 || BK == 32, "a swizzle of 4-float groups for BK / 4 of them in 32 banks");

// A's tile as ATile moves it, stored through the swizzle
template <int ROWS, int DEPTH, int THREADS>
struct ASwizzledTile : ATile<ROWS, DEPTH, THREADS> {
    __device__ __forceinline__ void store(float *As, int tid) const
    {
#pragma unroll
        for (int p = 0; p < ATile<ROWS, DEPTH, THREADS>::PER; ++p) {
            const int e = tid + p * THREADS;
            const int m = e / (DEPTH / 4), k = (e % (DEPTH / 4)) * 4;
            const int ms = m ^ A_SWIZZLE(k);  // one swizzle for k .. k + 3 (a multiple of 4 apart)
            const float4 v = this->r[p];
            As[(k + 0) * ROWS + ms] = v.x;
            As[(k + 1) * ROWS + ms] = v.y;
            As[(k + 2) * ROWS + ms] = v.z;
            As[(k + 3) * ROWS + ms] = v.w;
        }
    }
};

// The pieces of `warptile` (warptile.cu) that the rungs above it build on; its kernel is in warptile.cu.
#pragma once

#include "tile_io.cuh"

#include "../need.cuh"
NEED(BM); NEED(BN); NEED(BK); NEED(WM); NEED(WN); NEED(WNITER); NEED(TM); NEED(TN);
#define NT (32 * (BM / WM) * (BN / WN))
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)

static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert(WMITER >= 1 && (WM * WN) % (32 * TM * TN * WNITER) == 0, "the warp tile must split into lanes");
static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "a warp sub-tile is 32 thread tiles");
static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are read and written as float4");
static_assert(NT <= 1024, "threads per block");

struct WarpPos {
    int wr, wc;  // the warp's row and column of warp tiles in the block tile
    int tr, tc;  // the lane's row and column of thread tiles in a warp sub-tile
};

__device__ __forceinline__ WarpPos warp_pos(int tid)
{
    const int warp = tid / 32, lane = tid % 32;
    return {warp / (BN / WN), warp % (BN / WN), lane / (WSUBN / TN), lane % (WSUBN / TN)};
}

// Where a thread of a warp-tiled kernel works: the first row and column of its block's tile of C, whether the
// matrices allow float4 accesses, and its warp's and lane's place. Every rung above this one starts with it.
struct BlockPos {
    int tid, row0, col0;
    bool vec;
    WarpPos w;
};

__device__ __forceinline__ BlockPos block_pos(const float *A, const float *B, const float *C, int N, int K)
{
    const int tid = threadIdx.x;
    return {tid, (int)blockIdx.y * BM, (int)blockIdx.x * BN, vector_ok(A, B, C, N, K), warp_pos(tid)};
}

__device__ __forceinline__ void zero(float (&acc)[WMITER * TM][WNITER * TN])
{
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i) {
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }
}

// acc += the product of the BK-deep tiles in As (transposed, stored by the A tile type AT: read through its
// swizzle) and Bs, for this thread's fragments
template <class AT>
__device__ __forceinline__ void warp_tile_product(const float *As, const float *Bs, const WarpPos &w,
                                                  float (&acc)[WMITER * TM][WNITER * TN])
{
    float a[WMITER * TM], b[WNITER * TN];
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
        for (int s = 0; s < WMITER; ++s) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const int m = w.wr * WM + s * WSUBM + w.tr * TM + i;
                const float4 v = *reinterpret_cast<const float4 *>(&As[k * BM + (m ^ AT::swizzle(k))]);
                a[s * TM + i] = v.x, a[s * TM + i + 1] = v.y, a[s * TM + i + 2] = v.z, a[s * TM + i + 3] = v.w;
            }
        }
#pragma unroll
        for (int s = 0; s < WNITER; ++s) {
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v =
                    *reinterpret_cast<const float4 *>(&Bs[k * BN + w.wc * WN + s * WSUBN + w.tc * TN + j]);
                b[s * TN + j] = v.x, b[s * TN + j + 1] = v.y, b[s * TN + j + 2] = v.z, b[s * TN + j + 3] = v.w;
            }
        }
#pragma unroll
        for (int i = 0; i < WMITER * TM; ++i) {
#pragma unroll
            for (int j = 0; j < WNITER * TN; ++j) {
                acc[i][j] += a[i] * b[j];
            }
        }
    }
}

__device__ __forceinline__ void warp_tile_store(float *C, int M, int N, const BlockPos &b,
                                                const float (&acc)[WMITER * TM][WNITER * TN])
{
    const int row0 = b.row0, col0 = b.col0;
    const WarpPos &w = b.w;
#pragma unroll
    for (int s = 0; s < WMITER; ++s) {
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = row0 + w.wr * WM + s * WSUBM + w.tr * TM + i;
#pragma unroll
            for (int u = 0; u < WNITER; ++u) {
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float *c = &acc[s * TM + i][u * TN + j];
                    const int col = col0 + w.wc * WN + u * WSUBN + w.tc * TN + j;
                    store4(C, M, N, row, col, make_float4(c[0], c[1], c[2], c[3]), b.vec);
                }
            }
        }
    }
}

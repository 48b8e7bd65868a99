// narrow.cuh: the blocks of a last column of tiles at most FOLD columns wide
// multiply only those columns, not a whole tile: `cluster_tile`'s FOLD. (On
// `splitk` at 4097 x 33 x 4095 it lost: each narrow block reads its rows of A
// again, and A is the whole of that product's traffic.)
//
// A tile of Rows rows and X <= Fold columns of C over the block's k range
// [kbeg, kend) (template parameters named apart from the kernels' macros): each warp takes XW rows of A at a time, its lanes along k
// (coalesced reads of A's rows, several in flight a lane), against the X
// columns of B staged in shared memory in chunks of XK rows (zeros past X);
// each row's sums are reduced across the warp, kept in shared memory, then
// summed over the CL blocks of the cluster in rank order (distributed shared
// memory) and written by rank 0. Such a block costs a few microseconds where
// a tile costs tens: 1023 x 1025 x 1024 in 128 x 128 tiles is 8 x 8 tiles and
// a ninth column of tiles one column wide. Where the blocks an SM may hold
// let the hardware put two whole tiles on one SM, the light blocks gain
// nothing (data/checks/fp32-fold-h200).

#pragma once

#include <cooperative_groups.h>

namespace narrow {

constexpr int XW = 4;    // rows of A a warp takes at a time
constexpr int XK = 512;  // rows of B's columns staged in shared memory at a time

// the floats of shared memory it needs: a chunk of B's columns and every row's sums
template <int Rows, int Fold> constexpr int smem_floats() { return (XK + Rows) * Fold; }

template <int Rows, int Threads, int Fold, int Cluster>
__device__ __forceinline__ void columns(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                                        int M, int N, int K, float *smem, int row0, int col0, int kbeg, int kend,
                                        int part)
{
    static_assert(Fold % 4 == 0, "float4 rows of B's columns");
    static_assert(Rows % (XW * (Threads / 32)) == 0, "whole groups of rows a warp");
    constexpr int E = (Rows * Fold + Threads - 1) / Threads;  // the sums a thread hands over and writes
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, X = N - col0;
    float *xs = smem, *sums = smem + XK * Fold;  // a chunk of B's columns [k][Fold]; the rows' sums [row][Fold]
    for (int i = tid; i < Rows * Fold; i += Threads) {
        sums[i] = 0.0f;
    }
    for (int kc = kbeg; kc < kend; kc += XK) {
        const int kn = min(XK, kend - kc);
        __syncthreads();  // the chunk before is read (and the sums set)
        for (int i = tid; i < kn * Fold; i += Threads) {
            const int k = i / Fold, c = i % Fold;
            xs[i] = c < X ? B[(size_t)(kc + k) * N + col0 + c] : 0.0f;
        }
        __syncthreads();
        for (int r0 = warp * XW; r0 < Rows; r0 += XW * (Threads / 32)) {
            const float *a[XW];
#pragma unroll
            for (int w = 0; w < XW; ++w) {
                a[w] = A + (size_t)min(row0 + r0 + w, M - 1) * K + kc;  // a row past M reads the last: not kept
            }
            float p[XW][Fold] = {};
#pragma unroll 4
            for (int k = lane; k < kn; k += 32) {
                float v[XW];
#pragma unroll
                for (int w = 0; w < XW; ++w) {
                    v[w] = a[w][k];
                }
#pragma unroll
                for (int q = 0; q < Fold / 4; ++q) {
                    const float4 b = *reinterpret_cast<const float4 *>(&xs[k * Fold + 4 * q]);
#pragma unroll
                    for (int w = 0; w < XW; ++w) {
                        p[w][4 * q] += v[w] * b.x, p[w][4 * q + 1] += v[w] * b.y;
                        p[w][4 * q + 2] += v[w] * b.z, p[w][4 * q + 3] += v[w] * b.w;
                    }
                }
            }
#pragma unroll
            for (int w = 0; w < XW; ++w) {
#pragma unroll
                for (int c = 0; c < Fold; ++c) {
#pragma unroll
                    for (int o = 16; o > 0; o >>= 1) {
                        p[w][c] += __shfl_xor_sync(0xffffffffu, p[w][c], o);
                    }
                }
            }
            if (lane == 0) {
#pragma unroll
                for (int w = 0; w < XW; ++w) {
#pragma unroll
                    for (int c = 0; c < Fold; ++c) {
                        sums[(r0 + w) * Fold + c] += p[w][c];
                    }
                }
            }
        }
    }
    __syncthreads();
    float mine[E];  // entries tid, tid + Threads, ... of the sums ([row][Fold])
#pragma unroll
    for (int i = 0; i < E; ++i) {
        const int e = tid + i * Threads;
        mine[i] = e < Rows * Fold ? sums[e] : 0.0f;
    }
    if constexpr (Cluster > 1) {
        // the cluster's sums in rank order: the others hand theirs over through their shared memory
        cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
        __syncthreads();
        if (part != 0) {
#pragma unroll
            for (int i = 0; i < E; ++i) {
                smem[i * Threads + tid] = mine[i];
            }
        }
        cluster.sync();
        if (part == 0) {
            for (int q = 1; q < Cluster; ++q) {
                const float *theirs = cluster.map_shared_rank(smem, q);
#pragma unroll
                for (int i = 0; i < E; ++i) {
                    mine[i] += theirs[i * Threads + tid];
                }
            }
        }
        cluster.sync();  // rank 0 has read the others' shared memory before they leave
        if (part != 0) {
            return;
        }
    }
#pragma unroll
    for (int i = 0; i < E; ++i) {
        const int e = tid + i * Threads, row = e / Fold, col = e % Fold;
        if (e < Rows * Fold && row0 + row < M && col < X) {
            C[(size_t)(row0 + row) * N + col0 + col] = mine[i];
        }
    }
}

}  // namespace narrow

// Exploration for issue 19 (not a catalog kernel): double_buffer with switches.
//   SWZ=1  A stored transposed with an XOR swizzle (conflict-free stores)
//   FRAG=1 fragments of step k+1 loaded from shared memory before the FFMAs of step k
//   FAST=1 blocks wholly inside C (and K % BK == 0, vec) fetch without bounds checks
//   ORDER  the order of a step's FFMAs (what ptxas sees first; it allocates the registers, and an FFMA whose
//          operands share a register bank waits: the "dispatch stall" that interior has 0.32 of per issue
//          against cuBLAS's 0.10): 0 rows then columns, 1 serpentine (every other row backwards),
//          2 columns then rows, 3 2x2 blocks, 4 serpentine columns then rows
#include "tile_io.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef WNITER
#define WNITER 4
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 4
#endif
#ifndef SWZ
#define SWZ 0
#endif
#ifndef FRAG
#define FRAG 0
#endif
#ifndef FAST
#define FAST 0
#endif
#ifndef PAIR
#define PAIR 0
#endif
#ifndef RASTER
#define RASTER 0
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef ORDER
#define ORDER 0
#endif
#define NT (32 * (BM / WM) * (BN / WN))
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)

static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "a warp sub-tile is 32 thread tiles");

__device__ __forceinline__ int swz(int k)
{
#if SWZ
    return ((k >> 2) % (BK / 4)) * (128 / BK);
#else
    return 0;
#endif
}

struct WarpPos {
    int wr, wc, tr, tc;
};

__device__ __forceinline__ WarpPos warp_pos(int tid)
{
    const int warp = tid / 32, lane = tid % 32;
    return {warp / (BN / WN), warp % (BN / WN), lane / (WSUBN / TN), lane % (WSUBN / TN)};
}

template <bool CHECK>
struct ATileX {
    static constexpr int PER = BM * BK / 4 / NT;
    float4 r[PER];
    __device__ __forceinline__ void fetch(const float *A, int M, int K, int row0, int k0, bool vec, int tid)
    {
#pragma unroll
        for (int p = 0; p < PER; ++p) {
            const int e = tid + p * NT;
            const int m = e / (BK / 4), k = (e % (BK / 4)) * 4;
            if (CHECK) {
                r[p] = fetch4(A, M, K, row0 + m, k0 + k, vec);
            } else {
                r[p] = *reinterpret_cast<const float4 *>(A + (size_t)(row0 + m) * K + k0 + k);
            }
        }
    }
    __device__ __forceinline__ void store(float *As, int tid) const
    {
#pragma unroll
        for (int p = 0; p < PER; ++p) {
            const int e = tid + p * NT;
            const int m = e / (BK / 4), k = (e % (BK / 4)) * 4;
            const int ms = m ^ swz(k);  // the same swizzle for k .. k+3
            As[(k + 0) * BM + ms] = r[p].x;
            As[(k + 1) * BM + ms] = r[p].y;
            As[(k + 2) * BM + ms] = r[p].z;
            As[(k + 3) * BM + ms] = r[p].w;
        }
    }
};

template <bool CHECK>
struct BTileX {
    static constexpr int PER = BK * BN / 4 / NT;
    float4 r[PER];
    __device__ __forceinline__ void fetch(const float *B, int N, int K, int k0, int col0, bool vec, int tid)
    {
#pragma unroll
        for (int p = 0; p < PER; ++p) {
            const int e = tid + p * NT;
            const int k = e / (BN / 4), n = (e % (BN / 4)) * 4;
            if (CHECK) {
                r[p] = fetch4(B, K, N, k0 + k, col0 + n, vec);
            } else {
                r[p] = *reinterpret_cast<const float4 *>(B + (size_t)(k0 + k) * N + col0 + n);
            }
        }
    }
    __device__ __forceinline__ void store(float *Bs, int tid) const
    {
#pragma unroll
        for (int p = 0; p < PER; ++p) {
            const int e = tid + p * NT;
            *reinterpret_cast<float4 *>(&Bs[(e / (BN / 4)) * BN + (e % (BN / 4)) * 4]) = r[p];
        }
    }
};

__device__ __forceinline__ void load_frags(const float *As, const float *Bs, const WarpPos &w, int k,
                                           float (&a)[WMITER * TM], float (&b)[WNITER * TN])
{
#pragma unroll
    for (int s = 0; s < WMITER; ++s) {
#pragma unroll
        for (int i = 0; i < TM; i += 4) {
            const int m = w.wr * WM + s * WSUBM + w.tr * TM + i;
            const float4 v = *reinterpret_cast<const float4 *>(&As[k * BM + (m ^ swz(k))]);
            a[s * TM + i] = v.x, a[s * TM + i + 1] = v.y, a[s * TM + i + 2] = v.z, a[s * TM + i + 3] = v.w;
        }
    }
#pragma unroll
    for (int s = 0; s < WNITER; ++s) {
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const float4 v = *reinterpret_cast<const float4 *>(&Bs[k * BN + w.wc * WN + s * WSUBN + w.tc * TN + j]);
            b[s * TN + j] = v.x, b[s * TN + j + 1] = v.y, b[s * TN + j + 2] = v.z, b[s * TN + j + 3] = v.w;
        }
    }
}

// acc += a b^T for one step, the FFMAs in the order ORDER names
__device__ __forceinline__ void ffmas(const float *a, const float *b, float (&acc)[WMITER * TM][WNITER * TN])
{
    constexpr int NI = WMITER * TM, NJ = WNITER * TN;
#if ORDER == 0
#pragma unroll
    for (int i = 0; i < NI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
            acc[i][j] += a[i] * b[j];
#elif ORDER == 1
#pragma unroll
    for (int i = 0; i < NI; ++i)
#pragma unroll
        for (int jj = 0; jj < NJ; ++jj) {
            const int j = (i & 1) ? NJ - 1 - jj : jj;
            acc[i][j] += a[i] * b[j];
        }
#elif ORDER == 2
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int i = 0; i < NI; ++i)
            acc[i][j] += a[i] * b[j];
#elif ORDER == 3
#pragma unroll
    for (int i = 0; i < NI; i += 2)
#pragma unroll
        for (int j = 0; j < NJ; j += 2) {
            acc[i][j] += a[i] * b[j];
            acc[i][j + 1] += a[i] * b[j + 1];
            acc[i + 1][j + 1] += a[i + 1] * b[j + 1];
            acc[i + 1][j] += a[i + 1] * b[j];
        }
#else
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int ii = 0; ii < NI; ++ii) {
            const int i = (j & 1) ? NI - 1 - ii : ii;
            acc[i][j] += a[i] * b[j];
        }
#endif
}

__device__ __forceinline__ void product(const float *As, const float *Bs, const WarpPos &w,
                                        float (&acc)[WMITER * TM][WNITER * TN])
{
#if FRAG
    float a[2][WMITER * TM], b[2][WNITER * TN];
    load_frags(As, Bs, w, 0, a[0], b[0]);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        if (k + 1 < BK) {
            load_frags(As, Bs, w, k + 1, a[(k + 1) & 1], b[(k + 1) & 1]);
        }
        ffmas(a[k & 1], b[k & 1], acc);
    }
#else
    float a[WMITER * TM], b[WNITER * TN];
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        load_frags(As, Bs, w, k, a, b);
        ffmas(a, b, acc);
    }
#endif
}

template <bool CHECK>
__device__ __forceinline__ void mainloop(const float *A, const float *B, int M, int N, int K, int row0, int col0,
                                         bool vec, int tid, const WarpPos &w, float (*As)[BK * BM],
                                         float (*Bs)[BK * BN], float (&acc)[WMITER * TM][WNITER * TN])
{
    ATileX<CHECK> at;
    BTileX<CHECK> bt;
    at.fetch(A, M, K, row0, 0, vec, tid);
    bt.fetch(B, N, K, 0, col0, vec, tid);
    at.store(As[0], tid);
    bt.store(Bs[0], tid);
    __syncthreads();
#if PAIR
    // two steps per iteration: the buffers' addresses are constants in each half
    for (int t = 0; t < K; t += 2 * BK) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int tt = t + h * BK;
            if (tt >= K) {
                break;
            }
            const bool more = tt + BK < K;
            if (more) {
                at.fetch(A, M, K, row0, tt + BK, vec, tid);
                bt.fetch(B, N, K, tt + BK, col0, vec, tid);
            }
            product(As[h], Bs[h], w, acc);
            if (more) {
                at.store(As[h ^ 1], tid);
                bt.store(Bs[h ^ 1], tid);
            }
            __syncthreads();
        }
    }
#else
    int cur = 0;
    for (int t = 0; t < K; t += BK) {
        const bool more = t + BK < K;
        if (more) {
            at.fetch(A, M, K, row0, t + BK, vec, tid);
            bt.fetch(B, N, K, t + BK, col0, vec, tid);
        }
        product(As[cur], Bs[cur], w, acc);
        if (more) {
            at.store(As[cur ^ 1], tid);
            bt.store(Bs[cur ^ 1], tid);
        }
        __syncthreads();
        cur ^= 1;
    }
#endif
}

extern "C" __global__ void __launch_bounds__(NT, MINB) matmul_explore(const float *__restrict__ A,
                                                                     const float *__restrict__ B,
                                                                     float *__restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK * BM];
    __shared__ __align__(16) float Bs[2][BK * BN];
    const int tid = threadIdx.x;
#if RASTER
    // blocks in groups of RASTER block rows, column by column within a group: neighbours share tiles in the L2
    const int id = blockIdx.y * gridDim.x + blockIdx.x;
    const int per_group = RASTER * gridDim.x;
    const int first = (id / per_group) * RASTER;
    const int rows = min((int)gridDim.y - first, RASTER);
    const int by = first + (id % per_group) % rows, bx = (id % per_group) / rows;
#else
    const int by = blockIdx.y, bx = blockIdx.x;
#endif
    const int row0 = by * BM;
    const int col0 = bx * BN;
    const bool vec = vector_ok(A, B, C, N, K);
    const WarpPos w = warp_pos(tid);
    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i) {
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }
#if FAST == 2
    mainloop<false>(A, B, M, N, K, row0, col0, vec, tid, w, As, Bs, acc);  // upper bound: no edge handling at all
#elif FAST
    if (vec && row0 + BM <= M && col0 + BN <= N && K % BK == 0) {
        mainloop<false>(A, B, M, N, K, row0, col0, vec, tid, w, As, Bs, acc);
    } else {
        mainloop<true>(A, B, M, N, K, row0, col0, vec, tid, w, As, Bs, acc);
    }
#else
    mainloop<true>(A, B, M, N, K, row0, col0, vec, tid, w, As, Bs, acc);
#endif
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
                    store4(C, M, N, row, col, make_float4(c[0], c[1], c[2], c[3]), vec);
                }
            }
        }
    }
}

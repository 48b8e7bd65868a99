// Exploration for issue 19 (not a catalog kernel): double_buffer with switches.
//   SWZ=1  A stored transposed with an XOR swizzle (conflict-free stores)
//   FRAG=1 fragments of step k+1 loaded from shared memory before the FFMAs of step k
//   FAST=1 blocks wholly inside C (and K % BK == 0, vec) fetch without bounds checks
//   ORDER  the order of a step's FFMAs (what ptxas sees first; it allocates the registers, and an FFMA whose
//          operands share a register bank waits: the "dispatch stall" that interior has 0.32 of per issue
//          against cuBLAS's 0.10): 0 rows then columns, 1 serpentine (every other row backwards),
//          2 columns then rows, 3 2x2 blocks, 4 serpentine columns then rows
//   ASYNC=S (with FAST) interior blocks fetch through cp.async into S shared stages (2 to 4), no staging registers:
//          A element by element (4-byte copies: it is stored transposed, swizzled at k by XOR 4k), B by 16 bytes;
//          one __syncthreads per tile; the edge blocks keep the register double buffer
//   ALAYOUT=1 (with FAST) interior blocks keep A's tile as rows (m, k), each padded to BK + 4 floats, and fetch it
//          by 16 bytes (cp.async with ASYNC, else through registers, STS.128); a thread's rows are interleaved
//          (tr, tr + 8, ...) so that its LDS.128 of 4 k of one row are conflict-free; 4 k per fragment load
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
#ifndef ASYNC
#define ASYNC 0
#endif
#define STAGES (ASYNC > 2 ? ASYNC : 2)
#ifndef ALAYOUT
#define ALAYOUT 0
#endif
#define BKP (BK + 4)
#define NT (32 * (BM / WM) * (BN / WN))
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)

static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "a warp sub-tile is 32 thread tiles");

__device__ __forceinline__ int swz(int k)
{
#if ASYNC
    return (k & 7) << 2;  // the 8 k of a 4-byte copy's warp (4 rows x 8 k) land in 32 different banks
#elif SWZ
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
            As[(k + 0) * BM + (m ^ swz(k + 0))] = r[p].x;
            As[(k + 1) * BM + (m ^ swz(k + 1))] = r[p].y;
            As[(k + 2) * BM + (m ^ swz(k + 2))] = r[p].z;
            As[(k + 3) * BM + (m ^ swz(k + 3))] = r[p].w;
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

#if ASYNC
__device__ __forceinline__ void cp_async4(float *dst, const float *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async16(float *dst, const float *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// tile t of A (BM x BK, stored transposed and swizzled) and of B (BK x BN) into one stage, without registers
__device__ __forceinline__ void fetch_async(const float *A, const float *B, int N, int K, int row0, int col0, int k0,
                                            int tid, float *As, float *Bs)
{
#pragma unroll
    for (int p = 0; p < BM * BK / NT; ++p) {
        const int e = tid + p * NT;
        const int m = e / BK, k = e % BK;  // a warp: 32 / BK rows, each BK consecutive floats
        cp_async4(&As[k * BM + (m ^ swz(k))], A + (size_t)(row0 + m) * K + k0 + k);
    }
#pragma unroll
    for (int p = 0; p < BK * BN / 4 / NT; ++p) {
        const int e = tid + p * NT;
        const int k = e / (BN / 4), n = (e % (BN / 4)) * 4;
        cp_async16(&Bs[k * BN + n], B + (size_t)(k0 + k) * N + col0 + n);
    }
}

__device__ __forceinline__ void mainloop_async(const float *A, const float *B, int N, int K, int row0, int col0,
                                               int tid, const WarpPos &w, float (*As)[BK * BM],
                                               float (*Bs)[BK * BN], float (&acc)[WMITER * TM][WNITER * TN])
{
    const int tiles = K / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) {
            fetch_async(A, B, N, K, row0, col0, s * BK, tid, As[s], Bs[s]);
        }
        cp_async_commit();
    }
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();  // tile t has landed (this thread's copies) ...
        __syncthreads();              // ... everyone's, and every warp is done with tile t - 1's stage
        const int next = t + STAGES - 1;
        if (next < tiles) {
            fetch_async(A, B, N, K, row0, col0, next * BK, tid, As[next % STAGES], Bs[next % STAGES]);
        }
        cp_async_commit();
        product(As[t % STAGES], Bs[t % STAGES], w, acc);
    }
}
#endif

#if ALAYOUT
// the row of the block's tile that fragment i of sub-tile s of this lane covers (interleaved by lane row)
__device__ __forceinline__ int row_of(const WarpPos &w, int s, int i)
{
    return w.wr * WM + s * WSUBM + w.tr + (WSUBM / TM) * i;
}

__device__ __forceinline__ void fetch_rows(const float *A, const float *B, int N, int K, int row0, int col0, int k0,
                                           int tid, float *As, float *Bs, float4 (&ra)[BM * BK / 4 / NT],
                                           float4 (&rb)[BK * BN / 4 / NT])
{
#pragma unroll
    for (int p = 0; p < BM * BK / 4 / NT; ++p) {
        const int e = tid + p * NT;
        const int m = e / (BK / 4), q = (e % (BK / 4)) * 4;
#if ASYNC
        cp_async16(&As[m * BKP + q], A + (size_t)(row0 + m) * K + k0 + q);
#else
        ra[p] = *reinterpret_cast<const float4 *>(A + (size_t)(row0 + m) * K + k0 + q);
#endif
    }
#pragma unroll
    for (int p = 0; p < BK * BN / 4 / NT; ++p) {
        const int e = tid + p * NT;
        const int k = e / (BN / 4), n = (e % (BN / 4)) * 4;
#if ASYNC
        cp_async16(&Bs[k * BN + n], B + (size_t)(k0 + k) * N + col0 + n);
#else
        rb[p] = *reinterpret_cast<const float4 *>(B + (size_t)(k0 + k) * N + col0 + n);
#endif
    }
}

__device__ __forceinline__ void store_rows(int tid, float *As, float *Bs, const float4 (&ra)[BM * BK / 4 / NT],
                                           const float4 (&rb)[BK * BN / 4 / NT])
{
#pragma unroll
    for (int p = 0; p < BM * BK / 4 / NT; ++p) {
        const int e = tid + p * NT;
        *reinterpret_cast<float4 *>(&As[(e / (BK / 4)) * BKP + (e % (BK / 4)) * 4]) = ra[p];
    }
#pragma unroll
    for (int p = 0; p < BK * BN / 4 / NT; ++p) {
        const int e = tid + p * NT;
        *reinterpret_cast<float4 *>(&Bs[(e / (BN / 4)) * BN + (e % (BN / 4)) * 4]) = rb[p];
    }
}

__device__ __forceinline__ void product_rows(const float *As, const float *Bs, const WarpPos &w,
                                             float (&acc)[WMITER * TM][WNITER * TN])
{
#pragma unroll
    for (int q = 0; q < BK; q += 4) {
        float4 a4[WMITER * TM];
#pragma unroll
        for (int s = 0; s < WMITER; ++s)
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a4[s * TM + i] = *reinterpret_cast<const float4 *>(&As[row_of(w, s, i) * BKP + q]);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            float a[WMITER * TM], b[WNITER * TN];
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
                a[i] = kk == 0 ? a4[i].x : kk == 1 ? a4[i].y : kk == 2 ? a4[i].z : a4[i].w;
#pragma unroll
            for (int s = 0; s < WNITER; ++s) {
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float4 v =
                        *reinterpret_cast<const float4 *>(&Bs[(q + kk) * BN + w.wc * WN + s * WSUBN + w.tc * TN + j]);
                    b[s * TN + j] = v.x, b[s * TN + j + 1] = v.y, b[s * TN + j + 2] = v.z, b[s * TN + j + 3] = v.w;
                }
            }
            ffmas(a, b, acc);
        }
    }
}

// the interior blocks' main loop with A as rows: STAGES shared stages through cp.async, or two through registers
__device__ __forceinline__ void mainloop_rows(const float *A, const float *B, int N, int K, int row0, int col0,
                                              int tid, const WarpPos &w, float *As, float *Bs,
                                              float (&acc)[WMITER * TM][WNITER * TN])
{
    const int tiles = K / BK;
    float4 ra[BM * BK / 4 / NT], rb[BK * BN / 4 / NT];
#if ASYNC
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) {
            fetch_rows(A, B, N, K, row0, col0, s * BK, tid, As + s * BM * BKP, Bs + s * BK * BN, ra, rb);
        }
        cp_async_commit();
    }
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int next = t + STAGES - 1;
        if (next < tiles) {
            const int st = next % STAGES;
            fetch_rows(A, B, N, K, row0, col0, next * BK, tid, As + st * BM * BKP, Bs + st * BK * BN, ra, rb);
        }
        cp_async_commit();
        product_rows(As + (t % STAGES) * BM * BKP, Bs + (t % STAGES) * BK * BN, w, acc);
    }
#else
    fetch_rows(A, B, N, K, row0, col0, 0, tid, As, Bs, ra, rb);
    store_rows(tid, As, Bs, ra, rb);
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        if (t + 1 < tiles) {
            fetch_rows(A, B, N, K, row0, col0, (t + 1) * BK, tid, As, Bs, ra, rb);
        }
        product_rows(As + cur * BM * BKP, Bs + cur * BK * BN, w, acc);
        if (t + 1 < tiles) {
            store_rows(tid, As + (cur ^ 1) * BM * BKP, Bs + (cur ^ 1) * BK * BN, ra, rb);
        }
        __syncthreads();
    }
#endif
}

__device__ __forceinline__ void store_c_rows(float *C, int N, int row0, int col0, const WarpPos &w,
                                             const float (&acc)[WMITER * TM][WNITER * TN])
{
#pragma unroll
    for (int s = 0; s < WMITER; ++s)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int u = 0; u < WNITER; ++u)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float *c = &acc[s * TM + i][u * TN + j];
                    const int col = col0 + w.wc * WN + u * WSUBN + w.tc * TN + j;
                    *reinterpret_cast<float4 *>(C + (size_t)(row0 + row_of(w, s, i)) * N + col) =
                        make_float4(c[0], c[1], c[2], c[3]);
                }
}
#endif

extern "C" __global__ void __launch_bounds__(NT, MINB) matmul_explore(const float *__restrict__ A,
                                                                     const float *__restrict__ B,
                                                                     float *__restrict__ C, int M, int N, int K)
{
#if ALAYOUT
    __shared__ __align__(16) float As_[STAGES * BM * BKP];
    float(*As)[BK * BM] = reinterpret_cast<float(*)[BK * BM]>(As_);  // the edge path: BK * BM a stage
#else
    __shared__ __align__(16) float As[STAGES][BK * BM];
#endif
    __shared__ __align__(16) float Bs[STAGES][BK * BN];
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
#if ALAYOUT
        mainloop_rows(A, B, N, K, row0, col0, tid, w, As_, Bs[0], acc);
        store_c_rows(C, N, row0, col0, w, acc);
        return;
#elif ASYNC
        mainloop_async(A, B, N, K, row0, col0, tid, w, As, Bs, acc);
#else
        mainloop<false>(A, B, M, N, K, row0, col0, vec, tid, w, As, Bs, acc);
#endif
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

// tile_io.cuh: moving tiles of A, B and C with 128-bit (float4) accesses where
// the shapes allow, element by element where they do not. Shared by the
// ladder's rungs from `vectorized` up (one place for the edge rules).
//
// A BM x BK tile of A is fetched into registers as float4 along k and stored
// into shared memory transposed (As[k * BM + m]), so that the product reads
// TM consecutive rows of one column of A as float4 too. A BK x BN tile of B is
// fetched as float4 along n and stored as it is (Bs[k * BN + n]).
//
// 128-bit accesses need 16-byte alignment: `vector_ok` is true when K and N
// are multiples of 4 and the three matrices start on 16-byte boundaries. Then
// a float4 starting at a column that is a multiple of 4 is either wholly
// inside the matrix or wholly outside, so one bounds check covers it. When it
// is false the same tiles move one float at a time with a check per element,
// so every M, N and K is handled (1 x 4096 x 7, 4097 x 33 x 4095).
#pragma once
#include <stdint.h>

__device__ __forceinline__ bool vector_ok(const float *A, const float *B, const float *C, int N, int K)
{
    const uintptr_t bits = (uintptr_t)A | (uintptr_t)B | (uintptr_t)C;
    return (K % 4 == 0) && (N % 4 == 0) && (bits % 16 == 0);
}

// one float4 of row r of a rows x cols row-major matrix, from column c (c % 4 == 0); zeros outside
__device__ __forceinline__ float4 fetch4(const float *X, int rows, int cols, int r, int c, bool vec)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r >= rows) {
        return v;
    }
    const float *p = X + (size_t)r * cols + c;
    if (vec) {
        if (c < cols) {
            v = *reinterpret_cast<const float4 *>(p);
        }
    } else {
        v.x = c + 0 < cols ? p[0] : 0.0f;
        v.y = c + 1 < cols ? p[1] : 0.0f;
        v.z = c + 2 < cols ? p[2] : 0.0f;
        v.w = c + 3 < cols ? p[3] : 0.0f;
    }
    return v;
}

// A ROWS x COLS block of a row-major matrix (rows x cols) at (r0, c0) in the registers of THREADS threads, one
// float4 after another along the rows: float4 p of thread tid is e = tid + p * THREADS, at row e / (COLS / 4) and
// column (e % (COLS / 4)) * 4 of the block. A's and B's tiles are such blocks, stored differently.
template <int ROWS, int COLS, int THREADS>
struct Float4Block {
    static_assert(COLS % 4 == 0, "a block's rows are whole float4");
    static_assert((ROWS * COLS / 4) % THREADS == 0, "each thread moves a whole number of float4 of the block");
    static constexpr int PER = ROWS * COLS / 4 / THREADS;
    float4 r[PER];

    __device__ __forceinline__ void fetch_block(const float *X, int rows, int cols, int r0, int c0, bool vec, int tid)
    {
#pragma unroll
        for (int p = 0; p < PER; ++p) {
            const int e = tid + p * THREADS;
            r[p] = fetch4(X, rows, cols, r0 + e / (COLS / 4), c0 + (e % (COLS / 4)) * 4, vec);
        }
    }
};

// A's ROWS x DEPTH tile at (row0, k0), THREADS threads: fetch() into registers, store() into As transposed
// (As[k * ROWS + (m ^ swizzle(k))]: no swizzle here; `swizzled` permutes the rows, and the product reads As through
// the swizzle of the tile type that stored it)
template <int ROWS, int DEPTH, int THREADS>
struct ATile : Float4Block<ROWS, DEPTH, THREADS> {
    static __device__ __forceinline__ int swizzle(int) { return 0; }

    __device__ __forceinline__ void fetch(const float *A, int M, int K, int row0, int k0, bool vec, int tid)
    {
        this->fetch_block(A, M, K, row0, k0, vec, tid);
    }

    __device__ __forceinline__ void store(float *As, int tid) const
    {
#pragma unroll
        for (int p = 0; p < this->PER; ++p) {
            const int e = tid + p * THREADS;
            const int m = e / (DEPTH / 4), k = (e % (DEPTH / 4)) * 4;
            As[(k + 0) * ROWS + m] = this->r[p].x;
            As[(k + 1) * ROWS + m] = this->r[p].y;
            As[(k + 2) * ROWS + m] = this->r[p].z;
            As[(k + 3) * ROWS + m] = this->r[p].w;
        }
    }
};

// B's DEPTH x COLS tile at (k0, col0), THREADS threads: fetch() into registers, store() into Bs (16-byte aligned)
template <int DEPTH, int COLS, int THREADS>
struct BTile : Float4Block<DEPTH, COLS, THREADS> {
    __device__ __forceinline__ void fetch(const float *B, int N, int K, int k0, int col0, bool vec, int tid)
    {
        this->fetch_block(B, K, N, k0, col0, vec, tid);
    }

    __device__ __forceinline__ void store(float *Bs, int tid) const
    {
#pragma unroll
        for (int p = 0; p < this->PER; ++p) {
            const int e = tid + p * THREADS;
            *reinterpret_cast<float4 *>(&Bs[(e / (COLS / 4)) * COLS + (e % (COLS / 4)) * 4]) = this->r[p];
        }
    }
};

// four consecutive results of row r of C from column c (c % 4 == 0); only elements inside C are written
__device__ __forceinline__ void store4(float *C, int M, int N, int r, int c, float4 v, bool vec)
{
    if (r >= M) {
        return;
    }
    float *p = C + (size_t)r * N + c;
    if (vec) {
        if (c < N) {
            *reinterpret_cast<float4 *>(p) = v;
        }
    } else {
        if (c + 0 < N) p[0] = v.x;
        if (c + 1 < N) p[1] = v.y;
        if (c + 2 < N) p[2] = v.z;
        if (c + 3 < N) p[3] = v.w;
    }
}

// The weight-streaming product for decoding (issue 40, step 2 exploration): C = A · Wᵀ for M ≤ 16 tokens.
// A: M x K BF16, row-major; W: N x K BF16, row-major (an nn.Linear weight [out, in], as the race holds Bt);
// C: M x N FP32. At such M each weight byte is used M times, so the product is a stream of W from DRAM and the
// kernel's whole job is to keep enough of it in flight: each warp owns ROWS rows of W and walks K with one 16-byte
// load per row and lane per step (coalesced: a warp reads 512 contiguous bytes of each row), read once
// (ld.global.cs: evict first); the M rows of A (small, shared by every warp) come through the L1. The FP32
// partial sums of each (row, token) are reduced across the warp at the end. K must be a multiple of 8.
#include <cstdint>

__device__ __forceinline__ void unpack(uint32_t x, float &lo, float &hi)
{
    lo = __uint_as_float(x << 16);
    hi = __uint_as_float(x & 0xffff0000u);
}

__device__ __forceinline__ void unpack8(uint4 v, float f[8])
{
    unpack(v.x, f[0], f[1]);
    unpack(v.y, f[2], f[3]);
    unpack(v.z, f[4], f[5]);
    unpack(v.w, f[6], f[7]);
}

// The weight rows n0 .. n0 + ROWS - 1 against the M rows of A over the steps k = first, first + step, ...: each step
// one 16-byte load per row (read once) and per token (through the L1), FP32 sums in acc.
template <int M, int ROWS>
__device__ __forceinline__ void walk(const uint16_t *__restrict__ A, const uint16_t *__restrict__ W, int N, int K,
                                     int n0, int first, int step, float (&acc)[ROWS][M])
{
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
            acc[r][m] = 0.0f;
        }
    }
#pragma unroll 2
    for (int k = first; k < K; k += step) {
        float w[ROWS][8];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const int n = n0 + r < N ? n0 + r : N - 1;  // a row past N reads the last row; its sum is not stored
            unpack8(__ldcs(reinterpret_cast<const uint4 *>(W + (size_t)n * K + k)), w[r]);
        }
#pragma unroll
        for (int m = 0; m < M; ++m) {
            float a[8];
            unpack8(__ldg(reinterpret_cast<const uint4 *>(A + (size_t)m * K + k)), a);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    acc[r][m] = fmaf(a[j], w[r][j], acc[r][m]);
                }
            }
        }
    }
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, off);
    }
    return v;
}

template <int M, int ROWS>
__device__ __forceinline__ void stream_rows(const uint16_t *__restrict__ A, const uint16_t *__restrict__ W,
                                            float *__restrict__ C, int N, int K)
{
    const int lane = threadIdx.x & 31;
    const int n0 = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * ROWS;
    if (n0 >= N) {
        return;
    }
    float acc[ROWS][M];
    walk<M, ROWS>(A, W, N, K, n0, lane * 8, 32 * 8, acc);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
            const float v = warp_sum(acc[r][m]);
            if (lane == 0 && n0 + r < N) {
                C[(size_t)m * N + n0 + r] = v;
            }
        }
    }
}

#define STREAM(M, ROWS)                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) stream_m##M##_r##ROWS(                                   \
        const uint16_t *__restrict__ A, const uint16_t *__restrict__ W, float *__restrict__ C, int N, int K)  \
    {                                                                                                          \
        stream_rows<M, ROWS>(A, W, C, N, K);                                                                   \
    }

STREAM(1, 4)
STREAM(1, 8)
STREAM(16, 2)
STREAM(16, 4)

// Split-K inside a block, for layers whose rows alone give too few warps (4096 rows in warps of 8 rows: 512 warps,
// under four per SM): a block of WARPS warps owns ROWS rows, its warps take turns along K (warp w the steps w,
// w + WARPS, ...), and the warps' sums meet in shared memory. Every block keeps WARPS x ROWS loads of 16 bytes in
// flight per lane step, whatever N is.
template <int M, int ROWS, int WARPS>
__device__ __forceinline__ void split_rows(const uint16_t *__restrict__ A, const uint16_t *__restrict__ W,
                                           float *__restrict__ C, int N, int K)
{
    __shared__ float part[WARPS][ROWS][M];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n0 = blockIdx.x * ROWS;
    float acc[ROWS][M];
    walk<M, ROWS>(A, W, N, K, n0, (warp * 32 + lane) * 8, WARPS * 32 * 8, acc);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
            const float v = warp_sum(acc[r][m]);
            if (lane == 0) {
                part[warp][r][m] = v;
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < ROWS * M; i += blockDim.x) {
        const int r = i / M, m = i % M;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            v += part[w][r][m];
        }
        if (n0 + r < N) {
            C[(size_t)m * N + n0 + r] = v;
        }
    }
}

#define SPLIT(M, ROWS, WARPS)                                                                                \
    extern "C" __global__ void __launch_bounds__(WARPS * 32) split_m##M##_r##ROWS##_w##WARPS(                  \
        const uint16_t *__restrict__ A, const uint16_t *__restrict__ W, float *__restrict__ C, int N, int K)  \
    {                                                                                                          \
        split_rows<M, ROWS, WARPS>(A, W, C, N, K);                                                             \
    }

SPLIT(1, 4, 8)
SPLIT(1, 2, 8)
SPLIT(16, 2, 8)
SPLIT(16, 1, 8)
SPLIT(1, 1, 8)
SPLIT(1, 2, 16)
SPLIT(1, 4, 16)

// The tensor cores with the weight as the 16-row operand (mma.sync m16n8k16, BF16 in, FP32 sums): C^T = W · A^T,
// 16 weight rows against 8 tokens per instruction, so M tokens cost M / 8 instructions and M / 8 activation loads
// per 16 rows and 32 steps of K, against M loads per row in the CUDA-core kernels above. The order of K inside a
// 32-wide chunk does not change the sum, so each lane loads 16 contiguous bytes (8 values) of weight rows g and
// g + 8 and of token g, and the two mma of the chunk take its halves: lane (g, t) holds k = 8t .. 8t + 7 where the
// instruction's layout names k = 2t, 2t + 1, 2t + 8, 2t + 9 of each half (the same map for both operands). A block
// of WARPS warps owns 16 rows, its warps take turns along K (U chunks in flight per lane), sums meet in shared
// memory. Tokens past M and rows past N read zeros or the last row and are not stored; K a multiple of 8.
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int U>
__device__ __forceinline__ void load_rows(const uint16_t *w0, const uint16_t *w1, int k, int stride, int t, int K,
                                          uint4 (&wa)[U], uint4 (&wb)[U])
{
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int kk = k + u * stride;
        const bool in = kk + 8 * t < K;
        wa[u] = in ? __ldcs(reinterpret_cast<const uint4 *>(w0 + kk)) : zero;
        wb[u] = in ? __ldcs(reinterpret_cast<const uint4 *>(w1 + kk)) : zero;
    }
}

// PIPE: the next U chunks' weight loads are issued before this batch's mma (two batches in flight per lane)
template <int TILES, int WARPS, int U, bool PIPE>
__device__ __forceinline__ void mma_rows(const uint16_t *__restrict__ A, const uint16_t *__restrict__ W,
                                         float *__restrict__ C, int M, int N, int K)
{
    __shared__ float part[WARPS][TILES * 8][16];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * 16;
    const uint16_t *w0 = W + (size_t)min(n0 + g, N - 1) * K + 8 * t;
    const uint16_t *w1 = W + (size_t)min(n0 + g + 8, N - 1) * K + 8 * t;
    const uint16_t *a[TILES];
    bool live[TILES];
#pragma unroll
    for (int j = 0; j < TILES; ++j) {
        live[j] = j * 8 + g < M;
        a[j] = A + (size_t)min(j * 8 + g, M - 1) * K + 8 * t;
    }
    float acc[TILES][4];
#pragma unroll
    for (int j = 0; j < TILES; ++j) {
        acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    }
    const uint4 zero = make_uint4(0, 0, 0, 0);
    constexpr int STRIDE = WARPS * 32;
    uint4 wa[U], wb[U];
    if (PIPE) {
        load_rows<U>(w0, w1, warp * 32, STRIDE, t, K, wa, wb);
    }
    for (int k = warp * 32; k < K; k += STRIDE * U) {
        uint4 na[U], nb[U];
        if (PIPE) {
            load_rows<U>(w0, w1, k + STRIDE * U, STRIDE, t, K, na, nb);
        } else {
            load_rows<U>(w0, w1, k, STRIDE, t, K, wa, wb);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kk = k + u * STRIDE;
            const bool in = kk + 8 * t < K;
#pragma unroll
            for (int j = 0; j < TILES; ++j) {
                const uint4 x = in && live[j] ? __ldg(reinterpret_cast<const uint4 *>(a[j] + kk)) : zero;
                mma16816(acc[j], wa[u].x, wb[u].x, wa[u].y, wb[u].y, x.x, x.y);
                mma16816(acc[j], wa[u].z, wb[u].z, wa[u].w, wb[u].w, x.z, x.w);
            }
        }
        if (PIPE) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                wa[u] = na[u];
                wb[u] = nb[u];
            }
        }
    }
    // acc[j]: (row g, tokens j*8 + 2t, 2t + 1), then (row g + 8, the same tokens)
#pragma unroll
    for (int j = 0; j < TILES; ++j) {
        part[warp][j * 8 + 2 * t][g] = acc[j][0];
        part[warp][j * 8 + 2 * t + 1][g] = acc[j][1];
        part[warp][j * 8 + 2 * t][g + 8] = acc[j][2];
        part[warp][j * 8 + 2 * t + 1][g + 8] = acc[j][3];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < TILES * 8 * 16; i += WARPS * 32) {
        const int m = i >> 4, r = i & 15;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            v += part[w][m][r];
        }
        if (m < M && n0 + r < N) {
            C[(size_t)m * N + n0 + r] = v;
        }
    }
}

#define MMA(TILES, WARPS, U, PIPE, NAME)                                                                       \
    extern "C" __global__ void __launch_bounds__(WARPS * 32) NAME(const uint16_t *__restrict__ A,                \
                                                                  const uint16_t *__restrict__ W,                \
                                                                  float *__restrict__ C, int M, int N, int K)    \
    {                                                                                                          \
        mma_rows<TILES, WARPS, U, PIPE>(A, W, C, M, N, K);                                                     \
    }

MMA(1, 8, 4, false, mma_t1_w8_u4)
MMA(1, 16, 2, false, mma_t1_w16_u2)
MMA(1, 16, 4, false, mma_t1_w16_u4)
MMA(1, 32, 2, false, mma_t1_w32_u2)
MMA(1, 8, 2, true, mma_t1_w8_u2_pipe)
MMA(1, 16, 2, true, mma_t1_w16_u2_pipe)
MMA(2, 8, 2, false, mma_t2_w8_u2)
MMA(2, 16, 2, false, mma_t2_w16_u2)
MMA(2, 32, 2, false, mma_t2_w32_u2)
MMA(2, 8, 2, true, mma_t2_w8_u2_pipe)
MMA(2, 16, 2, true, mma_t2_w16_u2_pipe)
MMA(2, 16, 1, true, mma_t2_w16_u1_pipe)
MMA(8, 8, 2, false, mma_t8_w8_u2)
MMA(8, 16, 1, true, mma_t8_w16_u1_pipe)
MMA(8, 8, 1, true, mma_t8_w8_u1_pipe)

// A read-only stream (the DRAM bound of a product that almost only reads): U independent 16-byte loads per lane in
// flight, read once; the xor of what was read is stored only if it equals a value no input makes, so no load is
// dropped and nothing is written.
template <int U>
__device__ __forceinline__ void read_words(const uint4 *__restrict__ p, size_t n, unsigned *out)
{
    const size_t step = (size_t)gridDim.x * blockDim.x;
    unsigned x = 0;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * step < n; i += U * step) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            v[u] = __ldcs(p + i + u * step);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        }
    }
    for (; i < n; i += step) {
        const uint4 v = __ldcs(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) {
        out[0] = x;
    }
}

extern "C" __global__ void __launch_bounds__(256) read_u4(const uint4 *__restrict__ p, size_t n, unsigned *out)
{
    read_words<4>(p, n, out);
}

extern "C" __global__ void __launch_bounds__(256) read_u8(const uint4 *__restrict__ p, size_t n, unsigned *out)
{
    read_words<8>(p, n, out);
}

// Each block reads one contiguous span of n / gridDim words (its warps interleaved along it), U loads per lane in
// flight: the pattern of the weight-streaming kernels, whose blocks each own whole rows.
template <int U>
__device__ __forceinline__ void read_span(const uint4 *__restrict__ p, size_t n, unsigned *out)
{
    const size_t span = (n + gridDim.x - 1) / gridDim.x;
    const size_t lo = blockIdx.x * span, hi = min(n, lo + span);
    unsigned x = 0;
    size_t i = lo + threadIdx.x;
    for (; i + (U - 1) * blockDim.x < hi; i += U * blockDim.x) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            v[u] = __ldcs(p + i + u * blockDim.x);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        }
    }
    for (; i < hi; i += blockDim.x) {
        const uint4 v = __ldcs(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) {
        out[0] = x;
    }
}

extern "C" __global__ void __launch_bounds__(256) span_u4(const uint4 *__restrict__ p, size_t n, unsigned *out)
{
    read_span<4>(p, n, out);
}

extern "C" __global__ void __launch_bounds__(256) span_u8(const uint4 *__restrict__ p, size_t n, unsigned *out)
{
    read_span<8>(p, n, out);
}

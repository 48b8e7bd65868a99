// Rung 1 of the BF16 ladder: nvcuda::wmma 16x16x16 fragments through shared memory (the API baseline; sm_80+).
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major: K-major).
// Adds over the FP32 race: the tensor cores, through the portable C++ API. Each block stages a BM x BK tile of A
// and a BN x BK tile of Bt in shared memory (16-byte loads when a row's 8 elements are in bounds, element loads
// with zero fill otherwise, so any M, N, K works), one stage, two barriers a tile; each warp holds WM x WN of C
// as (WM/16) x (WN/16) accumulator fragments. Counter it should move: the tensor pipe's utilisation
// (sm__pipe_tensor_op_hmma_cycles_active), from zero in the FP32 race; SASS shows HMMA.
// Where the idea comes from: the CUDA C++ Programming Guide, "Warp Matrix Functions" (nvcuda::wmma), and the
// usual shared-memory tiling of the FP32 race (kernels/matmul). Shapes: any M, N, K >= 1.
#include <cuda_bf16.h>
#include <mma.h>
#include <stdint.h>

#include "../need.cuh"
#include "geometry.cuh"
NEED(BM); NEED(BN); NEED(BK); NEED(WM); NEED(WN);
#define NWARPS ((BM / WM) * (BN / WN))
#define THREADS (32 * NWARPS)
#define LDS (BK + 8)  // padded row (elements): 16-byte multiple for wmma, rows shift banks
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "tile shape");

BF16_GEOM(.rung = 1, .bm = BM, .bn = BN, .bk = BK, .stages = 1, .threads = THREADS, .smem = 0, .cluster = 1);

using namespace nvcuda;

// rows x BK tile of a K-major bf16 matrix (rows R, K columns) starting at (r0, k0) into s[rows][LDS]
template <int ROWS>
__device__ __forceinline__ void load_tile(__nv_bfloat16 (*s)[LDS], const uint16_t *__restrict__ g, int R, int K,
                                          int r0, int k0, bool vec)
{
    constexpr int CH = ROWS * BK / 8;  // 8-element chunks
    for (int i = threadIdx.x; i < CH; i += THREADS) {
        const int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
        const int gr = r0 + r, gk = k0 + c;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (gr < R) {
            const uint16_t *p = g + (size_t)gr * K + gk;
            if (vec && gk + 8 <= K) {
                v = *reinterpret_cast<const uint4 *>(p);
            } else {
                uint32_t e[8];
#pragma unroll
                for (int t = 0; t < 8; ++t) {
                    e[t] = gk + t < K ? p[t] : 0u;
                }
                v = make_uint4(e[0] | (e[1] << 16), e[2] | (e[3] << 16), e[4] | (e[5] << 16), e[6] | (e[7] << 16));
            }
        }
        *reinterpret_cast<uint4 *>(&s[r][c]) = v;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) bf16_gemm(const uint16_t *__restrict__ A,
                                                                const uint16_t *__restrict__ Bt,
                                                                float *__restrict__ C, int M, int N, int K)
{
    __shared__ __align__(128) __nv_bfloat16 As[BM][LDS];
    __shared__ __align__(128) __nv_bfloat16 Bs[BN][LDS];
    __shared__ __align__(128) float scratch[NWARPS][16 * 16];

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / (BN / WN), wn = warp % (BN / WN);
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const bool vec = (K % 8) == 0;  // rows 16-byte aligned: vector loads

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[WM / 16][WN / 16];
#pragma unroll
    for (int i = 0; i < WM / 16; ++i)
#pragma unroll
        for (int j = 0; j < WN / 16; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile<BM>(As, A, M, K, m0, k0, vec);
        load_tile<BN>(Bs, Bt, N, K, n0, k0, vec);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[WM / 16];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[WN / 16];
#pragma unroll
            for (int i = 0; i < WM / 16; ++i)
                wmma::load_matrix_sync(a[i], &As[wm * WM + 16 * i][kk], LDS);
#pragma unroll
            for (int j = 0; j < WN / 16; ++j)  // B(k, n) = Bt[n][k]: column-major B with ld = LDS
                wmma::load_matrix_sync(b[j], &Bs[wn * WN + 16 * j][kk], LDS);
#pragma unroll
            for (int i = 0; i < WM / 16; ++i)
#pragma unroll
                for (int j = 0; j < WN / 16; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

    // store: straight to C where the 16 x 16 block is inside C and rows are 32-byte aligned, else through scratch
    const bool aligned = (N % 8) == 0;
#pragma unroll
    for (int i = 0; i < WM / 16; ++i) {
#pragma unroll
        for (int j = 0; j < WN / 16; ++j) {
            const int r = m0 + wm * WM + 16 * i, c = n0 + wn * WN + 16 * j;
            if (aligned && r + 16 <= M && c + 16 <= N) {
                wmma::store_matrix_sync(C + (size_t)r * N + c, acc[i][j], N, wmma::mem_row_major);
            } else if (r < M && c < N) {
                wmma::store_matrix_sync(scratch[warp], acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int t = lane; t < 256; t += 32) {
                    const int rr = r + t / 16, cc = c + t % 16;
                    if (rr < M && cc < N) {
                        C[(size_t)rr * N + cc] = scratch[warp][t];
                    }
                }
                __syncwarp();
            }
        }
    }
}

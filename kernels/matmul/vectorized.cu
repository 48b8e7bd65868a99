// vectorized: the 2D block tiling with 128-bit accesses: float4 loads of A and
// B from global memory, A's tile stored transposed in shared memory so that
// the product reads both fragments as float4, and float4 stores of C.
//
// Source: the "vectorize shared and global memory accesses" rung of the public
// SGEMM ladders (transposing A on its way into shared memory); issue 11's
// rung 3. Loads and edges: tile_io.cuh.
//
// Adds over `blocktile_2d`: a quarter of the load and store instructions.
// Each shared-memory fragment load is one LDS.128 instead of four LDS.32, so
// the counters it should move are shared-memory load instructions per FFMA
// (smsp__inst_executed_op_shared_ld over the FFMA count) and the issue slots
// they took; global loads become LDG.128 (same sectors, fewer requests).
// Shapes whose rows are not 16-byte aligned (K or N not a multiple of 4) take
// the element-by-element path of tile_io.cuh: correct, and slower.
//
// Launch: (BM/TM)*(BN/TN) threads, grid (cdiv(N, BN), cdiv(M, BM)).

#include "tile_io.cuh"

#include "../need.cuh"
NEED(BM); NEED(BN); NEED(BK); NEED(TM); NEED(TN);
#define NT ((BM / TM) * (BN / TN))

static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are read and written as float4");
static_assert(BM % TM == 0 && BN % TN == 0 && NT <= 1024, "block tile and thread count");

extern "C" __global__ void __launch_bounds__(NT)
    matmul_vectorized(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                      int M, int N, int K)
{
    __shared__ __align__(16) float As[BK * BM];  // transposed: As[k * BM + m]
    __shared__ __align__(16) float Bs[BK * BN];  // Bs[k * BN + n]

    const int tid = threadIdx.x;
    const int tc = tid % (BN / TN);
    const int tr = tid / (BN / TN);
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    const bool vec = vector_ok(A, B, C, N, K);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }
    float a[TM], b[TN];
    ATile<BM, BK, NT> at;
    BTile<BK, BN, NT> bt;

    for (int t = 0; t < K; t += BK) {
        at.fetch(A, M, K, row0, t, vec, tid);
        bt.fetch(B, N, K, t, col0, vec, tid);
        at.store(As, tid);
        bt.store(Bs, tid);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4 *>(&As[k * BM + tr * TM + i]);
                a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4 *>(&Bs[k * BN + tc * TN + j]);
                b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += a[i] * b[j];
                }
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const float4 v = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            store4(C, M, N, row0 + tr * TM + i, col0 + tc * TN + j, v, vec);
        }
    }
}

// blocktile_2d: each thread computes a TM x TN tile of C as a sum of outer
// products of register fragments (TM elements of A's column, TN of B's row).
//
// Source: the "2D blocktiling" rung of the public SGEMM ladders; the register
// blocking of Volkov and Demmel's SGEMM in two dimensions; issue 11's rung 2.
//
// Adds over `blocktile_1d`: reuse in registers in both directions. Per step k
// a thread loads TM + TN values from shared memory and issues TM*TN FFMAs
// (16 loads for 64 FFMAs at 8 x 8, against 9 for 8 in `blocktile_1d`). The
// counter it should move: shared-memory loads per FFMA, and with it the
// issue slots left to FFMA (sm__inst_executed_pipe_fma over all
// instructions). A 128 x 128 block tile halves DRAM bytes per FLOP again.
//
// Launch: (BM/TM)*(BN/TN) threads in one dimension, grid (cdiv(N, BN),
// cdiv(M, BM)). Edges: zero-filled tiles, guarded stores; any M, N, K.

#include "../need.cuh"
#include "block_tiles.cuh"
NEED(BM); NEED(BN); NEED(BK); NEED(TM); NEED(TN);
#define NT ((BM / TM) * (BN / TN))

static_assert(BM % TM == 0 && BN % TN == 0, "the block tile must be a whole number of thread tiles");
static_assert(NT <= 1024, "(BM/TM)*(BN/TN) threads must fit in a block");

extern "C" __global__ void __launch_bounds__(NT)
    matmul_blocktile_2d(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                        int M, int N, int K)
{
    __shared__ float As[BM * BK];  // As[m * BK + k]
    __shared__ float Bs[BK * BN];  // Bs[k * BN + n]

    const int tid = threadIdx.x;
    const int tc = tid % (BN / TN);
    const int tr = tid / (BN / TN);
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            acc[i][j] = 0.0f;
        }
    }
    float a[TM], b[TN];

    for (int t = 0; t < K; t += BK) {
        load_block<BM, BK, NT>(As, A, M, K, row0, t, tid);  // consecutive threads read consecutive k
        load_block<BK, BN, NT>(Bs, B, K, N, t, col0, tid);  // and consecutive n
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                a[i] = As[(tr * TM + i) * BK + k];
            }
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                b[j] = Bs[k * BN + tc * TN + j];
            }
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += a[i] * b[j];  // the outer product of the two fragments
                }
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + tr * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + tc * TN + j;
            if (row < M && col < N) {
                C[(size_t)row * N + col] = acc[i][j];
            }
        }
    }
}

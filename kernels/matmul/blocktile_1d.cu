// blocktile_1d: each thread computes a column of TM elements of C from
// registers; a BM x BN block tile is staged through shared memory BK at a time.
//
// Source: the first register-blocking step of the public SGEMM ladders that
// followed Volkov and Demmel (a "1D blocktiling" kernel); issue 11's rung 1.
//
// Adds over `unrolled` (one column of BM results per thread, A from shared
// memory, B from global): both A and B go through shared memory in tiles of
// BM x BK and BK x BN, and each element of B read from shared memory feeds TM
// multiply-adds (TM accumulators in registers). The counter it should move:
// shared-memory loads per FFMA (about 1 + 1/TM instead of 2 for the tiled
// kernels) and DRAM bytes per FLOP (a 64 x 64 block tile reuses every element
// of A and B 64 times).
//
// Launch: BM*BN/TM threads in one dimension, grid (cdiv(N, BN), cdiv(M, BM)).
// Edges: tiles overhanging A or B are zero-filled in shared memory; only
// elements inside C are written, so M, N and K are arbitrary.

#include "../need.cuh"
#include "block_tiles.cuh"
NEED(BM); NEED(BN); NEED(BK); NEED(TM);
#define NT (BM * BN / TM)

static_assert(BM % TM == 0, "BM must be a multiple of TM");
static_assert(NT <= 1024, "BM*BN/TM threads must fit in a block");

extern "C" __global__ void __launch_bounds__(NT)
    matmul_blocktile_1d(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                        int M, int N, int K)
{
    __shared__ float As[BM * BK];  // As[m * BK + k]
    __shared__ float Bs[BK * BN];  // Bs[k * BN + n]

    const int tid = threadIdx.x;
    const int tc = tid % BN;  // this thread's column of the block tile
    const int tr = tid / BN;  // and its group of TM rows
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    float acc[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        acc[i] = 0.0f;
    }

    for (int t = 0; t < K; t += BK) {
        load_block<BM, BK, NT>(As, A, M, K, row0, t, tid);  // consecutive threads read consecutive k
        load_block<BK, BN, NT>(Bs, B, K, N, t, col0, tid);  // and consecutive n
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k * BN + tc];  // one shared load of B for TM multiply-adds
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                acc[i] += As[(tr * TM + i) * BK + k] * b;
            }
        }
        __syncthreads();
    }
    const int col = col0 + tc;
    if (col < N) {
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = row0 + tr * TM + i;
            if (row < M) {
                C[(size_t)row * N + col] = acc[i];
            }
        }
    }
}

// cluster_tile: big register tiles for a mid-sized product, its k range split
// over the blocks of a thread-block cluster. Each thread keeps 8 x 8 outputs
// (64 accumulators; `splitk`'s threads keep 16) of a BM x BN block tile; the
// CL blocks of a cluster each multiply 1/CL of the tile's k range, and the
// first sums the others' partial tiles from their shared memory (distributed
// shared memory), in rank order, and writes C once. For a product whose big
// tiles are too few for the SMs (1023 x 1025 x 1024: 72 tiles of 128 x 128 on
// 132 SMs) and whose small tiles spend their time on loads and sums: with CL
// = 3 the 216 blocks keep every SM busy with two thirds of a tile's depth at
// most, in registers that reuse each shared-memory read 8 times.
//
// Adds over `splitk` (tiles of 32 x 32 or 32 x 48, k split over a block's
// warps, 4 x 4 thread tiles): 8 x 8 thread tiles in two 4-wide halves per side
// (the layout of the `warptile` and `double_buffer` rungs' threads), two
// shared stages filled from registers fetched while the other is multiplied
// (one barrier a stage), and the k split across blocks only. Over `streamk`
// (256 x 128 tiles, partial tiles through a global workspace): tiles a third
// the size, no workspace, no counters, no atomics.
// The counter it should move: the FFMA pipe's share of issue slots
// (smsp__issue_active.avg.pct_of_peak_sustained_active with FFMA the larger
// part of smsp__sass_thread_inst_executed_op_ffma_pred_on.sum) at 1023 x 1025
// x 1024, with SM active cycles near elapsed cycles (sm__cycles_active.avg over
// sm__cycles_elapsed.avg).
//
// Source: the 8 x 8 register tile in two halves as the CUDA SGEMM kernels of
// the race (`warptile`, after Simon Boehm's SGEMM worklog, kernel 10) and
// CUTLASS's thread-level GEMM; split-K across a cluster through distributed
// shared memory as the CUDA programming guide's cluster examples; the shape
// from issue 40 (the FP32 dispatcher at 60% of cuBLAS SGEMM at 1023 x 1025 x
// 1024 with `streamk`).
//
// With FOLD > 0 (the `f` build), the blocks of a last column of tiles FOLD
// or fewer columns wide do not multiply a whole tile (narrow.cuh: a warp takes
// four rows of A at a time, its lanes along k, against B's few columns staged
// in shared memory; the cluster sums them as a tile). 1023 x 1025 x 1024
// makes 72 tiles of 128 x 128, 144 blocks with CL = 2, 16 of them (the ninth
// column of tiles, one column of C) light. Built for one block an SM (MINB 1:
// 144 registers), the 12 blocks past the 132 SMs wait for the SMs the light
// ones leave within microseconds; two blocks an SM (MINB 2) let the hardware
// place two whole tiles on one SM, and the build ran as slow as the plain one
// (on an H200: 128 us against 67 for cuBLAS SGEMM; with MINB 1, 77.7 us). The
// counter it should move: the elapsed cycles against those at 1024^3. Source:
// the shape from issue 40; the FP32 rule's wave count
// (gpumm.run.rule.columns_of) leaves such tiles out.
//
// Edges: every M, N and K (elements one at a time, zeros outside); global
// loads are 4 bytes, so no alignment is assumed (B's rows of 1025 floats).

#include <cooperative_groups.h>

#include "../need.cuh"
#include "narrow.cuh"

NEED(BM);
NEED(BN);
NEED(CL);    // blocks of a cluster splitting one tile's k range (1: none)
NEED(MINB);  // blocks per SM the registers must allow (__launch_bounds__)
NEED(FOLD);  // the widest last column of tiles whose blocks multiply only its columns (0: none)

constexpr int TM = 8, TN = 8, BK = 8;
constexpr int TX = BN / TN, TY = BM / TM;    // threads across and down the tile
constexpr int NT = TX * TY;                  // threads in the block
constexpr int AP = BM + 4;                   // A's stage row (k) in floats: padded, the transposing stores conflict-free
constexpr int A_PER = (BM * BK + NT - 1) / NT, B_PER = (BK * BN + NT - 1) / NT;
constexpr int STAGE = BK * (AP + BN);        // floats: A's tile transposed, then B's
constexpr int CH = 16;                       // accumulators a thread hands over per round of the cluster's sum

static_assert(BM % 16 == 0 && BN % 16 == 0, "two 4-wide halves per side");
static_assert(NT % 32 == 0, "whole warps");
static_assert(2 * STAGE >= CH * NT, "a round of the cluster's sum fits in the stages");
static_assert(2 * STAGE * 4 <= 48 * 1024, "static shared memory");
static_assert(CL >= 1 && CL <= 8, "a portable cluster");
static_assert(narrow::smem_floats<BM, FOLD>() <= 2 * STAGE, "a narrow tile's staging fits in the stages");
static_assert(FOLD < BN, "a narrow column of tiles is narrower than a tile");

#if CL > 1
#define CLUSTER __cluster_dims__(CL, 1, 1)
#else
#define CLUSTER
#endif

extern "C" __global__ void CLUSTER __launch_bounds__(NT, MINB)
    matmul_cluster_tile(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N,
                        int K)
{
    __shared__ __align__(16) float smem[2 * STAGE];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int part = blockIdx.x % CL;
    const int row0 = blockIdx.y * BM, col0 = (blockIdx.x / CL) * BN;
    const int stages = (K + BK - 1) / BK;
    const int kbeg = (part * stages / CL) * BK, kend = min(K, ((part + 1) * stages / CL) * BK);
#if FOLD > 0
    if (N - col0 <= FOLD) {  // a narrow last column of tiles (the cluster's blocks alike)
        narrow::columns<BM, NT, FOLD, CL>(A, B, C, M, N, K, smem, row0, col0, kbeg, kend, part);
        return;
    }
#endif

    float a_r[A_PER], b_r[B_PER];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int p = 0; p < A_PER; ++p) {
            const int e = tid + p * NT, k = e % BK, m = e / BK;  // a warp: 4 rows of 8 columns (32-byte sectors)
            a_r[p] = (e < BM * BK && row0 + m < M && k0 + k < kend) ? A[(size_t)(row0 + m) * K + k0 + k] : 0.0f;
        }
#pragma unroll
        for (int p = 0; p < B_PER; ++p) {
            const int e = tid + p * NT, k = e / BN, n = e % BN;
            b_r[p] = (e < BK * BN && k0 + k < kend && col0 + n < N) ? B[(size_t)(k0 + k) * N + col0 + n] : 0.0f;
        }
    };
    auto store = [&](float *s) {
#pragma unroll
        for (int p = 0; p < A_PER; ++p) {
            const int e = tid + p * NT;
            if (e < BM * BK) {
                s[(e % BK) * AP + e / BK] = a_r[p];  // bank 4k + m: the 32 stores of a warp hit 32 banks
            }
        }
#pragma unroll
        for (int p = 0; p < B_PER; ++p) {
            if (tid + p * NT < BK * BN) {
                s[BK * AP + tid + p * NT] = b_r[p];
            }
        }
    };

    float acc[TM][TN] = {};
    int buf = 0;
    if (kbeg < kend) {
        fetch(kbeg);
        store(smem);
    }
    __syncthreads();
    for (int k0 = kbeg; k0 < kend; k0 += BK) {
        const bool more = k0 + BK < kend;
        if (more) {
            fetch(k0 + BK);  // in flight while this stage is multiplied
        }
        const float *As = smem + buf * STAGE, *Bs = As + BK * AP;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            const float4 a0 = *reinterpret_cast<const float4 *>(&As[k * AP + ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4 *>(&As[k * AP + BM / 2 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4 *>(&Bs[k * BN + tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4 *>(&Bs[k * BN + BN / 2 + tx * 4]);
            a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w, a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
            b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += a[i] * b[j];
                }
            }
        }
        if (more) {
            store(smem + (buf ^ 1) * STAGE);  // the other stage: its readers passed the last barrier
        }
        __syncthreads();
        buf ^= 1;
    }

#if CL > 1
    // the cluster's partial tiles summed by rank 0 in rounds of CH accumulators a thread: the others write theirs
    // into their own shared memory, rank 0 adds them in rank order, read through distributed shared memory
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    float *flat = &acc[0][0];
#pragma unroll
    for (int r = 0; r < TM * TN / CH; ++r) {
        if (part != 0) {
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                smem[c * NT + tid] = flat[r * CH + c];
            }
        }
        cluster.sync();
        if (part == 0) {
            for (int q = 1; q < CL; ++q) {
                const float *theirs = cluster.map_shared_rank(smem, q);
#pragma unroll
                for (int c = 0; c < CH; ++c) {
                    flat[r * CH + c] += theirs[c * NT + tid];
                }
            }
        }
        cluster.sync();  // rank 0 has read this round before the next is written
    }
    if (part != 0) {
        return;
    }
#endif
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + i - 4);
        if (r >= M) {
            continue;
        }
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + (j < 4 ? tx * 4 + j : BN / 2 + tx * 4 + j - 4);
            if (c < N) {
                C[(size_t)r * N + c] = acc[i][j];
            }
        }
    }
}

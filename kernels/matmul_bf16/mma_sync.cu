// Rung 2 of the BF16 ladder: PTX mma.sync.aligned.m16n8k16 (bf16 in, fp32 accumulate) fed by ldmatrix from a
// swizzled, conflict-free shared layout, with a STAGES-deep cp.async pipeline (the Ampere way; sm_80+).
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major).
// Adds over rung 1 (wmma): (1) asynchronous global->shared copies (cp.async.cg, 16 B, zero-filled past the
// edges) STAGES-1 tiles ahead of the math, so loads overlap the tensor cores instead of alternating with them;
// (2) the shared tiles stored as 128-byte rows (BK = 64 bf16) with 16-byte chunk q of row r at q ^ (r % 8), so
// that each 8-address phase of an ldmatrix reads 8 different bank groups (no padding, no conflicts);
// (3) ldmatrix.x4 to load a 16 x 16 fragment in one instruction instead of wmma's loads; (4) a larger warp tile
// (WM x WN of C per warp in registers). Counters it should move: shared-memory bank conflicts
// (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld) to ~0, stalls on barriers/long scoreboard down, tensor
// pipe utilisation up. SASS shows HMMA.16816.F32.BF16 and LDSM.
// Where the idea comes from: NVIDIA's CUTLASS 2.x multistage GEMM (cp.async pipelines, XOR-swizzled shared
// layouts for ldmatrix) and the PTX ISA's mma.sync / ldmatrix fragment layouts.
// Shapes: any M, N, K >= 1 (K % 8 != 0 takes a slow element-wise staging path; the pipeline is the same).
#include <stdint.h>

#include "../need.cuh"
#include "geometry.cuh"
NEED(BM); NEED(BN); NEED(WM); NEED(WN); NEED(STAGES);
#define BK 64
#define NWARPS ((BM / WM) * (BN / WN))
#define THREADS (32 * NWARPS)
#define MF (WM / 16)  // m16 fragments per warp
#define NF (WN / 8)   // n8 fragments per warp
#define STAGE_BYTES ((BM + BN) * 128)
#define SMEM_BYTES (STAGES * STAGE_BYTES)
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0, "tile shape");

BF16_GEOM(.rung = 2, .bm = BM, .bn = BN, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = SMEM_BYTES,
          .cluster = 1);

__device__ __forceinline__ uint32_t swz(int row, int chunk)  // byte offset of 16-B chunk `chunk` of row `row`
{
    return row * 128 + ((chunk ^ (row & 7)) << 4);
}

// ROWS x 64 tile of a K-major matrix (R rows, K columns) at (r0, k0) into the swizzled stage at `dst`
template <int ROWS>
__device__ __forceinline__ void load_tile(uint32_t dst, const uint16_t *__restrict__ g, int R, int K, int r0, int k0,
                                          bool vec)
{
    constexpr int CH = ROWS * 8;
#pragma unroll
    for (int i = threadIdx.x; i < CH; i += THREADS) {
        const int r = i >> 3, q = i & 7;
        const int gr = r0 + r, gk = k0 + 8 * q;
        const uint32_t s = dst + swz(r, q);
        if (vec) {  // K % 8 == 0: a chunk is all in or all out
            const bool in = gr < R && gk < K;
            const uint16_t *p = in ? g + (size_t)gr * K + gk : g;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(p), "r"(in ? 16 : 0)
                         : "memory");
        } else {
            uint32_t e[8];
#pragma unroll
            for (int t = 0; t < 8; ++t) {
                e[t] = (gr < R && gk + t < K) ? g[(size_t)gr * K + gk + t] : 0u;
            }
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(s), "r"(e[0] | (e[1] << 16)),
                         "r"(e[2] | (e[3] << 16)), "r"(e[4] | (e[5] << 16)), "r"(e[6] | (e[7] << 16))
                         : "memory");
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) bf16_gemm(const uint16_t *__restrict__ A,
                                                                   const uint16_t *__restrict__ Bt,
                                                                   float *__restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / (BN / WN), wn = warp % (BN / WN);
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const bool vec = (K % 8) == 0;
    const int nk = (K + BK - 1) / BK;

    float acc[MF][NF][4];
#pragma unroll
    for (int i = 0; i < MF; ++i)
#pragma unroll
        for (int j = 0; j < NF; ++j)
#pragma unroll
            for (int t = 0; t < 4; ++t)
                acc[i][j][t] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < nk) {
            load_tile<BM>(base + s * STAGE_BYTES, A, M, K, m0, s * BK, vec);
            load_tile<BN>(base + s * STAGE_BYTES + BM * 128, Bt, N, K, n0, s * BK, vec);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }

    for (int kt = 0; kt < nk; ++kt) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
        __syncthreads();  // tile kt landed for everyone; everyone is done with tile kt-1's stage
        {
            const int nt = kt + STAGES - 1;
            if (nt < nk) {
                const uint32_t st = base + (nt % STAGES) * STAGE_BYTES;
                load_tile<BM>(st, A, M, K, m0, nt * BK, vec);
                load_tile<BN>(st + BM * 128, Bt, N, K, n0, nt * BK, vec);
            }
            asm volatile("cp.async.commit_group;" ::: "memory");
        }
        const uint32_t sa = base + (kt % STAGES) * STAGE_BYTES, sb = sa + BM * 128;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t a[MF][4], b[NF][2];
#pragma unroll
            for (int i = 0; i < MF; ++i) {  // 16 x 16 of A: rows (lane % 16), chunk 2kk + lane / 16
                const uint32_t p = sa + swz(wm * WM + 16 * i + (lane & 15), 2 * kk + (lane >> 4));
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                             : "r"(p));
            }
#pragma unroll
            // two n8 x k16 fragments of Bt: n rows (lane%8) + 8(lane/16), chunk 2kk + (lane/8)%2
            for (int j = 0; j < NF / 2; ++j) {
                const uint32_t p =
                    sb + swz(wn * WN + 16 * j + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1));
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(b[2 * j][0]), "=r"(b[2 * j][1]), "=r"(b[2 * j + 1][0]), "=r"(b[2 * j + 1][1])
                             : "r"(p));
            }
#pragma unroll
            for (int i = 0; i < MF; ++i)
#pragma unroll
                for (int j = 0; j < NF; ++j)
                    asm volatile(
                        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                        "{%8, %9}, {%0, %1, %2, %3};"
                        : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                        : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");

    // C fragment of mma m16n8: c0, c1 at row lane/4, columns 2(lane%4) + {0,1}; c2, c3 eight rows below
    const bool fast = (m0 + BM <= M) && (n0 + BN <= N) && (N % 2 == 0);
#pragma unroll
    for (int i = 0; i < MF; ++i) {
#pragma unroll
        for (int j = 0; j < NF; ++j) {
            const int r = m0 + wm * WM + 16 * i + (lane >> 2), c = n0 + wn * WN + 8 * j + 2 * (lane & 3);
            if (fast) {
                *reinterpret_cast<float2 *>(C + (size_t)r * N + c) = make_float2(acc[i][j][0], acc[i][j][1]);
                *reinterpret_cast<float2 *>(C + (size_t)(r + 8) * N + c) = make_float2(acc[i][j][2], acc[i][j][3]);
            } else {
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        if (r + 8 * h < M && c + e < N)
                            C[(size_t)(r + 8 * h) * N + c + e] = acc[i][j][2 * h + e];
            }
        }
    }
}

// splitk: small block tiles, each tile's k range split over the warps of a
// block and, for a thin and deep product, over the blocks of a cluster. For
// the shapes a big tile cannot fill the GPU with: a product small in every
// side (333 x 517 x 129: 187 tiles of 32 x 32, against 10 of 256 x 128), or
// thin in one (4097 x 33 x 4095: 129 tiles of 32 x 48, each 4095 deep).
// SPLIT groups of warps each compute the whole BM x BN tile over their own
// slice of every stage of KC columns of A (rows of B); the groups' partial
// tiles are summed in shared memory, in group order. With CL > 1 the CL
// blocks of a thread-block cluster (sm_90) each take 1/CL of the stages, and
// the first sums the others' tiles straight from their shared memory
// (distributed shared memory), in rank order, and writes C once.
//
// Adds over `prefetch` (tiles of TILE x TILE, one output per thread): a
// register tile of TM x TN outputs per thread, read from shared memory as
// float4 (A stored transposed, each column 4 floats longer than the tile's
// rows: its stores and its float4 reads free of bank conflicts, a read's
// address a constant offset of the stage's column), a warp's thread tiles
// 8 high and 4 wide where the tile allows (a float4 read of A covers 128
// unique bytes, of B 64, without bank conflicts), the next stage fetched into
// registers while this one is multiplied (each element's offset and bounds
// worked out once, not a stage), and the split of k, which gives a small tile
// the warps a big one has. Over `streamk` (the race's top rung, 256 x 128
// tiles, partial tiles through a global workspace): tiles small
// enough for a small or thin product to give every SM work, and no
// workspace, no atomics, no counters: launches may overlap.
// The counter it should move: SM active cycles against elapsed cycles
// (sm__cycles_active.avg over sm__cycles_elapsed.avg) at a small product,
// and the warps resident per SM (sm__warps_active.avg.pct_of_peak_sustained_active).
//
// Source: split-K inside a block as CUTLASS's "sliced-K" (its GEMM kernels
// with a warp count along K); across a cluster through distributed shared
// memory as the CUDA programming guide's cluster examples; the thin and small
// shapes from issue 40 (the race's top rung at 44% and 8% of cuBLAS SGEMM
// at 4097 x 33 x 4095 and 333 x 517 x 129). The padded column is the
// `no_bank_conflict` rung's idea. The exploration on an H100
// (data/checks/fp32-splitk-h100) chose the candidates of the catalog; the
// padded column, the fetch's offsets and the warp's 8 x 4 thread tiles took
// 4097 x 33 x 4095 from 88 to 82 us on an H200 (data/checks/fp32-thin-h200:
// Nsight Compute had the first build issuing on 66% of cycles, a third of its
// instructions FFMA, shared memory at 74% of its throughput).
//
// Edges: every M, N and K (elements one at a time, zeros outside); global
// loads are 4 bytes, so no alignment is assumed. Limits: the fetch's offsets
// are 32-bit, so KC x N and BM x K stay under 2^32 (N and K under 2^27 with
// these tiles); the grid's y side keeps M under 65,536 x BM.
// The cluster build unrolls the loop over a stage's columns twice: 4 times,
// at its 80 registers (MINB 2), it spilled the three store addresses of A's
// elements and read them back once a stage.

#include <cooperative_groups.h>

#include "../need.cuh"

NEED(BM);
NEED(BN);
NEED(TM);
NEED(TN);
NEED(SPLIT);
NEED(KC);
NEED(MINB);  // blocks per SM the registers must allow (__launch_bounds__)
NEED(CL);    // blocks of a cluster splitting one tile's k range (1: none)
NEED(UNROLL);  // times the loop over a stage's columns is unrolled

constexpr int GX = BN / TN;            // threads across a group's tile
constexpr int GT = GX * (BM / TM);     // threads in one group (one k slice)
constexpr int NT = SPLIT * GT;         // threads in the block
constexpr int BK = KC / SPLIT;         // columns of a stage each group multiplies
constexpr int A_PER = (BM * KC + NT - 1) / NT;
constexpr int B_PER = (KC * BN + NT - 1) / NT;
constexpr int AP = BM + 4;             // floats a column of A's transposed tile takes: 4 more than its rows
constexpr int STAGE = KC * (AP + BN);  // floats: A's tile transposed, then B's
constexpr int RED = (SPLIT + 1) * BM * BN;  // floats: every group's partial tile, then the block's
constexpr int SMEM = STAGE > RED ? STAGE : RED;
constexpr bool WARP8 = BM / TM == 8 && GX % 4 == 0;  // a warp as 8 x 4 thread tiles
constexpr int STAGE_UNROLL = UNROLL;  // `#pragma unroll` takes a constant expression, not a macro

static_assert(TM % 4 == 0 && TN % 4 == 0 && BN % TN == 0 && BM % TM == 0, "float4 reads of whole thread tiles");
static_assert(GT % 32 == 0, "a warp belongs to one k group");
static_assert(KC % 8 == 0 && KC % SPLIT == 0, "the stage is whole 8-column groups, split evenly");
static_assert(CL >= 1 && CL <= 8, "a portable cluster");
static_assert(BM % 8 == 0, "AP / 4 odd: the stores of A's stage free of bank conflicts");
static_assert(SMEM * 4 <= 48 * 1024, "static shared memory");

// element e of A's stage tile in fetch order: a warp takes 8 columns of 4 rows (four 32-byte sectors); its index in
// the transposed tile, column x AP + row: with AP = BM + 4 (AP / 4 odd) the 32 stores of a warp hit 32 banks (for
// BM = 32, 4 x column + row mod 32), and the 4 rows a float4 read takes stay side by side, 16-byte aligned
__device__ __forceinline__ void a_slot(int e, int &m, int &k, int &at)
{
    const int rest = e >> 5;
    k = (rest % (KC / 8)) * 8 + (e & 7);
    m = (rest / (KC / 8)) * 4 + ((e >> 3) & 3);
    at = k * AP + m;
}

#if CL > 1
#define CLUSTER __cluster_dims__(CL, 1, 1)
#else
#define CLUSTER  // a plain launch: a kernel with cluster dimensions, even 1, launched 0.5 to 1 us slower at small shapes
#endif

extern "C" __global__ void CLUSTER __launch_bounds__(NT, MINB)
    matmul_splitk(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) float smem[SMEM];
    float *As = smem, *Bs = smem + KC * AP;
    // a thread's place in its group's tile: where the group's tile is 8 thread tiles high and a multiple of 4 wide, a
    // warp takes 8 rows of 4 columns of thread tiles (its float4 reads of a stage's column: 8 of A and 4 of B, 128
    // and 64 unique bytes, no bank conflicts), else whole rows of them
    const int tid = threadIdx.x, g = tid / GT, t = tid % GT;
    const int tx = WARP8 ? (t / 32) * 4 + t % 4 : t % GX, ty = WARP8 ? (t % 32) / 4 : t / GX;
    const int part = blockIdx.x % CL;  // this block's rank in its cluster: its share of the tile's stages
    const int row0 = blockIdx.y * BM, col0 = (blockIdx.x / CL) * BN;
    const int stages = (K + KC - 1) / KC;
    const int kbeg = (part * stages / CL) * KC, kend = min(K, ((part + 1) * stages / CL) * KC);

    // each element's place in the tile's rows of A (from the block's first row) and in B's stage (from its first
    // row), and whether its row (column) is in the product, worked out once: a stage's fetch adds one 32-bit offset
    // to a base of the stage and checks k only where the stage runs past the block's k range
    unsigned a_off[A_PER], b_off[B_PER];
    int a_k[A_PER], b_k[B_PER];
    bool a_in[A_PER], b_in[B_PER];
#pragma unroll
    for (int p = 0; p < A_PER; ++p) {
        int m, k, at;
        const int e = tid + p * NT;
        a_slot(e, m, k, at);
        a_in[p] = e < BM * KC && row0 + m < M;
        a_k[p] = k;
        a_off[p] = a_in[p] ? (unsigned)m * K + k : 0u;
    }
#pragma unroll
    for (int p = 0; p < B_PER; ++p) {
        const int e = tid + p * NT, k = e / BN, n = e % BN;
        b_in[p] = e < KC * BN && col0 + n < N;
        b_k[p] = k;
        b_off[p] = b_in[p] ? (unsigned)k * N + col0 + n : 0u;
    }
    const float *a_tile = A + (size_t)row0 * K;
    float a_r[A_PER], b_r[B_PER];
    auto fetch = [&](int k0) {
        const bool whole = k0 + KC <= kend;
        const float *a = a_tile + k0, *b = B + (size_t)k0 * N;
#pragma unroll
        for (int p = 0; p < A_PER; ++p) {
            a_r[p] = a_in[p] && (whole || k0 + a_k[p] < kend) ? a[a_off[p]] : 0.0f;
        }
#pragma unroll
        for (int p = 0; p < B_PER; ++p) {
            b_r[p] = b_in[p] && (whole || k0 + b_k[p] < kend) ? b[b_off[p]] : 0.0f;
        }
    };
    auto store = [&]() {
#pragma unroll
        for (int p = 0; p < A_PER; ++p) {
            int m, k, at;
            const int e = tid + p * NT;
            a_slot(e, m, k, at);
            if (e < BM * KC) {
                As[at] = a_r[p];
            }
        }
#pragma unroll
        for (int p = 0; p < B_PER; ++p) {
            const int e = tid + p * NT;
            if (e < KC * BN) {
                Bs[e] = b_r[p];
            }
        }
    };

    float acc[TM][TN] = {};
    fetch(kbeg);
    for (int k0 = kbeg; k0 < kend; k0 += KC) {
        store();
        __syncthreads();
        if (k0 + KC < kend) {
            fetch(k0 + KC);  // in flight while this stage is multiplied
        }
        // unrolled 4 times (fully: no faster at 4097 x 33 x 4095), the cluster build twice: 76 registers without a
        // spill, 2.4% faster there (data/checks/fp32-thin-h200)
#pragma unroll(STAGE_UNROLL)
        for (int kk = 0; kk < BK; ++kk) {
            const int k = g * BK + kk;
            float a[TM], b[TN];
#pragma unroll
            for (int q = 0; q < TM / 4; ++q) {
                const float4 v = *reinterpret_cast<const float4 *>(&As[k * AP + ty * TM + 4 * q]);
                a[4 * q] = v.x, a[4 * q + 1] = v.y, a[4 * q + 2] = v.z, a[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int q = 0; q < TN / 4; ++q) {
                const float4 v = *reinterpret_cast<const float4 *>(&Bs[k * BN + tx * TN + 4 * q]);
                b[4 * q] = v.x, b[4 * q + 1] = v.y, b[4 * q + 2] = v.z, b[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += a[i] * b[j];
                }
            }
        }
        __syncthreads();  // every group is done with the stage before the next is stored
    }

    // the groups' partial tiles side by side in shared memory (the stage is free), summed in group order into the
    // block's tile
    float *red = smem + g * BM * BN, *tile = smem + SPLIT * BM * BN;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int q = 0; q < TN / 4; ++q) {
            const float *s = &acc[i][4 * q];
            *reinterpret_cast<float4 *>(&red[(ty * TM + i) * BN + tx * TN + 4 * q]) = make_float4(s[0], s[1], s[2], s[3]);
        }
    }
    __syncthreads();
    for (int e = tid; e < BM * BN; e += NT) {
        float sum = smem[e];
#pragma unroll
        for (int s = 1; s < SPLIT; ++s) {
            sum += smem[s * BM * BN + e];
        }
        tile[e] = sum;
    }
    // the cluster's blocks' tiles summed in rank order by rank 0, read from their shared memory (distributed shared
    // memory: no workspace in global memory, no atomics); the others keep theirs alive until it has read them
#if CL > 1
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    cluster.sync();
#else
    __syncthreads();
#endif
    if (part == 0) {
        for (int e = tid; e < BM * BN; e += NT) {
            const int r = row0 + e / BN, c = col0 + e % BN;
            if (r < M && c < N) {
                float sum = tile[e];
#if CL > 1
#pragma unroll
                for (int q = 1; q < CL; ++q) {
                    sum += cluster.map_shared_rank(tile, q)[e];
                }
#endif
                C[(size_t)r * N + c] = sum;
            }
        }
    }
#if CL > 1
    cluster.sync();
#endif
}

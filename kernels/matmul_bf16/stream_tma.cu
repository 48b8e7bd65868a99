// The weight stream through the TMA and wgmma, split along K in a cluster (issue 40): C = A · Btᵀ for up to 16
// tokens, the weight as wgmma's 64-row operand.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major). Computed as
// Cᵀ = Bt · Aᵀ: a block owns ROWS weight rows (ROWS / 64 consumer warpgroups, each wgmma m64n16k16 with the
// weight's 64 rows on the instruction's M side and the 16 tokens on its N side), and SPLIT blocks of a thread-block
// cluster share those rows, each a contiguous SPLIT-th of K.
// Adds over stream_mma.cu (mma.sync fed from registers, data/checks/model-decode-m16-h200: 8 to 16 points under the
// weight read alone on gate and up, down, QKV): (1) one producer thread keeps STAGES tiles of the weight
// (ROWS x 64, one 2-D TMA box a stage) and of the tokens (16 x 64, zeros past M) in flight through the TMA, on
// mbarriers, where warps can hold only what their registers take; the consumers free a stage as soon as their
// wgmma has read it; (2) split-K without a workspace: each block of the cluster writes its partial sums to its
// shared memory, and after a cluster barrier each block adds up a SPLIT-th of the tile from all of them through
// distributed shared memory (ld.shared::cluster) and stores it, so C is written once, in one kernel, in a fixed
// order (the same sums every run). Counters it should move: dram__bytes_read.sum.per_second toward the weight
// read alone's at M = 16 (the bytes in flight per SM: STAGES x ROWS x 128 bytes), with few warps resident.
// Where it comes from: cuBLAS's own choice at these shapes (Nsight Compute names nvjet_sm90_tss_128x16 with a
// split-K reduction at 16 tokens, data/checks/model-decode-m16-h200), the "swap A and B" of decoding GEMMs, and
// this ladder's TMA pipeline (pipeline.cuh, rung 3 on); the cluster reduction from the PTX ISA (mapa,
// ld.shared::cluster, barrier.cluster). sm_90a.
// Shapes: M ≤ 16 (rows of C past 16 would stay unwritten, as the checks' NaN poison shows; the model step gives it
// no more, gpumm.run.layers.takes), any N, K a multiple of 8 (the TMA's row pitch); edges zero-filled by the TMA.
#include "../need.cuh"
#include "geometry.cuh"
#include "pipeline.cuh"

NEED(MAX_M); NEED(ROWS); NEED(SPLIT); NEED(STAGES); NEED(KSUB);
static_assert(MAX_M == 16, "MAX_M: the tokens are wgmma's N side of 16");
static_assert(ROWS % 64 == 0 && ROWS <= 256, "ROWS: whole warpgroups of 64 rows, one TMA box");
static_assert(SPLIT >= 1 && SPLIT <= 8, "SPLIT: a portable cluster (at most 8 blocks)");
#define NWG (ROWS / 64)
#define THREADS (128 * NWG + 32)  // the consumer warpgroups, then the producer's warp
#define KS (BK * KSUB)  // a stage's depth along K: KSUB boxes of 64 side by side, KSUB x 128 bytes of each row
// the stages (tokens as the A tile, weight as the B tile; box j of a stage at j x its box's bytes), then the
// block's partial sums where it splits K (fp32, ROWS x 16)
using Smem = Stages<16 * KSUB, ROWS * KSUB, STAGES, (SPLIT > 1 ? ROWS * 16 * 4 : 0)>;

BF16_GEOM(.rung = 0, .bm = 16, .bn = ROWS, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = SPLIT, .abox = 16, .bbox = ROWS, .tma = 1);

#if SPLIT > 1
#define CLUSTER_ATTR __cluster_dims__(SPLIT, 1, 1)
#else
#define CLUSTER_ATTR
#endif

// d (8 floats a thread) += the weight's 64 x 16 (descriptor da) times the tokens' 16 x 16 (db), both K-major in
// the 128-byte swizzle; scale_d 0: d = the product (the first k-step). wgmma_ops.cuh has the race's wider N.
__device__ __forceinline__ void wgmma_n16(float (&d)[8], uint64_t da, uint64_t db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\n"
                 "setp.ne.b32 p, %10, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(da), "l"(db), "r"(scale_d));
}

// a float at shared address `addr` of CTA `cta` of the cluster (itself included)
__device__ __forceinline__ float ld_cluster(uint32_t addr, uint32_t cta)
{
    float v;
    asm volatile(
        "{\n.reg .b32 ra;\n"
        "mapa.shared::cluster.u32 ra, %1, %2;\n"
        "ld.shared::cluster.f32 %0, [ra];\n}"
        : "=f"(v)
        : "r"(addr), "r"(cta)
        : "memory");
    return v;
}

extern "C" __global__ void CLUSTER_ATTR __launch_bounds__(THREADS, 1)
    bf16_stream_tma(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                    float *__restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x;
    const uint32_t rank = SPLIT > 1 ? cluster_rank() : 0;
    const int n0 = (blockIdx.x / SPLIT) * ROWS;
    const int nk = (K + KS - 1) / KS;  // stages' k-tiles; this block's: [kt0, kt1)
    const int kt0 = (int)(rank * nk / SPLIT), kt1 = (int)((rank + 1) * nk / SPLIT);

    sm.init(&tmA, &tmW, NWG * 4);  // a stage is free once every consumer warp has released it
    __syncthreads();

    // a consumer thread's d[4j + 2h + e]: weight row 64 wg + 16 w + g + 8h of the tile, token 8j + 2t + e
    const int lane = tid % 32, w = (tid / 32) % 4, wg = tid / 128;
    const int n = n0 + 64 * wg + 16 * w + (lane >> 2), m = 2 * (lane & 3);
    const int role = __shfl_sync(0xffffffffu, tid / 128, 0);  // warp-uniform, as the compiler can see
    if (role >= NWG) {  // the producer's warp: one thread issues the copies
        if (tid == 128 * NWG) {
            Ring<STAGES> ring;
            produce(ring, sm.full, sm.empty, kt1 - kt0, Smem::TX, [&](int s, uint32_t bar, int k) {
                const int k0 = (kt0 + k / BK) * KS;  // produce counts k in steps of BK, one a stage
#pragma unroll
                for (int j = 0; j < KSUB; ++j) {
                    tma_load(sm.a_at(s) + j * 16 * 128, &tmA, bar, k0 + j * BK, 0);
                    tma_load(sm.b_at(s) + j * ROWS * 128, &tmW, bar, k0 + j * BK, n0);
                }
            });
        }
    } else {
        float d[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            d[i] = 0.f;
        }
        const Release<1> release{sm.empty};
        Ring<STAGES> ring;
        int prev = 0;
        consume(ring, prev, sm.full, kt1 - kt0, [&](int s, int kt) {
#pragma unroll
            for (int j = 0; j < KSUB; ++j) {
                const uint64_t dw = desc_sw128(sm.b_at(s) + j * ROWS * 128 + wg * 64 * 128);
                const uint64_t dt = desc_sw128(sm.a_at(s) + j * 16 * 128);
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {  // +32 bytes a k-step inside the swizzled row
                    wgmma_n16(d, dw + 2 * kk, dt + 2 * kk, kt > 0 || j > 0 || kk > 0);
                }
            }
        }, release);
        wg_wait<0>();  // the last group done (its stage need not be freed: no copy comes after it)
        fence_acc(d);
        if (SPLIT == 1) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const int row = n + 8 * ((i >> 1) & 1), tok = m + 8 * (i >> 2) + (i & 1);
                if (tok < M && row < N) {
                    C[(size_t)tok * N + row] = d[i];
                }
            }
        } else {  // split-K: the partial sums to this block's shared memory, value i of thread tid at [i][tid]
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                asm volatile("st.shared.f32 [%0], %1;" ::"r"(sm.c + 4 * (i * 128 * NWG + tid)), "f"(d[i]) : "memory");
            }
        }
    }
    if (SPLIT == 1) {
        return;
    }
    // after a cluster barrier, value i of every thread summed over the cluster's blocks by block i % SPLIT
    cluster_sync();
    if (tid < 128 * NWG) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            if (i % SPLIT == (int)rank) {
                float v = 0.f;
#pragma unroll
                for (int r = 0; r < SPLIT; ++r) {
                    v += ld_cluster(sm.c + 4 * (i * 128 * NWG + tid), r);
                }
                const int row = n + 8 * ((i >> 1) & 1), tok = m + 8 * (i >> 2) + (i & 1);
                if (tok < M && row < N) {
                    C[(size_t)tok * N + row] = v;
                }
            }
        }
    }
    cluster_sync();  // no block leaves while another still reads its partial sums
}

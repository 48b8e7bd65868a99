// The weight stream with the weight and the tokens on rings of their own (issue 40): more of the weight in flight.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major), as
// stream_tma.cu: Cᵀ = Bt · Aᵀ, a block owns 64 weight rows, one consumer warpgroup multiplies them with wgmma
// m64n16k16 along all of K. Adds over stream_tma.cu: there a stage holds the weight's boxes and the tokens' side by
// side, so a fifth of the block's shared memory holds tokens, which the L2 serves in a fraction of the DRAM's
// time, and a PDL launch's producer can hold only five stages of the weight (160 KiB) before it must wait for the
// kernel before. Here the weight has a ring of WST stages and the tokens one of TST, each with its producer thread
// (two warps): the weight's producer never waits for the kernel before, and 192 KiB or more of the weight is in
// flight. Counter it should move: dram__bytes_read.sum.per_second on the layers of few 64-row tiles (QKV: 96, the
// output layer and down: 64 blocks on 132 SMs), where a block's bytes in flight set its rate (stream_tma.cu with
// 128, 160 KiB of the weight a block: down at 86, 91% of the DRAM bound; 80 and 100 KiB: 64 and 77%,
// data/checks/model-decode-pdl-h200 and model-decode-rings-h200). Where it comes from: stream_tma.cu, with
// CUTLASS's per-operand pipelines in mind (a producer per operand). sm_90a.
// Shapes: M ≤ 16, any N, K a multiple of 8 (the TMA's row pitch); edges zero-filled by the TMA.
#include "pdl.cuh"
#include "geometry.cuh"
#include "pipeline.cuh"
#include "stream_store.cuh"

NEED(MAX_M); NEED(KSUB); NEED(WST); NEED(TST);
static_assert(MAX_M == 16, "MAX_M: the tokens are wgmma's N side of 16");
static_assert(TST >= 3, "TST: the consumers free a token stage one stage late, and the L2 needs two in flight");
#define ROWS 64                  // weight rows a block: one consumer warpgroup
#define THREADS (128 + 32 + 32)  // the consumer warpgroup, the weight's producer warp, the tokens'
#define KS (BK * KSUB)           // a stage's depth along K: KSUB boxes of 64 side by side

// the block's dynamic shared memory from a 1024-B aligned base: the weight's WST stages, the tokens' TST, then a
// full and an empty mbarrier per stage of each
struct Rings {
    static constexpr int W_BYTES = ROWS * 128 * KSUB, T_BYTES = 16 * 128 * KSUB;
    static constexpr int SMEM = WST * W_BYTES + TST * T_BYTES + 1024 + 16 * (WST + TST);
    uint32_t w, t, wfull, wempty, tfull, tempty;
    __device__ __forceinline__ explicit Rings(const uint8_t *raw)
    {
        w = (smem_u32(raw) + 1023) & ~1023u;
        t = w + WST * W_BYTES;
        wfull = t + TST * T_BYTES;
        wempty = wfull + 8 * WST;
        tfull = wempty + 8 * WST;
        tempty = tfull + 8 * TST;
    }
};

BF16_GEOM(.rung = 0, .bm = 16, .bn = ROWS, .bk = BK, .stages = WST, .threads = THREADS, .smem = Rings::SMEM,
          .cluster = 1, .abox = 16, .bbox = ROWS, .tma = 1, .l2_fetch = 128);

// one operand's producer: nk stages of KSUB boxes onto a ring of NST, each stage freed by the 4 consumer warps
template <int NST, class Load>
__device__ __forceinline__ void feed(uint32_t full, uint32_t empty, int nk, uint32_t bytes, Load load)
{
    Ring<NST> ring;
    for (int kt = 0; kt < nk; ++kt) {
        mbar_wait(empty + 8 * ring.s, ring.ph ^ 1);  // a fresh barrier passes parity 1 at once
        mbar_expect_tx(full + 8 * ring.s, bytes);
        load(ring.s, full + 8 * ring.s, kt * KS);
        ring.next();
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_stream_rings(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                      float *__restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const Rings sm(smem_raw);
    const int tid = threadIdx.x, n0 = blockIdx.x * ROWS;
    const int nk = (K + KS - 1) / KS;  // stages

    pdl_launch_dependents();  // the next launch may start once every block is here
    if (tid == 0) {
        tma_prefetch_map(&tmA);
        tma_prefetch_map(&tmW);
        for (int s = 0; s < WST; ++s) {
            mbar_init(sm.wfull + 8 * s, 1);
            mbar_init(sm.wempty + 8 * s, 4);
        }
        for (int s = 0; s < TST; ++s) {
            mbar_init(sm.tfull + 8 * s, 1);
            mbar_init(sm.tempty + 8 * s, 4);
        }
        mbar_init_fence();
    }
    __syncthreads();

    // warp-uniform where the compiler can see it: a divergent branch around wgmma would serialise them (ptxas C7518)
    if (__shfl_sync(0xffffffffu, tid / 128, 0) == 1) {  // the producers' warps: one thread each issues the copies
        if (tid == 128) {  // the weight: no kernel before writes it, so it streams from the start
            const uint64_t policy = l2_evict_first();  // read once this step (stream_tma.cuh)
            feed<WST>(sm.wfull, sm.wempty, nk, Rings::W_BYTES, [&](int s, uint32_t bar, int k0) {
#pragma unroll
                for (int j = 0; j < KSUB; ++j) {
                    tma_load_hint(sm.w + s * Rings::W_BYTES + j * ROWS * 128, &tmW, bar, k0 + j * BK, n0, policy);
                }
            });
        } else if (tid == 160) {  // the tokens: the kernel before's output
            pdl_wait();
            feed<TST>(sm.tfull, sm.tempty, nk, Rings::T_BYTES, [&](int s, uint32_t bar, int k0) {
#pragma unroll
                for (int j = 0; j < KSUB; ++j) {
                    tma_load(sm.t + s * Rings::T_BYTES + j * 16 * 128, &tmA, bar, k0 + j * BK, 0);
                }
            });
        }
        return;
    }
    float d[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        d[i] = 0.f;
    }
    Ring<WST> wr;
    Ring<TST> tr;
    int pw = 0, pt = 0;  // the stages of the k-tile before, still read by its wgmma group
    const bool lane0 = tid % 32 == 0;
    for (int kt = 0; kt < nk; ++kt) {
        mbar_wait(sm.wfull + 8 * wr.s, wr.ph);
        mbar_wait(sm.tfull + 8 * tr.s, tr.ph);
        wg_fence();
#pragma unroll
        for (int j = 0; j < KSUB; ++j) {  // the weight's box as wgmma's A (64 rows), the tokens' as its B (N = 16)
            mma_ktile<16>(d, sm.w + wr.s * Rings::W_BYTES + j * ROWS * 128, sm.t + tr.s * Rings::T_BYTES + j * 16 * 128,
                          kt == 0 && j == 0);
        }
        wg_commit();
        wg_wait<1>();  // the group before is done: its stages can be refilled
        if (kt > 0 && lane0) {
            mbar_arrive(sm.wempty + 8 * pw);
            mbar_arrive(sm.tempty + 8 * pt);
        }
        pw = wr.s;
        pt = tr.s;
        wr.next();
        tr.next();
    }
    wg_wait<0>();  // the last group done (its stages need not be freed: no copy comes after them)
    fence_acc(d);
    pdl_wait();  // C may be what the kernel before reads
    store_rows(d, C, M, N, n0, tid);
}

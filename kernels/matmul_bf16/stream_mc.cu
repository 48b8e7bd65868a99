// The TMA's weight stream with the tokens multicast to a thread-block cluster (issue 40): C = A · Btᵀ for up to 16
// tokens.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major), as
// stream_tma.cu computes it (a block per 64 weight rows on wgmma m64n16k16's M side, the tokens on its N side, one
// producer thread keeping STAGES stages of KSUB TMA boxes in flight, the weight's boxes evict first in the L2).
// Adds over stream_tma.cu (each block loads its own copy of the tokens' boxes: 448 blocks x 64 boxes of 2 KiB at
// gate and up, a quarter more L2 -> SM traffic than the weight's, and 1.84 M of the 2.99 M L2 sectors the TMA
// stream reads there beyond the DRAM's, data/checks/model-decode-evict-h200 t4): SHARE neighbouring blocks (64 rows
// each) form a cluster, and each stage's KSUB boxes of the tokens are loaded once for it, box j by the block of
// rank j % SHARE, multicast into every block's shared memory (the same offset) and counted on every block's full
// barrier. A stage may be refilled only when every block of the cluster has read it, so a stage's empty barrier
// counts the consumer warps of all SHARE blocks (each warp arrives on its own block's and, through mapa, on the
// others'). Counters it should move: the L2's sectors read for the TMA (lts__t_sectors_srcunit_tex_op_read) down
// by 1 - 1/SHARE of the tokens', dram__cycles_active up toward the weight read alone's on gate and up.
// Where it comes from: cuBLAS's kernel at these shapes (nvjet_sm90_tss_128x16_64x11_2x1: a cluster of 2 by its
// name, read as a guess), this ladder's rung 6 (cluster.cu: the shared operand multicast, the stage released in
// both CTAs), CUTLASS 3's PipelineTmaAsync with a cluster shape. sm_90a.
// Shapes: M ≤ 16, any N, K a multiple of 8 (the TMA's row pitch). The grid is whole clusters: a block past N loads
// zeros (the TMA's fill past the edge) and runs the same pipeline as its peers, storing nothing.
#include "stream_tma.cuh"

NEED(SHARE);
static_assert(SHARE >= 2 && SHARE <= 4, "SHARE: 2 to 4 blocks a cluster");

BF16_GEOM(.rung = 0, .bm = 16, .bn = ROWS, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = SHARE, .abox = 16, .bbox = ROWS, .tma = 1);

// a consumer warp frees stage s in every block of the cluster
__device__ __forceinline__ void release_all(uint32_t empty, int s)
{
#pragma unroll
    for (int r = 0; r < SHARE; ++r) {
        mbar_arrive_cluster(empty + 8 * s, r);
    }
}

extern "C" __global__ void __cluster_dims__(SHARE, 1, 1) __launch_bounds__(THREADS, 1)
    bf16_stream_mc(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                   float *__restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, n0 = blockIdx.x * ROWS;
    const int nk = (K + KS - 1) / KS;  // stages
    const uint32_t rank = cluster_rank();

    sm.init(&tmA, &tmW, 4 * SHARE);  // a stage is free once the 4 consumer warps of every block have released it
    cluster_sync();                  // every block's barriers initialised before any multicast or remote arrival

    // warp-uniform where the compiler can see it: a divergent branch around wgmma would serialise them (ptxas C7518)
    if (__shfl_sync(0xffffffffu, tid / 128, 0) == 1) {  // the producer's warp: one thread issues the copies
        if (tid == 128) {
            Ring<STAGES> ring;
            const uint64_t policy = l2_evict_first();
            produce(ring, sm.full, sm.empty, nk, Smem::TX, [&](int s, uint32_t bar, int k) {
                const int k0 = (k / BK) * KS;  // produce counts k in steps of BK
#pragma unroll
                for (int j = 0; j < KSUB; ++j) {
                    if (j % SHARE == (int)rank) {
                        tma_load_multicast(sm.a_at(s) + j * 16 * 128, &tmA, bar, k0 + j * BK, 0, (1u << SHARE) - 1);
                    }
                    tma_load_hint(sm.b_at(s) + j * ROWS * 128, &tmW, bar, k0 + j * BK, n0, policy);
                }
            });
        }
    } else {
        float d[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            d[i] = 0.f;
        }
        Ring<STAGES> ring;
        int prev = 0;
        consume(ring, prev, sm.full, nk, [&](int s, int kt) { mma_stage(d, sm, s, kt == 0); },
                [&](int s) { release_all(sm.empty, s); });
        wg_wait<0>();  // the last group done (its stage need not be freed: no copy comes after it in any block)
        fence_acc(d);
        store_rows(d, C, M, N, n0, tid);
    }
    cluster_sync();  // no block leaves while another may still arrive on its barriers or multicast into it
}

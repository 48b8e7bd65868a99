// The TMA's weight stream split evenly over every SM (issue 40), Stream-K style: C = A · Btᵀ for up to 16 tokens.
//
// C (fp32, M x N, row-major) = A (bf16, M x K, row-major) * B, B given as Bt (bf16, N x K, row-major), as
// stream_tma.cu computes it (a 64-row tile of the weight on wgmma m64n16k16's M side, the tokens on its N side,
// one producer thread keeping STAGES stages of KSUB TMA boxes in flight).
// Adds over stream_tma.cu (a block per 64-row tile: down's 64 tiles leave half of an H200's 132 SMs idle, gate and
// up's 448 run in 3.4 waves, and each block starts with an empty pipeline): a persistent grid of one block per SM,
// and the tiles' stages (a tile's 64 rows x KSUB x 64 columns) laid end to end and cut into equal runs, one a
// block. A block streams its run without a break, its producer running on from one tile into the next; a tile
// cut between blocks is summed by the block that holds its first stage: each later block writes the partial sums
// of the tile its run begins in to a workspace slot of its own and raises the slot's flag, and the first block,
// at the end of its run, waits for those flags and adds the slots before it stores the tile. Every SM streams
// the same number of bytes whatever the layer's tile count. Counter it should move: dram__bytes_read.sum.per_
// second toward the weight read alone's on down and on the layers of few tiles (the output layer, QKV), with
// gpu__time_duration down by the tail wave on gate and up.
// Where it comes from: Stream-K (Osama et al., PPoPP 2023: equal shares of the MAC loop iterations, the tiles cut
// between blocks fixed up through a workspace and flags), as CUTLASS and this ladder's FP32 `streamk` rung do it;
// here with no data-parallel part, every tile being a run of stages. sm_90a.
// Waits: a block waits only on blocks after it, whose runs begin with the partial they owe, and every block of the
// grid (at most one an SM, min(SMS, MAXG) of them) is resident at once, so none waits on a block not yet started.
// The workspace and flags are the module's: one launch at a time on a device (each waiting block lowers the
// flags it saw raised, ready for the next launch). A flag not raised within about a second stops the kernel
// (trap) rather than hang it.
// Shapes: M ≤ 16, any N, K a multiple of 8 (the TMA's row pitch); edges zero-filled by the TMA.
#include "stream_tma.cuh"

#define MAXG 256  // blocks the workspace holds: a slot of 64 rows x 16 tokens each

BF16_GEOM(.rung = 0, .bm = 16, .bn = ROWS, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = 1, .abox = 16, .bbox = ROWS, .tma = 1);

__device__ float4 sk_partial[MAXG][ROWS * 16 / 4];
__device__ int sk_flag[MAXG];

// the first stage of block b's run of the u stages shared by g blocks
__device__ __forceinline__ int run_start(int b, int u, int g)
{
    return (int)((long long)b * u / g);
}

__device__ __forceinline__ void flag_raise(int *f)
{
    asm volatile("st.release.gpu.global.b32 [%0], 1;" ::"l"(f) : "memory");
}
__device__ __forceinline__ int flag_read(const int *f)
{
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_stream_sk(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                   float *__restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, b = blockIdx.x, g = gridDim.x;
    if (g > MAXG) {  // more blocks than workspace slots: C stays as it was (the catalog's grid is at most MAXG)
        return;
    }
    const int nk = (K + KS - 1) / KS, units = ((N + ROWS - 1) / ROWS) * nk;  // stages a tile, in all
    const int u0 = run_start(b, units, g), u1 = run_start(b + 1, units, g);

    sm.init(&tmA, &tmW, 4);  // a stage is free once each of the 4 consumer warps has released it
    __syncthreads();

    // warp-uniform where the compiler can see it: a divergent branch around wgmma would serialise them (ptxas C7518)
    if (__shfl_sync(0xffffffffu, tid / 128, 0) == 1) {  // the producer's warp: one thread issues the copies
        if (tid == 128) {
            const uint64_t policy = weight_policy();
            Ring<STAGES> ring;
            for (int u = u0; u < u1; ++u) {
                const int k0 = (u % nk) * KS, n0 = (u / nk) * ROWS, s = ring.s;
                const uint32_t bar = sm.full + 8 * s;
                mbar_wait(sm.empty + 8 * s, ring.ph ^ 1);  // a fresh barrier passes parity 1 at once
                mbar_expect_tx(bar, Smem::TX);
                load_stage(sm, s, bar, &tmA, &tmW, k0, n0, policy);
                ring.next();
            }
        }
        return;
    }
    const bool lane0 = tid % 32 == 0;
    const Release<1> release{sm.empty};
    Ring<STAGES> ring;
    float d[8] = {};
    for (int u = u0; u < u1;) {  // a segment: the run's stages kb..ke-1 of tile t
        const int t = u / nk, kb = u % nk, ke = min(nk, kb + (u1 - u));
        int prev = -1;
        for (int kt = kb; kt < ke; ++kt) {
            mbar_wait(sm.full + 8 * ring.s, ring.ph);
            wg_fence();
            mma_stage(d, sm, ring.s, kt == kb);
            wg_commit();
            wg_wait<1>();  // the previous stage's group is done: its stage can be refilled
            if (prev >= 0 && lane0) {
                release(prev);
            }
            prev = ring.s;
            ring.next();
        }
        wg_wait<0>();
        fence_acc(d);
        if (lane0) {
            release(prev);  // the producer may be running on into the next tile
        }
        u += ke - kb;
        float4 *slot = sk_partial[b] + 2 * tid;
        if (kb > 0) {  // the tile began in an earlier block's run: its partial sums to this block's slot
            slot[0] = make_float4(d[0], d[1], d[2], d[3]);
            slot[1] = make_float4(d[4], d[5], d[6], d[7]);
            __threadfence();
            named_sync(1, 128);
            if (tid == 0) {
                flag_raise(&sk_flag[b]);
            }
            continue;
        }
        // the tile's first stage is here: add what the later blocks whose runs begin inside it owe, then store
        for (int o = b + 1; o < g; ++o) {
            const int s0 = run_start(o, units, g);
            if (s0 >= (t + 1) * nk) {
                break;
            }
            if (s0 == run_start(o + 1, units, g)) {
                continue;  // an empty run owes nothing
            }
            if (tid == 0) {
                int spins = 0;
                while (!flag_read(&sk_flag[o])) {
                    if (++spins > (1 << 26)) {
                        __trap();
                    }
                    __nanosleep(64);
                }
                sk_flag[o] = 0;
            }
            named_sync(1, 128);
            const float4 *from = sk_partial[o] + 2 * tid;
            const float4 p = __ldcg(from), q = __ldcg(from + 1);
            d[0] += p.x, d[1] += p.y, d[2] += p.z, d[3] += p.w;
            d[4] += q.x, d[5] += q.y, d[6] += q.z, d[7] += q.w;
        }
        store_rows(d, C, M, N, t * ROWS, tid);
    }
}

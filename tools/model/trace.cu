// stream_tma.cu's kernel with time stamps (exploration, issue 40: where does a PDL launch of the TMA weight stream
// spend the 2 us a launch that QKV and the output layer lose?). Each block records its id, its SM and the
// globaltimer at: its start, its producer's first stages asked for, the producer's wait done, the last stage asked
// for, the consumers' first and last stage in, their wait done before C, and the end (tools/model/trace.py).
// Built from kernels/matmul_bf16 with the catalog build's defines (tools/model/trace.py says how). As run for
// data/checks/model-decode-boundary-h200: it carries that exploration's late trigger (PDL_LATE, built 0: the
// catalog's kernel).
#include "pdl.cuh"
#include "stream_tma.cuh"

__device__ unsigned long long trace_rec[16384][9];  // a block's id and SM, then its 8 stamps (ns)
__device__ unsigned trace_n;

__device__ __forceinline__ unsigned long long now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

BF16_GEOM(.rung = 0, .bm = 16, .bn = ROWS, .bk = BK, .stages = STAGES, .threads = THREADS, .smem = Smem::SMEM,
          .cluster = 1, .abox = 16, .bbox = ROWS, .tma = 1, .l2_fetch = 128);

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    bf16_stream_tma(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                    float *__restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    __shared__ volatile unsigned long long st[8];
    if (threadIdx.x == 0) {
        st[0] = now();
    }
    const Smem sm(smem_raw);
    const int tid = threadIdx.x, n0 = blockIdx.x * ROWS;
    const int nk = (K + KS - 1) / KS;  // stages

    // the stage after whose copies the producer lets the next launch start: with PDL_LATE 0 every thread at once,
    // else PDL_LATE stages before the last (the next launch's first loads then come as this one's last drain)
    const int trigger = PDL_LATE ? max(nk - PDL_LATE, 0) : -1;
    if (!PDL_LATE) {
        pdl_launch_dependents();  // the next launch may start once every block is here
    }
    sm.init(&tmA, &tmW, 4);  // a stage is free once each of the 4 consumer warps has released it
    __syncthreads();

    // warp-uniform where the compiler can see it: a divergent branch around wgmma would serialise them (ptxas C7518)
    if (__shfl_sync(0xffffffffu, tid / 128, 0) == 1) {  // the producer's warp: one thread issues the copies
        if (tid == 128) {
            Ring<STAGES> ring;
            const uint64_t policy = l2_evict_first();
            int first = 0;  // stages loaded before produce
#if PDL
            first = nk < STAGES ? nk : STAGES;  // fresh stages: no wait for a consumer
            for (int s = 0; s < first; ++s) {
                mbar_expect_tx(sm.full + 8 * s, Smem::TX);
                load_weight(sm, s, sm.full + 8 * s, &tmW, s * KS, n0, policy);
                if (PDL_LATE && s == trigger) {
                    pdl_launch_dependents();
                }
            }
            for (int s = first; s < nk && s < first + PDL_L2; ++s) {
                prefetch_weight(&tmW, s * KS, n0);
            }
            st[1] = now();  // the first stages' weight asked for
            pdl_wait();  // the tokens are the kernel before's output
            st[2] = now();
            for (int s = 0; s < first; ++s) {
                load_tokens(sm, s, sm.full + 8 * s, &tmA, s * KS);
                ring.next();
            }
#endif
            produce(ring, sm.full, sm.empty, nk - first, Smem::TX, [&](int s, uint32_t bar, int k) {
                load_stage(sm, s, bar, &tmA, &tmW, (k / BK + first) * KS, n0, policy);  // produce counts k by BK
                if (PDL_LATE && k / BK + first == trigger) {
                    pdl_launch_dependents();
                }
            });
            st[3] = now();  // the last stage asked for
        }
        return;
    }
    float d[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        d[i] = 0.f;
    }
    const Release<1> release{sm.empty};
    Ring<STAGES> ring;
    int prev = 0;
    consume(ring, prev, sm.full, nk, [&](int s, int kt) {
        if (tid == 0 && kt == 0) {
            st[4] = now();  // the first stage here (after the tokens)
        }
        mma_stage(d, sm, s, kt == 0);
    }, release);
    if (tid == 0) {
        st[5] = now();  // the last stage here
    }
    wg_wait<0>();  // the last group done (its stage need not be freed: no copy comes after it)
    fence_acc(d);
    pdl_wait();  // C may be what the kernel before reads
    if (tid == 0) {
        st[6] = now();
    }
    store_rows(d, C, M, N, n0, tid);
    asm volatile("bar.sync 1, 128;" ::: "memory");
    if (tid == 0) {
        unsigned sm_id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm_id));
        const unsigned i = atomicAdd(&trace_n, 1u) % 16384;
        trace_rec[i][0] = ((unsigned long long)sm_id << 32) | blockIdx.x;
        for (int j = 0; j < 7; ++j) {
            trace_rec[i][1 + j] = st[j];
        }
        trace_rec[i][8] = now();
    }
}

// The transpose exploration's copy through the Tensor Memory Accelerator's bulk copies (sm_90): is there a
// faster way to stream bytes than float4 loads and stores (the copy kernel, `c4`), one a transpose could use?
// Each block (one warp; thread 0 drives) copies CHUNK_KB KiB chunks, chunk c = blockIdx.x + i * gridDim.x,
// global -> shared by cp.async.bulk (completion on an mbarrier per stage), then shared -> global by
// cp.async.bulk (bulk groups), STAGES buffers, loads AHEAD chunks ahead of the stores. A tail that is not a whole
// chunk is copied float by float by block 0. Not a pipeline kernel: tools/transpose/run.py verifies and times it.

#ifndef STAGES
#define STAGES 4
#endif
#ifndef CHUNK_KB
#define CHUNK_KB 8
#endif
#ifndef AHEAD
#define AHEAD 2
#endif
#define CHUNK (CHUNK_KB * 1024)
static_assert(AHEAD >= 1 && AHEAD < STAGES, "loads run 1 to STAGES - 1 chunks ahead of the stores");

__device__ __forceinline__ unsigned smem(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

extern "C" __global__ void bulk_explore(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    __shared__ __align__(128) unsigned char buf[STAGES][CHUNK];
    __shared__ __align__(8) unsigned long long bar[STAGES];
    const size_t total = (size_t)M * N * sizeof(float);
    const size_t chunks = total / CHUNK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar[s])));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        const size_t mine = chunks > blockIdx.x ? (chunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
        const char *src = reinterpret_cast<const char *>(in);
        char *dst = reinterpret_cast<char *>(out);
        for (size_t i = 0; i < mine + AHEAD; ++i) {
            if (i < mine) {  // load chunk i into buffer i % STAGES, once the store that last read it is done
                const int s = (int)(i % STAGES);
                if (i >= STAGES) {
                    // stores issued after chunk i - STAGES's: STAGES - AHEAD - 1 of them may still be reading
                    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(STAGES - AHEAD - 1) : "memory");
                }
                const size_t c = blockIdx.x + i * gridDim.x;
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&bar[s])), "r"(CHUNK)
                             : "memory");
                asm volatile(
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                        smem(buf[s])),
                    "l"(src + c * CHUNK), "r"(CHUNK), "r"(smem(&bar[s]))
                    : "memory");
            }
            if (i >= AHEAD) {  // store chunk j = i - AHEAD once its load has landed
                const size_t j = i - AHEAD;
                const int s = (int)(j % STAGES);
                const unsigned parity = (unsigned)((j / STAGES) & 1);
                unsigned done = 0;
                while (!done) {
                    asm volatile(
                        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                        : "=r"(done)
                        : "r"(smem(&bar[s])), "r"(parity)
                        : "memory");
                }
                const size_t c = blockIdx.x + j * gridDim.x;
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + c * CHUNK),
                             "r"(smem(buf[s])), "r"(CHUNK)
                             : "memory");
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
        }
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    if (blockIdx.x == 0) {  // the tail, float by float
        const size_t n = (size_t)M * N;
        for (size_t k = chunks * (CHUNK / sizeof(float)) + threadIdx.x; k < n; k += blockDim.x) {
            out[k] = in[k];
        }
    }
}

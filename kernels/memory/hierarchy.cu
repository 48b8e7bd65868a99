// hierarchy: the memory levels of seed 003's device-memory table, measured:
// the latency of each level by a pointer chase, and the bandwidth of shared
// memory, of L2-resident reads and of DRAM reads.
//
// Source: seed 003 lists registers, shared, constant, global memory and the
// L2 per GPU (S3-MEM); the chase is the classic latency micro-benchmark
// (Saavedra and Smith; Wong et al., "Demystifying GPU microarchitecture
// through microbenchmarking", 2010). Beyond the lecture.
//
// chase: one thread follows next[] for `steps` dependent loads: each load's
//   address is the value the previous one returned, so no two are in flight
//   and the time per step is the latency of wherever the chain lives. The
//   nodes sit one 128-byte line apart in a random cycle over a buffer swept
//   from a few KiB to several times the L2: L1, L2 and DRAM plateaus. Plain
//   loads (cached in L1). The final index is written out so that the chain
//   can be checked against the one the host built.
// read_l2: float4 loads that bypass L1 (ld.global.cg, __ldcg) over a buffer
//   a quarter of the L2, `passes` times: after the first pass every load hits
//   the L2.
// read_dram: the same, one pass, over a buffer several times the L2.
// read_shared: each block fills 16 KiB of shared memory, then reads it back
//   `passes` times, a warp's 32 float4 loads consecutive (conflict-free).
// Every reader sums what it read into one float per thread; inputs are all
// 1.0, so the sum is known exactly.

extern "C" __global__ void chase(const unsigned int *next, unsigned int *out, long long *cycles, int steps,
                                 unsigned int start)
{
    unsigned int j = start;
    const long long t0 = clock64();
    for (int i = 0; i < steps; ++i) {
        j = next[j];
    }
    const long long t1 = clock64();
    out[0] = j;
    cycles[0] = t1 - t0;
}

__device__ __forceinline__ float sum4(float4 v) { return v.x + v.y + v.z + v.w; }

extern "C" __global__ void read_l2(const float4 *in, float *out, long long n4, int passes)
{
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p) {
        for (long long i = tid; i < n4; i += stride) {
            acc += sum4(__ldcg(in + i));
        }
    }
    out[tid] = acc;
}

extern "C" __global__ void read_dram(const float4 *in, float *out, long long n4)
{
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (long long i = tid; i < n4; i += stride) {
        acc += sum4(__ldcs(in + i));  // streaming: evict first, the data is read once
    }
    out[tid] = acc;
}

#define SHARED_FLOAT4 1024  // 16 KiB

extern "C" __global__ void read_shared(float *out, int passes)
{
    __shared__ float4 buf[SHARED_FLOAT4];
    for (int i = threadIdx.x; i < SHARED_FLOAT4; i += blockDim.x) {
        buf[i] = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    }
    __syncthreads();
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p) {
        // each pass walks the whole buffer, starting at a different place, so the loads cannot be hoisted
#pragma unroll 4
        for (int k = 0; k < SHARED_FLOAT4; k += blockDim.x) {
            acc += sum4(buf[(threadIdx.x + k + p) & (SHARED_FLOAT4 - 1)]);
        }
    }
    out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// pdl: does programmatic dependent launch (PDL) take a weight read's start and tail off its time? (issue 40)
//
// A decode step launches its layers back to back, and each pays the start of its loads and the drain of its last
// ones: the weight read alone of the H200's 32 MiB output layer moves 76.5% of the 2 GiB read rate, QKV 82.3%
// (data/reference/h200). With PDL (sm_90: the launch attribute programmaticStreamSerializationAllowed) the next
// kernel's blocks may start while the one before finishes: they begin reading their weight, which no kernel writes,
// and wait (griddepcontrol.wait) only before they touch what the one before wrote or reads (here: the sums they
// write out). Every block lets the next grid launch as soon as it starts (griddepcontrol.launch_dependents). Without
// the attribute both instructions do nothing, so one kernel is timed both ways.
//
// read_rows2_pdl: read_stream's read_rows2 (two whole rows a block, 256 threads, 16-byte loads read once) with the
// two instructions; each block writes the sum of its 32-bit words (wrapping), checked by the host.
__device__ __forceinline__ unsigned words4(uint4 v) { return v.x + v.y + v.z + v.w; }

extern "C" __global__ void read_rows2_pdl(const uint4 *__restrict__ in, unsigned *out, long long rows, int row_words)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    unsigned acc = 0;
    for (long long r = 2 * (long long)blockIdx.x; r < rows; r += 2 * (long long)gridDim.x) {
        const uint4 *a = in + r * row_words, *b = a + row_words;
        if (r + 1 < rows) {
#pragma unroll 2
            for (int i = threadIdx.x; i < row_words; i += blockDim.x) {
                const uint4 x = __ldcs(a + i), y = __ldcs(b + i);
                acc += words4(x) + words4(y);
            }
        } else {
            for (int i = threadIdx.x; i < row_words; i += blockDim.x) {
                acc += words4(__ldcs(a + i));
            }
        }
    }
    __shared__ unsigned warps[32];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    }
    if ((threadIdx.x & 31) == 0) {
        warps[threadIdx.x >> 5] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned total = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) {
            total += warps[w];
        }
        asm volatile("griddepcontrol.wait;" ::: "memory");
        out[blockIdx.x] = total;
    }
}

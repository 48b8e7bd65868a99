// read_stream: the card's rate of reading DRAM alone, the DRAM bound of a product that almost only reads (issue
// 40: a decode step streams the weights and writes a few values).
//
// Why not the device copy: a copy reads and writes the same bytes, and HBM turns between the two; the weight
// streams of tools/model/ read 3-5% faster than the copy moves on an H100 and an H200 (data/checks/model-decode),
// so a bound from the copy is a roof kernels pass. Two patterns, each 16-byte loads read once (ld.global.cs):
// read_grid: a grid-stride loop, U loads per lane in flight (as the hierarchy study's read_dram, with more in
//   flight);
// read_rows: each block reads rows of row_words 16-byte words, its warps side by side along a row, two loads
//   in flight per lane: the pattern of the weight-streaming kernels (kernels/matmul_bf16/stream.cu), which own
//   whole rows of the weight;
// read_rows2: the same with two rows a block, read side by side (four loads in flight per lane), as the stream's
//   two-row build (bf16_stream_rows2), which read the H200's gate and up and logits weights 2.8% and 3.2% faster
//   than read_rows (data/checks/model-decode-rows-h200).
// read_rows2_pdl: read_rows2 for a launch with programmatic dependent launch (sm_90; the model step's ceiling of
//   each layer, gpumm.run.reads): the next launch may start once every block has, and a block waits for the
//   launch before only to write its sum, so back-to-back launches overlap one's last loads with the next's first
//   (QKV's 48 MiB read at 84% of an H200's read rate plainly, 98.5% so: data/checks/model-decode-pdl-h200).
// The model step takes the best of the first three (and of the copy) as the run's read rate. Every word of the
// rate's buffer holds four 1s, so each block's sum (written to out[block]) is known: the host checks the total
// before any time counts.
#define U 4

__device__ __forceinline__ unsigned words4(uint4 v) { return v.x + v.y + v.z + v.w; }

__device__ __forceinline__ void block_total(unsigned v, unsigned *out)
{
    __shared__ unsigned warps[32];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, off);
    }
    if ((threadIdx.x & 31) == 0) {
        warps[threadIdx.x >> 5] = v;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned total = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) {
            total += warps[w];
        }
        out[blockIdx.x] = total;
    }
}

extern "C" __global__ void read_grid(const uint4 *__restrict__ in, unsigned *out, long long n)
{
    const long long step = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + (U - 1) * step < n; i += U * step) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            v[u] = __ldcs(in + i + u * step);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            acc += words4(v[u]);
        }
    }
    for (; i < n; i += step) {
        acc += words4(__ldcs(in + i));
    }
    block_total(acc, out);
}

extern "C" __global__ void read_rows(const uint4 *__restrict__ in, unsigned *out, long long rows, int row_words)
{
    unsigned acc = 0;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const uint4 *row = in + r * row_words;
#pragma unroll 2
        for (int i = threadIdx.x; i < row_words; i += blockDim.x) {
            acc += words4(__ldcs(row + i));
        }
    }
    block_total(acc, out);
}

__device__ __forceinline__ unsigned rows2_sum(const uint4 *__restrict__ in, long long rows, int row_words)
{
    unsigned acc = 0;
    for (long long r = 2 * (long long)blockIdx.x; r < rows; r += 2 * (long long)gridDim.x) {
        const uint4 *a = in + r * row_words, *b = a + row_words;
        if (r + 1 < rows) {
#pragma unroll 2
            for (int i = threadIdx.x; i < row_words; i += blockDim.x) {
                const uint4 x = __ldcs(a + i), y = __ldcs(b + i);
                acc += words4(x) + words4(y);
            }
        } else {  // an odd last row, read alone
            for (int i = threadIdx.x; i < row_words; i += blockDim.x) {
                acc += words4(__ldcs(a + i));
            }
        }
    }
    return acc;
}

extern "C" __global__ void read_rows2(const uint4 *__restrict__ in, unsigned *out, long long rows, int row_words)
{
    block_total(rows2_sum(in, rows, row_words), out);
}

extern "C" __global__ void read_rows2_pdl(const uint4 *__restrict__ in, unsigned *out, long long rows, int row_words)
{
#if __CUDA_ARCH__ >= 900  // before sm_90 no launch overlaps: read_rows2
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const unsigned acc = rows2_sum(in, rows, row_words);
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    block_total(acc, out);
}

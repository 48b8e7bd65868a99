// How many rows a weight read has open at once, and how much of each it asks for at a time (issue 40: is the TMA
// stream's 8% under the weight read alone its access order?). Not a catalog kernel: tools/model/fronts.py times it.
//
// A block of 1024 threads, one an SM (the caller asks for enough dynamic shared memory to keep a second out), owns
// 64 weight rows, as bf16_stream_tma's blocks do, and reads them in groups of 2^LG rows: a group's rows side by side,
// 2^LC 16-byte words of each at a step, step after step along the row, then the next group. Each thread keeps U = 10 words of
// 16 bytes in flight (160 KiB a block, as the TMA stream's five 32 KiB stages). LG = 6, LC = 3: the TMA stream's
// order (its 64-row boxes, 128 bytes of each row); LG = 0: one row at a time, whole. Writes each block's sum of
// 32-bit words (wrapping) so that every word is read once (fronts.py checks the sums).
#include <stdint.h>

#define U 10

// the block's sum of acc into sums[blockIdx.x]
__device__ __forceinline__ void block_sum(uint32_t acc, uint32_t *sums)
{
    for (int o = 16; o > 0; o >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    }
    __shared__ uint32_t warp_sum[32];
    if ((threadIdx.x & 31) == 0) {
        warp_sum[threadIdx.x >> 5] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t s = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) {
            s += warp_sum[w];
        }
        sums[blockIdx.x] = s;
    }
}

extern "C" __global__ void __launch_bounds__(1024, 1)
    fronts(const uint4 *__restrict__ W, int lk16, int lg, int lc, uint32_t *__restrict__ sums)
{
    const int t = threadIdx.x;
    const uint4 *base = W + ((size_t)blockIdx.x * 64 << lk16);  // the block's 64 rows of 2^lk16 words
    const int total = 64 << lk16;
    const int lstep = lg + lc;                     // words a step: 2^lg rows x 2^lc words
    const int lgroup = lg + lk16;                  // words a group
    const uint32_t cmask = (1u << lc) - 1, smask = (1u << lstep) - 1, gmask = (1u << lgroup) - 1;
    uint32_t acc = 0;
    for (int i0 = t; i0 < total; i0 += 1024 * U) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int i = i0 + u * 1024;
            if (i < total) {
                const uint32_t g = i >> lgroup, in_g = i & gmask;
                const uint32_t step = in_g >> lstep, in_s = in_g & smask;
                const uint32_t row = (g << lg) + (in_s >> lc), col = (step << lc) + (in_s & cmask);
                v[u] = __ldcs(base + ((size_t)row << lk16) + col);
            } else {
                v[u] = make_uint4(0, 0, 0, 0);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            acc += v[u].x + v[u].y + v[u].z + v[u].w;
        }
    }
    block_sum(acc, sums);
}

// The same read with every block's share equal: gridDim.x blocks (a few an SM, persistent), each a contiguous run of
// `words` / gridDim.x words (the last takes the rest), read in order, U words a thread in flight.
extern "C" __global__ void __launch_bounds__(1024, 1)
    fronts_flat(const uint4 *__restrict__ W, long long words, uint32_t *__restrict__ sums)
{
    const long long share = words / gridDim.x, begin = share * blockIdx.x;
    const long long end = blockIdx.x + 1 == gridDim.x ? words : begin + share;
    const int step = blockDim.x;
    uint32_t acc = 0;
    for (long long i0 = begin + threadIdx.x; i0 < end; i0 += (long long)step * U) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const long long i = i0 + (long long)u * step;
            v[u] = i < end ? __ldcs(W + i) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            acc += v[u].x + v[u].y + v[u].z + v[u].w;
        }
    }
    block_sum(acc, sums);
}

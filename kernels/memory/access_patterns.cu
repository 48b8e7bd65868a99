// access_patterns: the coalescing micro-benchmarks of seed 000 (Section 3.3,
// Table 2) and the stride and offset sweep beyond it.
//
// read_rows: thread t sums row t of an n x n row-major matrix, walking along
//   it: the way the naive kernel reads A. At each step the 32 threads of a
//   warp read 32 addresses n floats apart: 32 sectors for 32 floats
//   (uncoalesced).
// read_cols: thread t sums column t, walking down it: the way the naive
//   kernel reads B. At each step a warp reads 32 consecutive floats: 4
//   sectors, one 128-byte line (coalesced).
//   Seed 000 ran n threads on one matrix: 4 to 32 blocks, a few percent of
//   today's GPU. Here `copies` matrices are read at once, thread g taking row
//   (or column) g % n of matrix g / n, so that the GPU is full of such reads;
//   matrix c starts `matrix_stride` floats after matrix c - 1 (n * n: distinct
//   matrices, the DRAM regime; 0: every copy reads the same matrix, the L2
//   regime).
// read_strided: out[i] = in[i * stride + offset]. Consecutive threads read
//   addresses `stride` floats apart, starting `offset` floats past an aligned
//   base; stride 1 and offset 0 is a plain copy, the ceiling the others are
//   measured against. Each thread moves ITEMS elements, all loads issued
//   before the first store (enough bytes in flight to cover DRAM's latency);
//   element j of a thread is blockDim.x elements after element j - 1, so each
//   load instruction of a warp has the pattern above.
// copy4: the copy with 16-byte accesses (float4), ITEMS per thread: what the
//   memory system gives when each thread moves four times the bytes per
//   instruction; the other ceiling next to the device-to-device copy.
//
// Each sum or copy is written once, so that the compiler keeps every load and
// the result can be checked.

#ifndef ITEMS
#define ITEMS 8
#endif

extern "C" __global__ void read_rows(const float *__restrict__ in, float *__restrict__ out, int n,
                                     int copies, long long matrix_stride)
{
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= (long long)n * copies) {
        return;
    }
    const long long c = g / n, t = g % n;
    const float *row = in + c * matrix_stride + t * n;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
        acc += row[k];
    }
    out[g] = acc;
}

extern "C" __global__ void read_cols(const float *__restrict__ in, float *__restrict__ out, int n,
                                     int copies, long long matrix_stride)
{
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= (long long)n * copies) {
        return;
    }
    const long long c = g / n, t = g % n;
    const float *m = in + c * matrix_stride + t;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
        acc += m[(long long)k * n];
    }
    out[g] = acc;
}

extern "C" __global__ void read_strided(const float *__restrict__ in, float *__restrict__ out,
                                        long long count, int stride, int offset)
{
    const long long first = (long long)blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
    float v[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const long long i = first + (long long)j * blockDim.x;
        v[j] = i < count ? in[i * stride + offset] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const long long i = first + (long long)j * blockDim.x;
        if (i < count) {
            out[i] = v[j];
        }
    }
}

extern "C" __global__ void copy4(const float4 *__restrict__ in, float4 *__restrict__ out, long long count4)
{
    const long long first = (long long)blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
    float4 v[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const long long i = first + (long long)j * blockDim.x;
        if (i < count4) {
            v[j] = in[i];
        }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const long long i = first + (long long)j * blockDim.x;
        if (i < count4) {
            out[i] = v[j];
        }
    }
}

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
// read_strided: out[i] = in[i * stride + offset]. Consecutive threads read
//   addresses `stride` floats apart, starting `offset` floats past an aligned
//   base; stride 1 and offset 0 is a plain copy, the ceiling the others are
//   measured against.
//
// Each sum is written once, so that the compiler keeps every load and the
// result can be checked.

extern "C" __global__ void read_rows(const float *__restrict__ in, float *__restrict__ out, int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) {
        return;
    }
    const float *row = in + (size_t)t * n;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
        acc += row[k];
    }
    out[t] = acc;
}

extern "C" __global__ void read_cols(const float *__restrict__ in, float *__restrict__ out, int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
        acc += in[(size_t)k * n + t];
    }
    out[t] = acc;
}

extern "C" __global__ void read_strided(const float *__restrict__ in, float *__restrict__ out,
                                        long long count, int stride, int offset)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        out[i] = in[i * stride + offset];
    }
}

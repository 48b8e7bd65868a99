// naive_uncoalesced: the naive kernel with its thread mapping turned around:
// threadIdx.x runs along the *rows* of C instead of its columns.
//
// Source: seed 000 Section 3.3 (coalescing; Table 2 times the two access
// patterns on their own), which explains why the mapping of Figure 3 matters.
//
// Takes away from `naive`: coalescing. Blocks are 16 x 16 threads, so a warp
// now holds 16 consecutive rows in each of two columns: at each step k it
// reads A[row][k] from 16 different rows (16 sectors for 16 distinct floats)
// and two elements B[k][col], B[k][col + 1] (broadcasts), and at the end it
// writes C with a stride of N floats. Same arithmetic, same result; only the
// addresses a warp touches together change.

extern "C" __global__ void
    matmul_naive_uncoalesced(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                             int M, int N, int K)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: consecutive rows
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) {
        return;
    }
    const float *a = A + (size_t)row * K;
    const float *b = B + col;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += a[k] * b[(size_t)k * N];
    }
    C[(size_t)row * N + col] = acc;
}

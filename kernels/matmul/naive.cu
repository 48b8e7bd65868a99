// naive: one thread per element of C, both operands read straight from global
// memory, no reuse through shared memory.
//
// Source: seed 000 (Cecilia, Garcia, Ujaldon), Section 3.2 and Figure 3; also
// seed 001 Section 4.2.1 and seed 002's "naive" kernel.
//
// Adds: nothing, this is the departure point of the ladder. Blocks are 16 x 16
// threads (as in seed 000's Figure 3) and threadIdx.x runs along the columns
// of C, so a warp is two rows of 16 threads: at each step k its two halves
// read the same 16 consecutive elements of a row of B (64 bytes, coalesced)
// and each half reads one element of A (two broadcasts). Each multiply-add
// needs two global loads: about 1/4 flop per byte, which is why this kernel
// is bandwidth bound (seed 002, S2-CGMA).
//
// C = A * B, row-major, float32; A is M x K, B is K x N, C is M x N.
// Any M, N, K: threads outside C return early.

extern "C" __global__ void
    matmul_naive(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: consecutive columns
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) {
        return;
    }
    const float *a = A + (size_t)row * K;  // this thread's row of A
    const float *b = B + col;              // this thread's column of B, stride N
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += a[k] * b[(size_t)k * N];
    }
    C[(size_t)row * N + col] = acc;
}

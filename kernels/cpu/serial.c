/* serial: the CPU baseline of seed 002's "CPU vs GPU" comparison, compiled.
 *
 * A plain triple loop, one thread, float32, row-major: for each element of C,
 * the dot product of a row of A and a column of B, summed in order of k.
 * Built with the system C compiler at -O2 and no -ffast-math, so that the sum
 * is not reordered (and so not vectorised): the scalar serial code seed 002
 * compared the GPU with, now without any interpreter in the loop (the earlier
 * NumPy row-at-a-time baseline timed Python as much as the CPU).
 *
 * C = A * B with A M x K, B K x N, C M x N. Called through ctypes
 * (gpumm/launch.py).
 */

void matmul_serial(const float *A, const float *B, float *C, int M, int N, int K)
{
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) {
                acc += A[(long)i * K + k] * B[(long)k * N + j];
            }
            C[(long)i * N + j] = acc;
        }
    }
}

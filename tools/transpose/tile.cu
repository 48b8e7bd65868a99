// The transpose exploration's wider tiles: TR x TC tiles (input rows x columns), float4 loads and stores. A
// transpose reads TC * 4 contiguous bytes of each of TR input rows and writes TR * 4 contiguous bytes of each of
// TC output rows; `transpose_pair` reads 128 B (x 64 rows) and writes 256 B (x 32 rows). Longer runs of each
// side keep more of a DRAM page per access, as a copy's do. Block (TC / 4, BR): each thread loads TR / BR
// float4 (every load before its first shared store), then writes the transposed tile a float4 at a time.
// Element (r, c) of the tile sits at column c ^ (r % 32) (c's low five bits flipped: within its half of 32).
// Only M and N that are multiples of 4 (run.py verifies such shapes, edges included). Not a pipeline kernel.

#ifndef TR
#define TR 64
#endif
#ifndef TC
#define TC 64
#endif
#ifndef BR
#define BR 16
#endif
#define THREADS (TC / 4 * BR)
static_assert(TR % BR == 0 && TC % 4 == 0 && TR % 4 == 0, "tile shape");
static_assert(THREADS % (TR / 4) == 0 && TC % (THREADS / (TR / 4)) == 0, "the store passes cover the tile");

extern "C" __global__ void __launch_bounds__(THREADS) tile_explore(const float *__restrict__ in,
                                                                  float *__restrict__ out, int M, int N)
{
    __shared__ float tile[TR][TC];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x0 = blockIdx.x * TC, y0 = blockIdx.y * TR;
    const int x = x0 + 4 * tx;
    float4 v[TR / BR];
#pragma unroll
    for (int k = 0; k < TR / BR; ++k) {
        const int y = y0 + ty + k * BR;
        if (y < M && x < N) {
            v[k] = *reinterpret_cast<const float4 *>(in + (size_t)y * N + x);
        }
    }
#pragma unroll
    for (int k = 0; k < TR / BR; ++k) {
        const int r = ty + k * BR;
        const int s = r & 31;
        tile[r][(4 * tx + 0) ^ s] = v[k].x;
        tile[r][(4 * tx + 1) ^ s] = v[k].y;
        tile[r][(4 * tx + 2) ^ s] = v[k].z;
        tile[r][(4 * tx + 3) ^ s] = v[k].w;
    }
    __syncthreads();
    const int t = ty * (TC / 4) + tx;
    constexpr int PER_ROW = TR / 4;             // threads a float4 each along an output row
    constexpr int ROWS = THREADS / PER_ROW;     // output rows a pass
    const int oc = 4 * (t % PER_ROW);           // output column in the tile = input row
#pragma unroll
    for (int p = 0; p < TC / ROWS; ++p) {
        const int c = t / PER_ROW + p * ROWS;  // output row in the tile = input column
        const int oy = x0 + c, ox = y0 + oc;
        if (oy < N && ox < M) {  // M is a multiple of 4: the 4 rows are inside
            float4 w;
            w.x = tile[oc + 0][c ^ ((oc + 0) & 31)];
            w.y = tile[oc + 1][c ^ ((oc + 1) & 31)];
            w.z = tile[oc + 2][c ^ ((oc + 2) & 31)];
            w.w = tile[oc + 3][c ^ ((oc + 3) & 31)];
            *reinterpret_cast<float4 *>(out + (size_t)oy * M + ox) = w;
        }
    }
}

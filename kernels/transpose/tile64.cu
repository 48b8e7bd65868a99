// tile64: `pair` with 64 x 64 tiles: 16-byte loads and stores, every load of
// a thread (eight float4) issued before its first shared-memory store, and
// each side of the tile 256 contiguous bytes long: the block reads 256 bytes
// of each of 64 input rows and writes 256 bytes of each of 64 output rows
// (`pair` reads 128 bytes of 64 rows and writes 256 of 32).
//
// Source: issue 19's transpose exploration (data/checks/transpose-explore,
// the wider tiles): on an H100 64 x 64 tiles reached 96.5% of the
// device-to-device copy against 94% for `pair`'s, on an H200 94-95% against
// 90-91% (as fast as a plain float4 copy there); 32-row tiles were slower and
// 128-row or 128-column ones no faster.
//
// Adds over `pair`: longer runs of contiguous bytes on both sides (a
// transpose's DRAM accesses jump from row to row on one side; the longer each
// run, the more of each DRAM page an access uses, as a copy's do) and twice
// the bytes in flight per thread. The counter: DRAM throughput (bytes per
// second against the copy's), at the same bytes moved. Block (16, 8), grid
// cdiv(N, 64) x cdiv(M, 64). Element (r, c) of the tile sits at column
// c ^ (r % 32). When M or N is not a multiple of 4 the whole launch moves
// the same tiles element by element.

#define T64 64
#define ROWS_PER_THREAD 8  // T64 / blockDim.y

extern "C" __global__ void __launch_bounds__(128) transpose_tile64(const float *__restrict__ in,
                                                                   float *__restrict__ out, int M, int N)
{
    __shared__ float tile[T64][T64];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int t = ty * 16 + tx;
    const int x0 = blockIdx.x * T64, y0 = blockIdx.y * T64;
    if ((M & 3) || (N & 3)) {  // rows not 16-byte aligned: element by element (reads and writes still coalesced)
        for (int e = t; e < T64 * T64; e += 128) {
            const int r = e / T64, c = e % T64;
            if (y0 + r < M && x0 + c < N) {
                tile[r][c ^ (r & 31)] = in[(size_t)(y0 + r) * N + x0 + c];
            }
        }
        __syncthreads();
        for (int e = t; e < T64 * T64; e += 128) {
            const int c = e / T64, r = e % T64;
            if (x0 + c < N && y0 + r < M) {
                out[(size_t)(x0 + c) * M + y0 + r] = tile[r][c ^ (r & 31)];
            }
        }
        return;
    }
    const int x = x0 + 4 * tx;  // N is a multiple of 4: the 4 columns are inside when x < N
    float4 v[ROWS_PER_THREAD];
    bool inside[ROWS_PER_THREAD];
#pragma unroll
    for (int k = 0; k < ROWS_PER_THREAD; ++k) {  // every load first
        const int y = y0 + ty + 8 * k;
        inside[k] = y < M && x < N;
        if (inside[k]) {
            v[k] = *reinterpret_cast<const float4 *>(in + (size_t)y * N + x);
        }
    }
#pragma unroll
    for (int k = 0; k < ROWS_PER_THREAD; ++k) {
        const int r = ty + 8 * k, s = r & 31;
        if (inside[k]) {
            tile[r][(4 * tx + 0) ^ s] = v[k].x;
            tile[r][(4 * tx + 1) ^ s] = v[k].y;
            tile[r][(4 * tx + 2) ^ s] = v[k].z;
            tile[r][(4 * tx + 3) ^ s] = v[k].w;
        }
    }
    __syncthreads();
    // 16 threads a float4 each along an output row, 8 output rows a pass
    const int oc = 4 * tx;  // output column in the tile = input row
#pragma unroll
    for (int p = 0; p < T64 / 8; ++p) {
        const int c = ty + 8 * p;  // output row in the tile = input column
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

// Exploration for issue 19's transpose goal (the best transpose at 98% of the same run's device-to-device
// copy at 8192 and 16384): candidates around the catalog's `transpose_vec4` (kernels/transpose/vec4.cu),
// built by build.sh and verified and timed by run.py on the GPU. Not part of the pipeline: the winner, if
// any, becomes a catalog variant of its own (with vec4's scalar path for sides that are not multiples of 4).
//
// What the candidates vary (each named in build.sh):
// - TILES: tiles per block, stacked along the input's rows. A thread issues TILES float4 loads before its first
//   store, so TILES times the bytes in flight per thread (the latency-bound side of a DRAM stream), and the
//   grid has T times fewer blocks.
// - STREAM: streaming cache hints (ld.global.cs / st.global.cs: evict first), the hint cudaMemcpy's kernels
//   are thought to use for data touched once.
// - copy_v4: a plain float4 copy with PER_THREAD float4 per thread in flight, for the ceiling a hand copy reaches.
// Only M and N that are multiples of 4 (run.py verifies such shapes, edges included).

#ifndef TILES
#define TILES 1
#endif
#ifndef STREAM
#define STREAM 0
#endif
#ifndef PER_THREAD
#define PER_THREAD 4
#endif
#define TILE 32

__device__ __forceinline__ float4 ld4(const float *p)
{
#if STREAM
    return __ldcs(reinterpret_cast<const float4 *>(p));
#else
    return *reinterpret_cast<const float4 *>(p);
#endif
}

__device__ __forceinline__ void st4(float *p, float4 v)
{
#if STREAM
    __stcs(reinterpret_cast<float4 *>(p), v);
#else
    *reinterpret_cast<float4 *>(p) = v;
#endif
}

// block (8, 32); grid (cdiv(N, 32), cdiv(M, 32 * TILES)): TILES tiles of 32 x 32, one below the other in the input
extern "C" __global__ void transpose_explore(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    __shared__ float tile[TILES][TILE][TILE];
    const int c4 = threadIdx.x * 4;  // this thread's 4 columns within a tile
    const int r = threadIdx.y;       // its row within a tile
    const int x = blockIdx.x * TILE + c4;
    float4 v[TILES];
#pragma unroll
    for (int t = 0; t < TILES; ++t) {  // every load first: TILES float4 in flight per thread
        const int y = (blockIdx.y * TILES + t) * TILE + r;
        v[t] = (y < M && x < N) ? ld4(in + (size_t)y * N + x) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int t = 0; t < TILES; ++t) {  // element (r, c) of a tile sits at column c ^ r (no bank conflicts)
        tile[t][r][(c4 + 0) ^ r] = v[t].x;
        tile[t][r][(c4 + 1) ^ r] = v[t].y;
        tile[t][r][(c4 + 2) ^ r] = v[t].z;
        tile[t][r][(c4 + 3) ^ r] = v[t].w;
    }
    __syncthreads();
    const int oy = blockIdx.x * TILE + r;  // output row = input column
#pragma unroll
    for (int t = 0; t < TILES; ++t) {
        const int ox = (blockIdx.y * TILES + t) * TILE + c4;  // output column = input row
        if (oy < N && ox < M) {  // M is a multiple of 4: the 4 rows are inside
            float4 w;
            w.x = tile[t][c4 + 0][r ^ (c4 + 0)];
            w.y = tile[t][c4 + 1][r ^ (c4 + 1)];
            w.z = tile[t][c4 + 2][r ^ (c4 + 2)];
            w.w = tile[t][c4 + 3][r ^ (c4 + 3)];
            st4(out + (size_t)oy * M + ox, w);
        }
    }
}

// block 256; grid cdiv(n4, 256 * PER_THREAD): each thread copies PER_THREAD float4 (256 apart), loading them all first
extern "C" __global__ void copy_explore(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    const size_t n4 = (size_t)M * N / 4;
    const size_t base = (size_t)blockIdx.x * blockDim.x * PER_THREAD + threadIdx.x;
    float4 v[PER_THREAD];
#pragma unroll
    for (int u = 0; u < PER_THREAD; ++u) {
        const size_t i = base + (size_t)u * blockDim.x;
        v[u] = i < n4 ? ld4(in + 4 * i) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < PER_THREAD; ++u) {
        const size_t i = base + (size_t)u * blockDim.x;
        if (i < n4) {
            st4(out + 4 * i, v[u]);
        }
    }
}

// The weight read alone in the order the weight streams take it (issue 40, a diagnostic of the decode gap): does
// the DRAM give the same rate when a block reads R rows a piece at a time as when it reads whole rows?
//
// The TMA stream (kernels/matmul_bf16/stream_tma.cu) asks, per stage, for 64 weight rows x 128 bytes four times
// over (four boxes side by side along K), and reaches 87-88% of the DRAM bound on gate and up at 16 tokens on an
// H200 where read_rows2 (two whole rows a block, 4 KiB of a row at once) reaches 97%. Here each block owns R
// consecutive rows of ROW_WORDS 16-byte words and walks them in steps of CH bytes of every row, each step's loads
// in the TMA box's order: a row's 128-byte piece (8 lanes), then the next row's, all R rows, then the next 128
// bytes. R = 1, CH = the row: read_rows's pattern. The blocks take groups of R rows grid-stride; every word holds
// four 1s, so each block's sum (out[block]) is known and the host checks the total. ld.global.cs (evict first),
// as the streams' weight loads.
#include <cstdint>

#define ROW_WORDS 512  // a 4096-wide BF16 row: 8 KiB

template <int R, int CH>
__device__ __forceinline__ void tiles(const uint4 *__restrict__ in, unsigned *out, long long n_words)
{
    constexpr int PIECES = CH / 128;              // 128-byte pieces of a row a step
    constexpr int STEP = R * PIECES * 8;          // words a step
    constexpr int PER = (STEP + 255) / 256;       // words a thread a step
    const long long groups = n_words / (ROW_WORDS * (long long)R);
    unsigned acc = 0;
    for (long long g = blockIdx.x; g < groups; g += gridDim.x) {
        const uint4 *base = in + g * R * ROW_WORDS;
        for (int c = 0; c < ROW_WORDS; c += CH / 16) {
            uint4 v[PER];
#pragma unroll
            for (int u = 0; u < PER; ++u) {
                const int i = threadIdx.x + 256 * u;  // word i of the step: lane of a piece, row, piece
                const int w = i % 8, r = (i / 8) % R, p = i / (8 * R);
                v[u] = i < STEP ? __ldcs(base + (long long)r * ROW_WORDS + c + p * 8 + w) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < PER; ++u) {
                acc += v[u].x + v[u].y + v[u].z + v[u].w;
            }
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    }
    __shared__ unsigned warps[8];
    if ((threadIdx.x & 31) == 0) {
        warps[threadIdx.x >> 5] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned t = 0;
        for (int w = 0; w < 8; ++w) {
            t += warps[w];
        }
        out[blockIdx.x] = t;
    }
}

#define TILES(R, CH)                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) read_tiles_r##R##_c##CH(const uint4 *__restrict__ in,    \
                                                                               unsigned *out, long long n)    \
    {                                                                                                         \
        tiles<R, CH>(in, out, n);                                                                             \
    }

TILES(64, 128)
TILES(64, 512)
TILES(64, 1024)
TILES(16, 512)
TILES(16, 2048)
TILES(8, 1024)
TILES(4, 4096)
TILES(2, 8192)
TILES(1, 8192)

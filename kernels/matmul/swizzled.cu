// swizzled: `double_buffer` with A's tile stored transposed through an XOR
// swizzle, so that the transposing stores into shared memory are free of bank
// conflicts.
//
// Source: issue 19's first rung. `double_buffer`'s profile shows about 5e7
// shared-store bank conflicts at 4096 that cuBLAS does not have: a thread
// stores the four floats of a float4 of A (four k, one m) into four rows of
// the transposed tile (As[k * BM + m]); the eight (or, at BK = 8, sixteen)
// consecutive m of a warp's stores meet the four (two) k of the others in the
// same bank. Here the column m of row k is stored at m ^ s(k), with
// s(k) = ((k / 4) mod (BK / 4)) * (128 / BK): the warp's k groups land in
// distinct 8-float (16-float) bank ranges, so each store instruction hits 32
// banks. The XOR touches bits 2 and up of m only, so a float4 of four
// consecutive m stays whole and aligned: the product's LDS.128 reads of A
// apply the same swizzle (A_SWIZZLE in warptile.cu) and, the permutation being
// the same for every lane at one k, stay conflict-free. Cf. the XOR swizzles
// of CUTLASS's shared-memory layouts and of the transposes' `transpose_swizzle`.
//
// The counter it should move: l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st
// (to about 0), and with it issue-slot use. Launch and edges as `double_buffer`.

#include "tile_io.cuh"

#ifndef BK
#error "BK is not defined: kernels/catalog.yaml sets it for every build of this file"
#endif
#define A_SWIZZLE(k) ((((k) >> 2) % (BK / 4)) * (128 / BK))

#define matmul_double_buffer matmul_double_buffer_unused_in_swizzled
#include "double_buffer.cu"
#undef matmul_double_buffer

static_assert(BM % 32 == 0, "the swizzle permutes columns within 32-float groups");
static_assert(BK == 8 || BK == 16 || BK == 32, "a swizzle of 4-float groups for BK / 4 of them in 32 banks");

// A's tile as ATile moves it, stored through the swizzle
template <int ROWS, int DEPTH, int THREADS>
struct ASwizzledTile : ATile<ROWS, DEPTH, THREADS> {
    __device__ __forceinline__ void store(float *As, int tid) const
    {
#pragma unroll
        for (int p = 0; p < ATile<ROWS, DEPTH, THREADS>::PER; ++p) {
            const int e = tid + p * THREADS;
            const int m = e / (DEPTH / 4), k = (e % (DEPTH / 4)) * 4;
            const int ms = m ^ A_SWIZZLE(k);  // one swizzle for k .. k + 3 (a multiple of 4 apart)
            const float4 v = this->r[p];
            As[(k + 0) * ROWS + ms] = v.x;
            As[(k + 1) * ROWS + ms] = v.y;
            As[(k + 2) * ROWS + ms] = v.z;
            As[(k + 3) * ROWS + ms] = v.w;
        }
    }
};

extern "C" __global__ void __launch_bounds__(NT) matmul_swizzled(const float *__restrict__ A,
                                                                const float *__restrict__ B,
                                                                float *__restrict__ C,
                                                                int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK * BM];
    __shared__ __align__(16) float Bs[2][BK * BN];

    const BlockPos b = block_pos(A, B, C, N, K);
    float acc[WMITER * TM][WNITER * TN];
    zero(acc);
    double_buffered_product<ASwizzledTile<BM, BK, NT>, BTile<BK, BN, NT>>(A, B, M, N, K, b, As, Bs, acc);
    warp_tile_store(C, M, N, b, acc);
}

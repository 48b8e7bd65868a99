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
// apply the same swizzle (ASwizzledTile::swizzle, through which warptile.cuh's product
// reads A) and, the permutation being the same for every lane at one k, stay conflict-free. Cf. the XOR swizzles
// of CUTLASS's shared-memory layouts and of the transposes' `transpose_swizzle`.
//
// The counter it should move: l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st
// (to about 0), and with it issue-slot use. Launch and edges as `double_buffer`.

#include "swizzled.cuh"

extern "C" __global__ void __launch_bounds__(NT)
    matmul_swizzled(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                    int M, int N, int K)
{
    double_buffered_block(A, B, C, M, N, K, [&](const BlockPos &b, auto As, auto Bs, auto &acc) {
        double_buffered_product<ASwizzledTile<BM, BK, NT>, BTile<BK, BN, NT>>(A, B, M, N, K, b, As, Bs, acc);
    });
}

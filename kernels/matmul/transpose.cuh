// transpose_b: BT = B^T, the preparation step of the kernels that read B by
// rows (coalesced_bt, no_bank_conflict). A 32 x 32 tile goes through shared
// memory padded to 33 columns, so that both the read of B and the write of BT
// are coalesced and the column read of the tile is free of bank conflicts
// (the optimised transpose of seed 002). Launched with 32 x 8 threads; each
// thread moves 4 elements. B is K x N, BT is N x K.

#ifndef TRANSPOSE_CUH
#define TRANSPOSE_CUH

extern "C" __global__ void transpose_b(const float *__restrict__ B, float *__restrict__ BT, int K, int N)
{
    __shared__ float tile[32][33];
    const int x = blockIdx.x * 32 + threadIdx.x;  // column of B
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int y = blockIdx.y * 32 + j;        // row of B
        if (x < N && y < K) {
            tile[j][threadIdx.x] = B[(size_t)y * N + x];
        }
    }
    __syncthreads();
    const int ox = blockIdx.y * 32 + threadIdx.x;  // column of BT (= row of B)
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int oy = blockIdx.x * 32 + j;        // row of BT (= column of B)
        if (ox < K && oy < N) {
            BT[(size_t)oy * K + ox] = tile[threadIdx.x][j];
        }
    }
}

#endif

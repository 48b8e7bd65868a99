// naive: out = in^T, each thread moving one element straight from global
// memory to global memory. in is M x N, out is N x M, both row-major.
//
// Source: seed 002, "Matrix transpose": the naive version.
//
// Consecutive threads take consecutive columns of a row of `in`: the warp's
// read is coalesced (32 floats, 128 bytes), but those 32 elements land in 32
// different rows of `out`, M floats apart, so its write touches 32 sectors
// for 32 floats (uncoalesced): the counter to watch is the store sectors per
// request (32 here, 4 when coalesced).

extern "C" __global__ void transpose_naive(const float *__restrict__ in, float *__restrict__ out, int M, int N)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;  // column of in = row of out
    const int y = blockIdx.y * blockDim.y + threadIdx.y;  // row of in = column of out
    if (x < N && y < M) {
        out[(size_t)x * M + y] = in[(size_t)y * N + x];
    }
}

// Shared helpers of the BF16 ladder's Hopper rungs (wgmma_tma, warpspec, persistent, cluster, pingpong) and the
// TMA's weight stream: thin inline-PTX wrappers for mbarriers, TMA (cp.async.bulk.tensor) loads, with an L2 cache
// policy or without, and stores, wgmma fences and descriptors, setmaxnreg and clusters, and the two epilogues
// (direct stores of the wgmma accumulators, or a TMA store through a swizzled shared staging buffer). Written from
// the PTX ISA (sections on mbarrier, cp.async.bulk.tensor, createpolicy, wgmma and its shared-memory matrix
// descriptor, setmaxnreg) and the CUDA driver API's cuTensorMapEncodeTiled; not a kernel.
#pragma once
#include <cuda.h>  // CUtensorMap (a 128-byte opaque struct made on the host by cuTensorMapEncodeTiled)
#include <stdint.h>

#include "wgmma_ops.cuh"

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// ---- mbarriers -------------------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// one arrival that also raises the transaction count the TMA copies will bring
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// arrive on the barrier at the same offset in CTA `cta` of the cluster (itself included). Default semantics
// (release at CTA scope): what the arrival orders is the end of this warp's wgmma reads of the stage, which
// wgmma.wait_group has already established. Written `.release.cluster`, ptxas puts MEMBAR.ALL.GPU before every
// arrival (seen in the SASS of the first cluster build: half the speed of rung 5).
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta)
{
    asm volatile(
        "{\n.reg .b32 ra;\n"
        "mapa.shared::cluster.u32 ra, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}" ::"r"(bar),
        "r"(cta)
        : "memory");
}
__device__ __forceinline__ uint32_t mbar_try_wait(uint32_t bar, uint32_t parity)
{
    uint32_t ok;
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}"
        : "=r"(ok)
        : "r"(bar), "r"(parity)
        : "memory");
    return ok;
}
// wait until the phase of parity `parity` has completed (a fresh barrier counts parity 1 as completed)
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    while (!mbar_try_wait(bar, parity)) {
    }
}
// ---- TMA ---------------------------------------------------------------------------------------------------
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap *map)
{
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map) : "memory");
}
// box at (c0 = inner/column element, c1 = row) into shared `dst`, completing `bytes` on mbarrier `bar`
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
            dst),
        "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1)
        : "memory");
}
// tma_load with an L2 cache `policy` for the box's lines (from l2_evict_first, for one)
__device__ __forceinline__ void tma_load_hint(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1,
                                              uint64_t policy)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
                 "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "l"(policy)
                 : "memory");
}
// an L2 cache policy: every line it covers first in line for eviction (data read once)
__device__ __forceinline__ uint64_t l2_evict_first()
{
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}
// the same box written to the same offset `dst` in every CTA of `mask`, completing on each one's `bar`
__device__ __forceinline__ void tma_load_multicast(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1,
                                                   uint16_t mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
        "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
        : "memory");
}
__device__ __forceinline__ void tma_store(const CUtensorMap *map, uint32_t src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"((uint64_t)map),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit()
{
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void bulk_wait()
{
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
// ordinary shared-memory stores made visible to the async proxy (the TMA engine) that reads them next
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---- wgmma -------------------------------------------------------------------------------------------------
__device__ __forceinline__ void wg_fence()
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// keep the compiler from moving accumulator reads/writes across a wgmma wait
template <int R> __device__ __forceinline__ void fence_acc(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i) {
        asm volatile("" : "+f"(d[i])::"memory");
    }
}
// Shared-memory matrix descriptor of a K-major tile stored as the TMA's 128-byte swizzle writes it: rows of 64
// bf16 (128 B), 8-row atoms of 1024 B. Start address >> 4 in bits 0-13, leading byte offset (unused for a
// swizzled K-major operand; 16 B by convention) >> 4 in bits 16-29, stride byte offset (1024 B: from one 8-row
// atom to the next) >> 4 in bits 32-45, base offset 0 (tiles 1024-B aligned), swizzle mode 1 (128 B) in bits
// 62-63. A k-step of 16 elements inside the 128-B row is +32 B on the start address (+2 in the descriptor).
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
           ((uint64_t)1 << 62);
}

// ---- registers, clusters, named barriers ---------------------------------------------------------------------
template <int R> __device__ __forceinline__ void reg_dealloc()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R> __device__ __forceinline__ void reg_alloc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
__device__ __forceinline__ void named_sync(int id, int n)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
// arrive on named barrier `id` of `n` threads without waiting (the other side waits with named_sync)
__device__ __forceinline__ void named_arrive(int id, int n)
{
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}

// ---- epilogues -----------------------------------------------------------------------------------------------
// A warpgroup's m64nTN accumulators: warp w of the group holds rows 16w..16w+15; lane l holds, for each n-block j
// of 8 columns, d[4j], d[4j+1] at row 16w + l/4, columns 8j + 2(l%4) + {0,1}, and d[4j+2], d[4j+3] 8 rows below.
// Direct stores: (r, c) is the lane's first element in C; `fast` when the whole 64 x TN block is inside C and
// N is even (8-byte aligned float2 stores). Each warp store writes 8 rows x 32 contiguous bytes: whole sectors.
template <int TN>
__device__ __forceinline__ void store_direct(const float (&d)[TN / 2], float *__restrict__ C, int M, int N, int r,
                                             int c, bool fast)
{
    if (fast) {
        float *p0 = C + (size_t)r * N + c;
        float *p1 = p0 + (size_t)8 * N;
#pragma unroll
        for (int j = 0; j < TN / 8; ++j) {
            *reinterpret_cast<float2 *>(p0 + 8 * j) = make_float2(d[4 * j], d[4 * j + 1]);
            *reinterpret_cast<float2 *>(p1 + 8 * j) = make_float2(d[4 * j + 2], d[4 * j + 3]);
        }
    } else {
#pragma unroll
        for (int j = 0; j < TN / 8; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = r + 8 * h;
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = c + 8 * j + e;
                    if (row < M && col < N) {
                        C[(size_t)row * N + col] = d[4 * j + 2 * h + e];
                    }
                }
            }
        }
    }
}

// TMA store of a warpgroup's 64 x TN block in chunks of 64 rows x 32 fp32 (128 B rows, the 128-B swizzle: 16-B
// chunk q of row r sits at q ^ (r % 8)), through two 8 KB staging buffers `stage` (1024-B aligned) so that
// the copy of one chunk runs while the next is written. `wg_tid` 0..127, `bar_id` the group's named barrier.
// The TMA clips what lies outside C.
template <int TN>
__device__ __forceinline__ void store_tma(const float (&d)[TN / 2], const CUtensorMap *mapC, uint32_t stage, int row0,
                                          int col0, int wg_tid, int bar_id)
{
    const int lane = wg_tid & 31, w = wg_tid >> 5;
#pragma unroll
    for (int q = 0; q < TN / 32; ++q) {
        const uint32_t buf = stage + (q & 1) * 8192;
        if (wg_tid == 0) {
            bulk_wait_read<1>();  // the copy that last read this buffer (two chunks ago) is done reading
        }
        named_sync(bar_id, 128);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const int j = 4 * q + jj;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = 16 * w + (lane >> 2) + 8 * h;
                const uint32_t a =
                    buf + row * 128 + ((((jj << 1) + ((lane & 3) >> 1)) ^ (row & 7)) << 4) + ((lane & 1) << 3);
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(a), "f"(d[4 * j + 2 * h]),
                             "f"(d[4 * j + 2 * h + 1])
                             : "memory");
            }
        }
        fence_proxy_async();
        named_sync(bar_id, 128);
        if (wg_tid == 0) {
            tma_store(mapC, buf, col0 + 32 * q, row0);
            bulk_commit();
        }
    }
}

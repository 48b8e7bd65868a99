"""Registers and occupancy (S0-S36) and seed 000's PTX estimate of throughput and bandwidth (S0-S37), from a kernel's
resource report and its counted loop.

Pure functions on the run's tables, tested on the CPU.
"""

import math

from gpumm.setup.hardware import fp32_peak, lanes

# Occupancy granularities for compute capability 7.0 and newer (CUDA occupancy
# calculator): registers are allocated per warp in units of 256, and the
# runtime reserves 1 KiB of shared memory per block (8.0 and newer).
REG_ALLOC_UNIT = 256


SMEM_RESERVED_PER_BLOCK = 1024


SMEM_ALLOC_UNIT = 128


def occupancy(threads: int, registers: int, smem_bytes: int, gpu: dict) -> dict:
    """Theoretical occupancy of a kernel on ``gpu`` (provenance's device limits)."""
    max_threads = gpu.get("max_threads_per_sm") or 2048
    max_warps = max_threads // 32
    regs_per_sm = gpu.get("regs_per_sm") or 65536
    smem_per_sm = gpu.get("smem_per_sm") or 0
    warps = math.ceil(threads / 32)
    regs_per_warp = math.ceil(max(registers, 1) * 32 / REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    smem = math.ceil(smem_bytes / SMEM_ALLOC_UNIT) * SMEM_ALLOC_UNIT + SMEM_RESERVED_PER_BLOCK
    limits = {
        "blocks": gpu.get("max_blocks_per_sm") or 32,
        "warps": max_warps // warps,
        "registers": (regs_per_sm // regs_per_warp) // warps,
        "shared memory": smem_per_sm // smem if smem_per_sm else 10**9,
    }
    blocks = min(limits.values())
    limiter = next(k for k in ("warps", "registers", "shared memory", "blocks") if limits[k] == blocks)
    return {
        "blocks_per_sm": blocks,
        "active_warps": blocks * warps,
        "occupancy": blocks * warps / max_warps,
        "limited_by": limiter,
    }


def ptx_estimate(fma: int, instructions: int, global_loads: int, gpu: dict) -> dict:
    """Seed 000's estimate from a loop's instruction counts.

    potential = peak x (multiply-adds / instructions): every issue slot that is
    not a multiply-add is a lost one; required bandwidth = cores x (global
    loads / instructions) x 4 bytes x clock: what feeding that loop at full
    issue rate would need from memory.
    """
    n = lanes(gpu) or 0
    cores = gpu.get("sm_count", 0) * n
    clock = gpu.get("sm_clock_khz", 0) * 1e3
    return {
        "peak_gflops": fp32_peak(gpu) / 1e9,
        "fma_share": fma / instructions,
        "potential_gflops": fp32_peak(gpu) * fma / instructions / 1e9,
        "load_share": global_loads / instructions,
        "required_gbs": cores * global_loads / instructions * 4 * clock / 1e9,
    }

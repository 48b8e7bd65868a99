"""The run's GPU as numbers: FP32 lanes per SM, the FP32 and tensor peaks, the specified DRAM bandwidth and the
on-chip bound, from its provenance.

Pure functions on the run's tables, tested on the CPU.
"""

import math

# FP32 results per clock per SM (fused multiply-add lanes), by compute
# capability: CUDA C++ Programming Guide, "Arithmetic Instructions" table.
FP32_LANES_PER_SM = {
    (7, 0): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128,
    (10, 3): 128,
    (12, 0): 128,
}


def lanes(gpu: dict) -> int | None:
    major, minor = (int(x) for x in str(gpu.get("compute_capability", "0.0")).split("."))
    return FP32_LANES_PER_SM.get((major, minor))


def dram_bandwidth(gpu: dict) -> float:
    """Specified DRAM bandwidth in byte/s: 2 (double data rate) x memory clock x bus width; nan if unknown."""
    clock, bus = float(gpu.get("memory_clock_khz") or 0), float(gpu.get("memory_bus_bits") or 0)
    return 2 * clock * 1e3 * bus / 8 if clock and bus else math.nan


def fp32_peak(gpu: dict) -> float:
    """FP32 peak in flop/s: SMs x lanes x 2 (a fused multiply-add is 2 flops) x SM clock."""
    n = lanes(gpu)
    if n is None or not gpu.get("sm_count") or not gpu.get("sm_clock_khz"):
        return math.nan
    return gpu["sm_count"] * n * 2 * gpu["sm_clock_khz"] * 1e3


# Dense BF16 multiply-adds with FP32 accumulation, in flops per clock per SM (four tensor cores each): Hopper's
# H100 SXM is specified at 989 TFLOP/s with 132 SMs at 1830 MHz, 4096 flops per clock per SM.
TENSOR_BF16_FLOPS_PER_SM = {(9, 0): 4096}
# The SM clock NVIDIA's dense BF16 figure is stated at (H100 SXM and H200: 989 TFLOP/s = 132 x 4096 x 1830 MHz);
# the pages compute the peak at the clock the run recorded and give this beside it.
VENDOR_TENSOR_MHZ = {(9, 0): 1830}


def _capability(gpu: dict) -> tuple[int, ...] | None:
    """(major, minor) of the GPU's compute capability; None where the provenance does not say it as 'M.m'."""
    try:
        return tuple(int(x) for x in str(gpu.get("compute_capability", "0.0")).split("."))
    except ValueError:
        return None


def vendor_tensor_bf16(gpu: dict) -> tuple[float, float]:
    """(NVIDIA's dense BF16 figure for this GPU in flop/s, the SM clock in MHz it is stated at): the peak of
    :func:`tensor_bf16_peak` at that clock; nans if unknown."""
    mhz = VENDOR_TENSOR_MHZ.get(_capability(gpu))
    if mhz is None:
        return math.nan, math.nan
    return tensor_bf16_peak({**gpu, "sm_clock_khz": mhz * 1000}), float(mhz)


def tensor_bf16_peak(gpu: dict) -> float:
    """Dense BF16 tensor-core peak in flop/s (FP32 accumulation): SMs x flops per clock per SM x SM clock; nan for
    a GPU this table does not know."""
    per_sm = TENSOR_BF16_FLOPS_PER_SM.get(_capability(gpu))
    if per_sm is None or not gpu.get("sm_count") or not gpu.get("sm_clock_khz"):
        return math.nan
    return gpu["sm_count"] * per_sm * gpu["sm_clock_khz"] * 1e3


# Bytes per clock per SM that the fastest memory (shared memory and L1: 32 banks of 4 bytes) can deliver: no
# measured rate, whatever level it reads, goes beyond SMs x this x SM clock.
ON_CHIP_BYTES_PER_SM = 128


def on_chip_bandwidth(gpu: dict) -> float:
    """The card's fastest memory's aggregate bandwidth in byte/s (shared memory and L1 of every SM at the SM
    clock); nan where the provenance lacks the SM count or clock."""
    if not gpu.get("sm_count") or not gpu.get("sm_clock_khz"):
        return math.nan
    return gpu["sm_count"] * ON_CHIP_BYTES_PER_SM * gpu["sm_clock_khz"] * 1e3

import functools

import pytest

from gpumm import gpu


@functools.cache
def gpu_probe():
    return gpu.probe()


# An H100's (and H200's) limits, as provenance records them: for the analyses' tests.
HOPPER = {
    "name": "NVIDIA H200",
    "compute_capability": "9.0",
    "sm_count": 132,
    "sm_clock_khz": 1980000,
    "max_threads_per_sm": 2048,
    "regs_per_sm": 65536,
    "smem_per_sm": 233472,
    "max_blocks_per_sm": 32,
}


def pytest_collection_modifyitems(config, items):
    """GPU tests skip, with the reason, where no usable CUDA GPU is found."""
    gpu_items = [i for i in items if "gpu" in i.keywords]
    if not gpu_items:
        return
    found = gpu_probe()
    if not found.ok:
        mark = pytest.mark.skip(reason=f"needs a CUDA GPU: {found.reason}")
        for item in gpu_items:
            item.add_marker(mark)

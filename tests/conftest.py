import functools

import pytest

from gpumm import gpu


@functools.cache
def gpu_probe():
    return gpu.probe()


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

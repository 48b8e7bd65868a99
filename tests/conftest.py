import functools
import shutil
import subprocess

import pytest

from gpumm.run import gpu
from gpumm.setup import paths


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


@pytest.fixture(scope="session")
def tree(tmp_path_factory):
    """A copy of the project's files (what git would clone), without results or environments."""
    dest = tmp_path_factory.mktemp("project")
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=paths.ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for rel in listed:
        src = paths.ROOT / rel
        if src.is_symlink():  # as git keeps it (profiles -> workflow/profiles)
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).symlink_to(src.readlink())
        elif src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


# The variants an archive holds that today's code does not reproduce, and why; the replay marks them stale. Both
# archives are current (data/reference/README.md); a kernel change that stales one names its variants here.
@pytest.fixture
def known_stale() -> dict[str, set[str]]:
    return {
        "h100": set(),
        "h200": set(),
    }

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

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


# The variants an archive holds that today's code does not reproduce, and why; the replay marks them stale
# (data/reference/README.md); a kernel change that stales one names its variants here.
SPLITK = {"splitk_b32x32", "splitk_b32x48", "splitk_b32x48c2"}


@pytest.fixture
def known_stale() -> dict[str, set[str]]:
    return {
        # splitk's padded column, fetch offsets and 8 x 4 warps (data/checks/fp32-thin-h200): the h200 archive is
        # of that code; no H100 was lent since
        "h100": SPLITK,
        "h200": set(),
    }


# The step log of a real measured run (the H100 study of e8858e2, archived as data/reference/h100), up to the step
# that writes the index: what the index of that run read when it said what the run cost.
MEASURED_LOG = Path(__file__).parent / "fixtures" / "measured-h100" / "steps.jsonl"


@pytest.fixture(scope="session")
def measured(tree, tmp_path_factory):
    """A measured report, made without a GPU from real measured numbers: the archived H100 run's raw results and
    builds (restored by a replay in a copy of the project), its own provenance (mode: measure) put back, then the
    collect, pages and index steps as the workflow runs them, the index reading that run's step log. Yields
    (project, report folder)."""
    dest = tmp_path_factory.mktemp("measured") / "project"
    shutil.copytree(tree, dest, symlinks=True)
    env = {**os.environ, "PYTHONPATH": str(dest / "src")}

    def step(*args, **more):
        out = subprocess.run(
            [sys.executable, "-m", *args], cwd=dest, capture_output=True, text=True, env={**env, **more}
        )
        assert out.returncode == 0, (args[:2], out.stdout[-2000:], out.stderr[-3000:])

    step("snakemake", "--cores", "2", "--config", "mode=replay", "replay_from=h100")
    shutil.copy2(dest / "data/reference/h100/raw/provenance.json", dest / "results/raw/provenance.json")
    import pandas as pd

    from gpumm.report.pages import PAGES

    ids = ",".join(pd.read_csv(dest / "results/tables/variants.csv").variant)
    step("gpumm", "collect", "--variants", ids, "--out", "results/tables")
    status = "results/notebooks/pages.json"
    pages = ",".join(p["notebook"] for p in PAGES)
    step(
        "gpumm",
        "pages",
        "--pages",
        pages,
        "--tables",
        "results/tables",
        "--jobs",
        "2",
        "--notebooks-out",
        "results/notebooks",
        "--out",
        "results/report",
        "--status",
        status,
    )
    run = json.loads(MEASURED_LOG.read_text().splitlines()[0])["run"]
    copy = dest / "results" / "run" / "steps.jsonl"  # the index step appends its own line to the log it reads
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(MEASURED_LOG, copy)
    log = {"GPUMM_RUN_LOG": str(copy), "GPUMM_RUN_ID": run}
    index = ("--tables", "results/tables", "--out", "results/report/index.html", "--status", status)
    step("gpumm", "index", *index, **log)
    return dest, dest / "results" / "report"

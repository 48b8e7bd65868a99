"""Where a run happened: GPU, clocks, driver, toolchain, commit, config, date."""

import os
import platform
import re
import shutil
import subprocess
import time

from gpumm.run import devices
from gpumm.run.gpu import ATTRIBUTES
from gpumm.setup import files, paths


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


COMMIT = re.compile(r"[0-9a-f]{7,40}(\+dirty)?")


class ProvenanceError(ValueError):
    """A record the provenance cannot take (a commit that is not one)."""


def git_commit() -> str:
    """The commit of the project tree, '+dirty' when it has changes; env GPUMM_GIT_COMMIT wins (a copy of the
    tree without its history), and must be a commit's hash: anything else is refused, not recorded."""
    given = os.environ.get("GPUMM_GIT_COMMIT")
    if given:
        if not COMMIT.fullmatch(given):
            raise ProvenanceError(
                f"GPUMM_GIT_COMMIT = {given!r} is not a commit: give the tree's hash (git rev-parse HEAD), seven to "
                "forty hexadecimal digits, '+dirty' after it where the tree has changes"
            )
        return given
    sha = _run(["git", "-C", str(paths.ROOT), "rev-parse", "HEAD"])
    if not sha:
        return "unknown"
    dirty = _run(["git", "-C", str(paths.ROOT), "status", "--porcelain", "--untracked-files=no"])
    return sha + ("+dirty" if dirty else "")


def nvcc_version() -> str:
    text = _run(["nvcc", "--version"]) if shutil.which("nvcc") else ""
    return text.splitlines()[-1] if text else "not found"


def gpu() -> dict:
    """Properties of device 0 through CuPy, plus nvidia-smi's view of clocks."""
    import cupy

    rt = cupy.cuda.runtime
    p = rt.getDeviceProperties(0)
    name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
    info = {"name": name, "compute_capability": f"{p['major']}.{p['minor']}", "memory_bytes": int(p["totalGlobalMem"])}
    for key, attr in ATTRIBUTES.items():
        try:
            info[key] = int(rt.deviceGetAttribute(attr, 0))
        except Exception:  # an attribute this runtime lacks is left out, not guessed
            info[key] = None
    smi = _run(
        [
            "nvidia-smi",
            "--query-gpu=driver_version,clocks.max.sm,clocks.sm,clocks.max.mem,power.limit",
            "--format=csv,noheader,nounits",
        ]
    )
    if smi:
        fields = [f.strip() for f in smi.splitlines()[0].split(",")]
        info.update(
            zip(["driver", "max_sm_clock_mhz", "sm_clock_mhz_at_start", "max_mem_clock_mhz", "power_limit_w"], fields)
        )
    info["cuda_driver_api"] = rt.driverGetVersion()
    info["cuda_runtime"] = rt.runtimeGetVersion()
    return info


def collect(config_digest: str, variants: dict[str, str], decision_why: str, config: dict | None = None) -> dict:
    """The provenance of a measuring run (call on the GPU machine)."""
    import cupy

    from gpumm.run import clocks

    watch = clocks.Watch(pci_bus_id=cupy.cuda.Device(0).pci_bus_id)
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "gpu": gpu(),
        "host": platform.node(),
        "python": platform.python_version(),
        "cupy": cupy.__version__,
        "nvcc": nvcc_version(),
        "git_commit": git_commit(),
        "config_digest": config_digest,
        "config": config,
        "device": {"index": 0, **watch.identity(), "max_sm_clock_mhz_nvml": watch.max_sm_mhz},
        "devices": devices.from_env(),  # a run on several GPUs: every one it used ([]: one GPU)
        "variant_digests": variants,
        "data_source": {"mode": "measure", "why": decision_why},
    }


def write(prov: dict, path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(files.json_text(prov, indent=1))
    tmp.replace(path)

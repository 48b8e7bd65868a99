"""Is there a usable CUDA GPU here? Decides measure versus replay, and the arch.

The probe runs in a child process so that the Snakemake process itself never
initialises CUDA, and so that a broken driver cannot take it down.
"""

import json
import os
import subprocess
import sys
from dataclasses import dataclass

_PROBE = """
import json
try:
    import cupy
except Exception as exc:
    print(json.dumps({"ok": False, "reason": "CuPy is not installed (" + type(exc).__name__ + ")"})); raise SystemExit
try:
    n = cupy.cuda.runtime.getDeviceCount()
except Exception as exc:
    print(json.dumps({"ok": False, "reason": "no CUDA device: " + str(exc).splitlines()[0]})); raise SystemExit
if n < 1:
    print(json.dumps({"ok": False, "reason": "no CUDA device"})); raise SystemExit
p = cupy.cuda.runtime.getDeviceProperties(0)
name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
print(json.dumps({"ok": True, "reason": "", "name": name, "arch": "sm_%d%d" % (p["major"], p["minor"]),
                  "l2_bytes": int(p["l2CacheSize"]), "devices": n}))
"""

DEFAULT_ARCH = "sm_90"

# cudaDeviceAttr values (driver_types.h); CUDA 13 dropped the clock fields
# from cudaDeviceProp, the attributes remain.
ATTRIBUTES = {
    "sm_clock_khz": 13,
    "memory_clock_khz": 36,
    "memory_bus_bits": 37,
    "sm_count": 16,
    "l2_bytes": 38,
    "smem_per_block_optin": 97,
    "smem_per_sm": 81,
    "regs_per_sm": 82,
    "max_threads_per_sm": 39,
    "max_blocks_per_sm": 106,
    "regs_per_block": 12,
    "smem_per_block": 8,
    "constant_bytes": 9,
}


@dataclass(frozen=True)
class Probe:
    ok: bool
    reason: str
    name: str = ""
    arch: str = ""
    l2_bytes: int = 0
    devices: int = 0


FAKE_ENV = "GPUMM_FAKE_GPU"  # JSON of a Probe: plan a measure-mode run with no GPU (dry runs in the tests)


def probe(timeout: float = 120) -> Probe:
    """Look for a usable CUDA device through CuPy, in a child process.

    With the environment variable GPUMM_FAKE_GPU set to a probe's JSON (for
    example ``{"ok": true, "reason": "", "name": "fake", "arch": "sm_90",
    "l2_bytes": 52428800}``) no device is looked for: only for planning a
    measure-mode run (``snakemake -n``) on a machine without a GPU.
    """
    if os.environ.get(FAKE_ENV):
        return Probe(**json.loads(os.environ[FAKE_ENV]))
    try:
        out = subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout, check=False
        )
        data = json.loads(out.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return Probe(False, f"the GPU probe did not answer within {timeout:.0f} s")
    except (IndexError, json.JSONDecodeError):
        return Probe(False, "the GPU probe failed: " + (out.stderr.strip().splitlines() or ["no output"])[-1])
    return Probe(**data)


@dataclass(frozen=True)
class Decision:
    mode: str  # measure | replay
    arch: str
    why: str
    l2_bytes: int = 0  # the GPU's L2 (measure mode), for the profile's sizes


def decide(mode: str, gpu_arch: str, probe_fn=probe) -> Decision:
    """Resolve config ``mode`` and ``gpu_arch`` (either may be auto).

    Raises RuntimeError when ``mode`` is measure and no GPU is usable.
    """
    if mode == "replay":
        arch = DEFAULT_ARCH if gpu_arch == "auto" else gpu_arch
        return Decision("replay", arch, "mode: replay (set in the config)")
    found = probe_fn()
    if not found.ok:
        if mode == "measure":
            raise RuntimeError(f"mode: measure, but there is no usable CUDA GPU: {found.reason}")
        arch = DEFAULT_ARCH if gpu_arch == "auto" else gpu_arch
        return Decision("replay", arch, f"mode: auto chose replay: no usable CUDA GPU ({found.reason})")
    arch = found.arch if gpu_arch == "auto" else gpu_arch
    return Decision("measure", arch, f"mode: {mode} chose measure on {found.name} ({found.arch})", found.l2_bytes)


def parallel_problem(mode: str, resources: dict, cores: int | None, cluster: bool = False) -> str | None:
    """Why this run could put two GPU jobs on one GPU at once, or None.

    Every GPU job declares ``resources: gpu=1``; the workflow's default profile
    limits the run to ``gpu: 1``. Without that limit (``--workflow-profile
    none``) and with more than one core, Snakemake would start several GPU jobs
    together and each would time the others' work. Several GPUs are not used
    yet: a limit above 1 would run jobs side by side on GPU 0. A job running
    inside a cluster allocation (``cluster``: Snakemake's remote mode) has the
    GPU the scheduler gave it, so nothing is checked there.
    """
    if mode != "measure" or cluster:
        return None
    limit = resources.get("gpu")
    if limit is None and (cores or 1) > 1:
        return (
            "GPU jobs could run at the same time and corrupt each other's timings: the run has no 'gpu' resource "
            "limit (the workflow's default profile, workflow/profiles/default, sets it; it is skipped with "
            "--workflow-profile none). Add --resources gpu=1, or run with --cores 1."
        )
    if limit is not None and limit > 1:
        return (
            f"--resources gpu={limit}: this workflow runs every GPU job on GPU 0, so more than one would share it "
            "and corrupt each other's timings. Use gpu=1."
        )
    return None

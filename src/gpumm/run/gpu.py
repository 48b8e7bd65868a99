"""Is there a usable CUDA GPU here? Decides measure versus replay, and the arch.

The probe runs in a child process so that the Snakemake process itself never
initialises CUDA, and so that a broken driver cannot take it down.
"""

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

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
def text(v):
    return v.decode() if isinstance(v, bytes) else v
def uuid(p):
    raw = p.get("uuid")
    h = (raw if isinstance(raw, str) else bytes(raw).hex()) if raw else ""
    return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:]) if len(h) == 32 else ""
props = [cupy.cuda.runtime.getDeviceProperties(i) for i in range(n)]
gpus = [{"index": i, "name": text(q["name"]), "uuid": uuid(q), "arch": "sm_%d%d" % (q["major"], q["minor"])}
        for i, q in enumerate(props)]
p = props[0]
print(json.dumps({"ok": True, "reason": "", "name": text(p["name"]), "arch": "sm_%d%d" % (p["major"], p["minor"]),
                  "l2_bytes": int(p["l2CacheSize"]), "devices": n, "gpus": gpus}))
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
    gpus: list = field(default_factory=list)  # every visible device: index, name, uuid, arch


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
    found = Probe(**data)
    if not found.ok and not nvidia_present():  # the GPU first: without one, CuPy is not what is missing
        return Probe(False, f"no NVIDIA GPU on this machine (no nvidia-smi, no /dev/nvidia0); {found.reason}")
    return found


def nvidia_present() -> bool:
    """Whether this machine shows an NVIDIA GPU at all: a device node, or an nvidia-smi that lists one."""
    import glob
    import shutil

    if glob.glob("/dev/nvidia[0-9]*"):
        return True
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "GPU" in out.stdout


@dataclass(frozen=True)
class Decision:
    mode: str  # measure | replay
    arch: str
    why: str
    l2_bytes: int = 0  # the GPU's L2 (measure mode), for the profile's sizes
    gpus: tuple = ()  # the visible devices (measure mode): gpumm.run.devices chooses the run's among them


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
    gpus = tuple(found.gpus) or ({"index": 0, "name": found.name, "uuid": "", "arch": found.arch},)
    return Decision("measure", arch, f"mode: {mode} chose measure on {found.name} ({found.arch})", found.l2_bytes, gpus)


def parallel_problem(
    mode: str, resources: dict, cores: int | None, cluster: bool = False, devices: int = 1
) -> str | None:
    """Why this run could put two GPU jobs on one GPU at once, or None.

    Every GPU job declares ``resources: gpu=1``, and the workflow sets the run's ``gpu`` limit to the number of
    devices it uses (``devices``: gpumm.run.devices), each job claiming one of its own. A limit given by hand
    (``--resources gpu=K``) may be lower, never higher: more GPU jobs at once than devices would put two on one
    GPU, and each would time the other's work. A job running inside a cluster allocation (``cluster``:
    Snakemake's remote mode) has the GPU the scheduler gave it, so nothing is checked there.
    """
    if mode != "measure" or cluster:
        return None
    limit = resources.get("gpu")
    if limit is not None and limit > devices:
        return (
            f"--resources gpu={limit}: this run uses {devices} GPU(s) (config gpus), so {limit} GPU jobs at once "
            f"would share one and corrupt each other's timings. Use gpu={devices} or fewer, or leave it out."
        )
    return None

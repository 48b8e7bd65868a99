"""Is there a usable CUDA GPU here? Decides measure versus replay, and the arch.

The probe runs in a child process so that the Snakemake process itself never
initialises CUDA, and so that a broken driver cannot take it down.
"""

import json
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
print(json.dumps({"ok": True, "reason": "", "name": name, "arch": "sm_%d%d" % (p["major"], p["minor"])}))
"""

DEFAULT_ARCH = "sm_90"


@dataclass(frozen=True)
class Probe:
    ok: bool
    reason: str
    name: str = ""
    arch: str = ""


def probe(timeout: float = 120) -> Probe:
    """Look for a usable CUDA device through CuPy, in a child process."""
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
    return Decision("measure", arch, f"mode: {mode} chose measure on {found.name} ({found.arch})")

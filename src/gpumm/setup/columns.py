"""The columns of the raw tables every variant's steps write: samples.csv (measure, replay) and profile.csv
(profile, replay), and the placeholder profile of a variant not profiled. Kept apart from the modules that
measure, so that a replay step can write a placeholder row without importing them."""

from pathlib import Path

from gpumm.setup import files

# the clock fields every timed set carries (gpumm.run.clocks reads them from NVML)
CLOCK_FIELDS = (
    "sm_clock_mhz",
    "sm_clock_min_mhz",
    "mem_clock_mhz",
    "temperature_c",
    "clock_reasons",
    "throttled",
)

SAMPLES = [
    "variant",
    "family",
    "defines",
    "kind",
    "M",
    "N",
    "K",
    "memory_mode",
    "timed",
    "repeat",
    "ms",
    "gflops",
    "gbs",
    "work_flops",
    "work_bytes",
    "batch",
    "method",
    "warmups",
    "stop",
    "exact_check",
    "max_rel_err",
    "tolerance",
    "reference",
    "verified",
    "status",
    "reason",
    *CLOCK_FIELDS,
    "library",
]

PROFILE = ["variant", "M", "N", "K", "launch", "kernel", "metric", "value", "unit", "status", "reason"]


def write_missing_profile(variant: str, size: int, reason: str, out_dir: Path) -> None:
    """The profile.csv of a variant that was not profiled: one row saying why."""
    row = {"variant": variant, "M": size, "N": size, "K": size, "status": "missing", "reason": reason}
    files.write_rows([row], PROFILE, out_dir / "profile.csv")

"""The columns of the raw tables every variant's steps write: samples.csv (measure, replay) and profile.csv
(profile, replay), and the placeholder profile of a variant not profiled. Kept apart from the modules that
measure, so that a replay step can write a placeholder row without importing them."""

from pathlib import Path

from gpumm.setup import files

# the clock and power fields every timed set carries (gpumm.run.clocks reads them from NVML)
CLOCK_FIELDS = (
    "sm_clock_mhz",
    "sm_clock_min_mhz",
    "mem_clock_mhz",
    "temperature_c",
    "clock_reasons",
    "throttled",
    "window_s",  # seconds between NVML's counters before and after the set
    "energy_j",  # the energy counter's change over the set (it moves every 100 ms on an H100)
    "power_mean_w",  # board power, mean and peak of NVML's power samples during the set
    "power_peak_w",
    "power_capped_pct",  # share of the set's time the power policy held the clock down (NVML's violation counter)
    "thermal_capped_pct",  # the same for the thermal policy
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

# the paired step's rows (gpumm.run.paired): one per check, per member's energy span, per timed block
PAIRED = [
    "race",
    "group",
    "op",
    "M",
    "N",
    "K",
    "order",
    "variant",
    "family",
    "role",
    "rung_below",
    "phase",  # check, energy, heat or sustained
    "round",
    "position",
    "batch",
    "ms",  # per launch: a block's time over its launches (check: the set's median this run measured)
    "work",  # flops (or bytes) per launch
    "t_s",  # when the block started, seconds into its phase
    "stop",  # why the sustained rounds stopped (gpumm.run.pairing.Rule)
    "window_work",  # the work done inside the energy counter's whole updates of the member's span
    "power_samples",  # how many of NVML's power samples the member's span holds
    "status",
    "reason",
    *CLOCK_FIELDS,
]

PROFILE = ["variant", "M", "N", "K", "launch", "kernel", "metric", "value", "unit", "status", "reason"]


def write_missing_profile(variant: str, size: int, reason: str, out_dir: Path) -> None:
    """The profile.csv of a variant that was not profiled: one row saying why."""
    row = {"variant": variant, "M": size, "N": size, "K": size, "status": "missing", "reason": reason}
    files.write_rows([row], PROFILE, out_dir / "profile.csv")

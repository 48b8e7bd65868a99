"""Several GPUs side by side (issue 12): the headline numbers of every archived run, and of this run.

Read straight from each run's raw files (``raw/provenance.json`` and the
samples), so that any archive compares, whatever code rendered the rest of
the report. Seed 000 compared its 8800 GTX and Tesla C870 this way: the same
kernels, and the difference read against the hardware's numbers.
"""

import json
import math
from pathlib import Path

import pandas as pd

from gpumm.analyse import hardware as peaks
from gpumm.analyse import rates

SIZE = rates.LADDER_SIZE
RATE_VARIANTS = ["naive", "unrolled", "double_buffer", "cublas"]
COLUMNS = ["run", "gpu", "what", "value", "unit", "hardware"]


def hardware(gpu: dict) -> dict:
    """The numbers a difference is read against: DRAM bandwidth (2 x memory clock x bus), FP32 peak, L2, SMs."""
    return {
        "dram_gbs": peaks.dram_bandwidth(gpu) / 1e9,
        "fp32_tflops": peaks.fp32_peak(gpu) / 1e12,
        "l2_mib": float(gpu.get("l2_bytes") or 0) / 2**20 or math.nan,
        "sms": float(gpu.get("sm_count") or 0) or math.nan,
    }


def _median_gflops(samples: Path, n: int) -> float:
    if not samples.is_file():
        return math.nan
    s = pd.read_csv(samples)
    s = s[(s.M == n) & (s.N == n) & (s.K == n) & (s.timed == "kernel") & (s.memory_mode == "device")]
    s = s[s.status == "ok"]
    return 2.0 * n**3 / (float(s.ms.median()) * 1e-3) / 1e9 if len(s) else math.nan  # as the summary: flops / median


def headlines(run: Path, name: str) -> pd.DataFrame:
    """One row per headline number of the run in ``run`` (a folder holding raw/): GPU, value, unit, what it tracks."""
    raw = run / "raw"
    gpu = json.loads((raw / "provenance.json").read_text()).get("gpu", {})
    hw = hardware(gpu)
    rows = [
        (f"{v} GFLOP/s at {SIZE}³", _median_gflops(raw / v / "samples.csv", SIZE), "GFLOP/s", "fp32_tflops")
        for v in RATE_VARIANTS
    ]
    bw = raw / "bandwidth" / "samples.csv"
    if bw.is_file():
        b = pd.read_csv(bw)
        for transfer in ("device_to_device", "host_to_device_pinned"):
            g = b[b.transfer == transfer].gbs
            rows.append(
                (f"copy {transfer.replace('_', ' ')}", float(g.median()) if len(g) else math.nan, "GB/s", "dram_gbs")
            )
    rows += [
        ("specified DRAM bandwidth", hw["dram_gbs"], "GB/s", "dram_gbs"),
        ("FP32 peak", hw["fp32_tflops"], "TFLOP/s", "fp32_tflops"),
        ("L2", hw["l2_mib"], "MiB", "l2_mib"),
    ]
    return pd.DataFrame(
        [
            {"run": name, "gpu": gpu.get("name", "?"), "what": w, "value": v, "unit": u, "hardware": h}
            for w, v, u, h in rows
        ],
        columns=COLUMNS,
    )


def table(runs: dict[str, Path]) -> pd.DataFrame:
    """Headlines of every run (name: folder), one row per run and number."""
    found = [headlines(p, n) for n, p in runs.items() if (p / "raw" / "provenance.json").is_file()]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=COLUMNS)


def wide(t: pd.DataFrame, unit: str | None = None) -> pd.DataFrame:
    """One row per number (only those in ``unit`` when given), one column per run in the order the runs come;
    a run without such numbers (a subset, sizes below 4096) keeps its column, empty."""
    runs = list(dict.fromkeys(t.run))
    rows = t if unit is None else t[t.unit == unit]
    return rows.pivot_table(index="what", columns="run", values="value").reindex(
        index=list(dict.fromkeys(rows.what)), columns=runs
    )


def sentences(t: pd.DataFrame, base: str, other: str) -> list[str]:
    """For each number both runs have: the ratio other/base, beside the ratio of the hardware number it tracks."""
    a, b = (t[t.run == r].set_index("what") for r in (base, other))
    out = []
    for what in a.index.intersection(b.index):
        x, y, hw = a.at[what, "value"], b.at[what, "value"], a.at[what, "hardware"]
        if (
            not (x > 0 and y > 0)
            or not isinstance(hw, str)
            or not hw
            or what in ("specified DRAM bandwidth", "FP32 peak", "L2")
        ):
            continue
        ref = {"dram_gbs": "specified DRAM bandwidth", "fp32_tflops": "FP32 peak", "l2_mib": "L2"}[hw]
        hx, hy = a.at[ref, "value"], b.at[ref, "value"]
        ratio, hratio = y / x, hy / hx
        close = abs(math.log(ratio / hratio)) < math.log(1.1)
        out.append(
            f"{what}: {other} {y:,.0f} against {base} {x:,.0f} {a.at[what, 'unit']} (×{ratio:.2f}); the {ref} "
            f"differs by ×{hratio:.2f}: the difference {'follows' if close else 'does not follow'} it (within 10%)."
        )
    return out

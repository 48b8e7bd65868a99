"""The launch-overhead floor of each timing method (an empty kernel), from the overhead study's samples.

Pure functions on the run's tables, tested on the CPU.
"""

import math

import pandas as pd


def overhead_summary(samples: pd.DataFrame) -> pd.DataFrame:
    """Median and interquartile range, in µs per launch, of each (what, method) of the overhead study."""
    cols = ["what", "method", "batch", "median_us", "q25_us", "q75_us"]
    if "what" not in samples or samples.empty:
        return pd.DataFrame(columns=cols)
    g = samples.groupby(["what", "method"], sort=False)
    out = g.agg(
        batch=("batch", "first"),
        median_us=("ms", lambda x: 1e3 * x.median()),
        q25_us=("ms", lambda x: 1e3 * x.quantile(0.25)),
        q75_us=("ms", lambda x: 1e3 * x.quantile(0.75)),
    ).reset_index()
    return out[cols]


def launch_floor_ms(overhead: pd.DataFrame, method: str = "graph") -> float:
    """Per-launch time of an empty kernel by ``method``: no kernel timed that way can look faster."""
    if overhead.empty or "what" not in overhead:
        return math.nan
    r = overhead[(overhead.what == "empty kernel") & (overhead.method == method)]
    return float(r.median_us.iloc[0]) / 1e3 if len(r) else math.nan

"""The samples into one row per set (variant, shape, memory mode, what was timed): the median and spread of the
times and rates, the checks, the clock and power of the set; and the checks' table. Pure functions on the
samples, tested on the CPU."""

import numpy as np
import pandas as pd

from gpumm.analyse import paired

SHAPE = ["variant", "family", "defines", "kind", "M", "N", "K", "memory_mode", "timed"]


FIRST = {  # what the summary takes from the first sample of each set (as measured, NaN included)
    "batch": np.nan,
    "method": "",
    "warmups": np.nan,
    "stop": "",  # why sampling stopped (gpumm.run.sampling): quiet, max_samples or timeout; empty in older runs
    "exact_check": "",
    "max_rel_err": np.nan,
    "tolerance": np.nan,
    "reference": np.nan,
    "verified": np.nan,
    "sm_clock_mhz": np.nan,
    "sm_clock_min_mhz": np.nan,
    "temperature_c": np.nan,
    "throttled": np.nan,
    "clock_reasons": "",
    "window_s": np.nan,
    "energy_j": np.nan,
    "power_mean_w": np.nan,
    "power_peak_w": np.nan,
    "power_capped_pct": np.nan,
    "thermal_capped_pct": np.nan,
    "library": "",
}


def summarise(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per variant x shape x mode x what was timed: status, median and spread, batch, clocks."""
    keys = SHAPE
    df = samples.copy()
    df[["M", "N", "K"]] = df[["M", "N", "K"]].astype("Int64")
    for col, missing in FIRST.items():  # columns that runs before them did not record
        if col not in df:
            df[col] = missing
    # the set's label, in the order the sets first appear (a key may be NaN: a variant not in the archive)
    df["set"] = df.groupby(keys, dropna=False, sort=False).ngroup()
    first = df.drop_duplicates("set").set_index("set")
    stats = _set_stats(df[df["status"] == "ok"]).reindex(first.index)
    has_ok = stats["samples"].notna()
    reason = first["reason"].where(first["reason"].map(lambda r: isinstance(r, str)), "")
    out = first[keys].assign(
        status=first["status"].where(~has_ok, "ok"),
        reason=reason.where(~has_ok, ""),
        samples=stats["samples"].fillna(0).astype(int),
        median_ms=stats["median_ms"],
        q25_ms=stats["q25_ms"],
        q75_ms=stats["q75_ms"],
        iqr_pct=100 * (stats["q75_ms"] - stats["q25_ms"]) / stats["median_ms"],
        min_ms=stats["min_ms"],
        max_ms=stats["max_ms"],
        s1m_mean_ms=stats["s1m_mean_ms"],
        burst_median_ms=stats["burst_median_ms"],
        burst_iqr_pct=100 * (stats["burst_q75_ms"] - stats["burst_q25_ms"]) / stats["burst_median_ms"],
        **{col: first[col] for col in FIRST},
        # the work model of each set (the catalog's flops and bytes), where the run recorded it
        **{col: first[col] for col in ("work_flops", "work_bytes") if col in first},
    )
    return _with_rates(out.reset_index(drop=True))


def _set_stats(ok: pd.DataFrame) -> pd.DataFrame:
    """Each set's count of samples, the median, quartiles, extremes and seed 001's mean of its times, and the
    same over its first samples (the burst regime)."""
    ms = ok.groupby("set")["ms"]
    burst = ok.groupby("set").head(paired.BURST_SAMPLES).groupby("set")["ms"]
    return pd.DataFrame(
        {
            "samples": ms.size(),
            "median_ms": ms.median(),
            "q25_ms": ms.quantile(0.25),
            "q75_ms": ms.quantile(0.75),
            "min_ms": ms.min(),
            "max_ms": ms.max(),
            # seed 001's method (S1-M): the mean of the first 10 timed runs (of all, where a set stopped sooner)
            "s1m_mean_ms": ok.groupby("set").head(10).groupby("set")["ms"].mean(),
            # the burst regime: a set's first samples, the card as it started the set (gpumm.analyse.paired)
            "burst_median_ms": burst.median(),
            "burst_q25_ms": burst.quantile(0.25),
            "burst_q75_ms": burst.quantile(0.75),
        }
    )


def _with_rates(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with each set's GFLOP/s and GB/s (median and burst), from its work model."""
    m, n, k = (pd.to_numeric(summary[d], errors="coerce").astype(float) for d in "MNK")
    flops = summary["work_flops"] if "work_flops" in summary else pd.Series(np.nan, index=summary.index)
    nbytes = summary["work_bytes"] if "work_bytes" in summary else pd.Series(np.nan, index=summary.index)
    # runs from before the work model was recorded: a matmul's
    flops = flops.where(flops.notna(), 2.0 * m * n * k)
    nbytes = nbytes.where(nbytes.notna(), 4.0 * (m * k + k * n + m * n))
    seconds = summary["median_ms"] * 1e-3
    # a preparation step (B transposed first) is not the product: its time has no product's rate
    product = summary["timed"] != "prepare"
    summary["gflops"] = (flops / seconds / 1e9).where((flops > 0) & product)
    summary["gbs"] = (nbytes / seconds / 1e9).where(product)
    burst_s = summary["burst_median_ms"] * 1e-3
    summary["burst_gflops"] = (flops / burst_s / 1e9).where((flops > 0) & product)
    summary["burst_gbs"] = (nbytes / burst_s / 1e9).where(product)
    return summary


def verification(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per variant x shape x memory mode: how its checks went (every mode, every kind of timing)."""
    cols = ["variant", "M", "N", "K", "memory_mode", "status", "exact_check", "max_rel_err", "tolerance"]
    cols += ["reference", "reason"]
    s = summary.drop_duplicates(["variant", "M", "N", "K", "memory_mode"])
    return s[[c for c in cols if c in s]].reset_index(drop=True)

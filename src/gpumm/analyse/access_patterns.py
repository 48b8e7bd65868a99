"""The coalescing micro-benchmark (DC-COAL, S0-T2): rates per access pattern, rows over columns, sectors per
request from the profile.

Pure functions on the run's tables, tested on the CPU.
"""

import math

import pandas as pd

COALESCING_KEYS = ["pattern", "regime", "n", "copies", "stride", "offset"]


def coalescing_summary(samples: pd.DataFrame, copy_gbs: float, l2_bytes: float = math.nan) -> pd.DataFrame:
    """One row per access pattern: median ms (and per matrix), GB/s, IQR, share of the copy ceilings, regime."""
    keys = COALESCING_KEYS
    ok = samples[samples.status == "ok"]
    g = ok.groupby(keys)
    out = g.agg(
        median_ms=("ms", "median"),
        median_gbs=("gbs", "median"),
        q25_gbs=("gbs", lambda x: x.quantile(0.25)),
        q75_gbs=("gbs", lambda x: x.quantile(0.75)),
        bytes=("bytes", "first"),
        threads=("threads", "first"),
        working_set_bytes=("working_set_bytes", "first"),
        batch=("batch", "first"),
    ).reset_index()
    out["ms_per_matrix"] = out.median_ms / out.copies
    out["working_set_over_l2"] = out.working_set_bytes / l2_bytes if l2_bytes else math.nan
    kernel_copy = out[(out.pattern == "strided") & (out.stride == 1) & (out.offset == 0)].median_gbs
    out["share_of_device_copy"] = out.median_gbs / copy_gbs if copy_gbs else math.nan
    out["share_of_copy_kernel"] = out.median_gbs / kernel_copy.iloc[0] if len(kernel_copy) else math.nan
    failed = samples[samples.status != "ok"].drop_duplicates(keys)[[*keys, "status", "reason"]]
    return pd.concat([out.assign(status="ok", reason=""), failed], ignore_index=True)


def rows_over_cols(summary: pd.DataFrame) -> pd.DataFrame:
    """Seed 000's Table 2 ratio, per size and regime: time reading rows (uncoalesced) over columns (coalesced)."""
    rc = summary[summary.pattern.isin(["rows", "cols"]) & (summary.status == "ok")]
    if rc.empty:
        return pd.DataFrame(columns=["regime", "n", "rows_ms", "cols_ms", "ratio"])
    wide = rc.pivot_table(index=["regime", "n"], columns="pattern", values="ms_per_matrix").reset_index()
    wide = wide.rename(columns={"rows": "rows_ms", "cols": "cols_ms"})
    wide["ratio"] = wide.rows_ms / wide.cols_ms
    return wide[["regime", "n", "rows_ms", "cols_ms", "ratio"]]


def sectors_per_request(profile: pd.DataFrame) -> pd.DataFrame:
    """Global load sectors per request of each profiled launch (32 floats in 4 sectors is perfect)."""
    req, sec = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    if "metric" not in profile or profile.empty:
        return pd.DataFrame(columns=["launch", "sectors_per_request"])
    keys = [c for c in ("launch", *COALESCING_KEYS) if c in profile]
    wide = profile[profile.metric.isin([req, sec])].pivot_table(index=keys, columns="metric", values="value")
    if not {req, sec} <= set(wide.columns):
        return pd.DataFrame(columns=[*keys, "sectors_per_request"])
    return (wide[sec] / wide[req]).rename("sectors_per_request").reset_index()

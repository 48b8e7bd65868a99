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


SAME = 0.1  # two times within 10% of each other are the same time


def cause(ratio: pd.DataFrame) -> dict:
    """What makes the uncoalesced read slow, from the comparison that isolates it: the same read with its matrix in
    DRAM and in the L2, at every size measured in both regimes (``ratio``: :func:`rows_over_cols`).

    ``bound``: 'transactions' when reading by rows takes the same time (within SAME) from DRAM as from the L2 (the
    uncoalesced read is bound by the transactions it issues, not by where the bytes are), 'dram' when the L2
    makes it faster, '' with no size measured in both regimes. ``rows_dram_over_l2`` and ``cols_dram_over_l2``:
    the median over those sizes of each read's time from DRAM over its time from the L2; ``sizes``: the sizes.
    """
    have = len(ratio) and {"regime", "n", "rows_ms", "cols_ms"} <= set(ratio.columns)
    wide = ratio.pivot_table(index="n", columns="regime", values=["rows_ms", "cols_ms"]) if have else None
    both = wide.dropna() if wide is not None and {"dram", "l2"} <= set(wide.columns.get_level_values(1)) else None
    if both is None or both.empty:
        return {"bound": "", "rows_dram_over_l2": math.nan, "cols_dram_over_l2": math.nan, "sizes": []}
    rows = float((both["rows_ms"]["dram"] / both["rows_ms"]["l2"]).median())
    cols = float((both["cols_ms"]["dram"] / both["cols_ms"]["l2"]).median())
    return {
        "bound": "transactions" if abs(rows - 1) <= SAME else "dram",
        "rows_dram_over_l2": rows,
        "cols_dram_over_l2": cols,
        "sizes": [int(n) for n in both.index],
    }


def cause_words(c: dict, short: bool = False) -> str:
    """:func:`cause` in a sentence ('' where it has no verdict); ``short``: in a few words, for a headline."""
    if not c["bound"]:
        return ""
    same = f"{c['rows_dram_over_l2']:.2f}× as long from DRAM as from the L2"
    if short:
        what = "bound by the transactions it issues, not by DRAM" if c["bound"] == "transactions" else "DRAM-bound"
        return f"the uncoalesced read is {what} ({same})"
    at = " and ".join(str(n) for n in c["sizes"])
    if c["bound"] == "transactions":
        return (
            f"the uncoalesced read takes {same} (at {at}): it is bound by the transactions it issues, not by DRAM, "
            "and the ratio follows the coalesced read's DRAM bandwidth (that read is "
            f"{c['cols_dram_over_l2']:.1f}× slower from DRAM than from the L2)"
        )
    return f"the uncoalesced read takes {same} (at {at}): DRAM's bandwidth or latency is part of its cost"

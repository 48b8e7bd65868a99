"""The transposes (S2-TR): each variant's rate against the copy kernel and the device-to-device copy, and the goal
at 8192 and above.

Pure functions on the run's tables, tested on the CPU.
"""

import math

import pandas as pd

from gpumm.analyse import paired

TRANSPOSE_GOAL = {"size": 8192, "of_copy_kernel": 0.95, "of_device_copy": 0.90}


def transpose_summary(summary: pd.DataFrame, variants: pd.DataFrame, device_copy_gbs: float) -> pd.DataFrame:
    """Every transpose and the copy at every shape: GB/s (bytes read + written), share of the same run's copy
    kernel and device-to-device copy at that shape, and speed-up over the naive transpose."""
    cols = ["variant", "op", "M", "N", "status", "reason", "median_ms", "iqr_pct", "gbs", "batch"]
    ops = variants.set_index("variant").op if "op" in variants else pd.Series(dtype=str)
    mine = [v for v in summary.variant.unique() if ops.get(v, "matmul") in ("transpose", "copy")]
    s = summary[summary.variant.isin(mine) & (summary.memory_mode == "device") & (summary.timed == "kernel")].copy()
    if s.empty:
        return pd.DataFrame(columns=[*cols, "share_of_copy_kernel", "share_of_device_copy", "speedup_over_naive"])
    s["op"] = s.variant.map(ops)
    s = s[[c for c in cols if c in s]]
    ok = s[s.status == "ok"]
    copy = ok[ok.op == "copy"].groupby(["M", "N"]).gbs.max()
    naive = ok[ok.variant == "transpose_naive"].set_index(["M", "N"]).median_ms
    key = list(zip(s.M, s.N))
    s["share_of_copy_kernel"] = [g / copy.get(k, math.nan) for g, k in zip(s.gbs, key)]
    s["share_of_device_copy"] = s.gbs / device_copy_gbs if device_copy_gbs else math.nan
    s["speedup_over_naive"] = [naive.get(k, math.nan) / ms for ms, k in zip(s.median_ms, key)]
    return s.reset_index(drop=True)


def transpose_goal(table: pd.DataFrame, goal: dict = TRANSPOSE_GOAL, verdicts: pd.DataFrame | None = None) -> dict:
    """The issue's benchmark goal, read on the data: at the goal's size and above, the best transpose's share
    of the copy kernel and of the device-to-device copy (the lower of its shares over those sizes). The share of
    the copy kernel is the paired one (``verdicts``, timed in alternation) where the run paired every such size,
    else the two kernels' own sets'; the device-to-device copy is the bandwidth study's (``regime`` says which)."""
    t = table[(table.op == "transpose") & (table.status == "ok") & (table.M == table.N) & (table.M >= goal["size"])]
    shares = t.groupby("variant").share_of_copy_kernel.min().dropna()
    regime = paired.SET_REGIME
    if verdicts is not None and len(verdicts) and len(t):
        v = verdicts[verdicts.op.isin(["transpose", "copy"]) & (verdicts.role != "reference")]
        v = v[(v.regime == paired.PAIRED_REGIME) & v.share.notna()]
        v = v[v.M.isin(set(t.M))]
        if len(v) and set(v.M) == set(t.M):
            shares, regime = v.groupby("variant").share.min(), paired.PAIRED_REGIME
            t = t.assign(share_of_copy_kernel=[
                v.set_index(["variant", "M"]).share.get((a, m), math.nan) for a, m in zip(t.variant, t.M)
            ])  # fmt: skip
    if shares.empty:  # no transpose at the goal's sizes, or no copy kernel to share it with (a subset)
        return {"measured": False}
    best = shares.idxmax()
    b = t[t.variant == best]
    of_copy, of_d2d = b.share_of_copy_kernel.min(), b.share_of_device_copy.min()
    return {
        "measured": True,
        "best": best,
        "sizes": sorted(int(m) for m in b.M),
        "of_copy_kernel": of_copy,
        "of_device_copy": of_d2d,
        "met": bool(of_copy >= goal["of_copy_kernel"] and of_d2d >= goal["of_device_copy"]),
        "regime": regime,
    }

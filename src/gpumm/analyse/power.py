"""Power states: what state each timed set ran in, and the mark an unpaired comparison carries where its two sets
ran in different states.

A set is *throttled* (:mod:`gpumm.run.clocks`) when any slowdown reason touched it: the power cap (NVML's reason
0x4, or its violation counter moving during the set), a thermal or hardware slowdown, or a polled SM clock below
98% of the maximum. A ratio of two sets is only as good as the match of their states: where one set ran
throttled and the other did not, the comparison is *mixed*, and the report shows it with both numbers, the whole
sets' share and the share of their first five samples (the card as each set started), instead of the share alone.
The comparisons of the races at their paired sizes do not need this: they come from the paired step
(:mod:`gpumm.analyse.paired`).

Pure functions on the summary, tested on the CPU.
"""

import math

import pandas as pd

from gpumm.run import clocks

KEYS = ["variant", "M", "N", "K", "memory_mode", "timed"]


def truth(x) -> bool:
    """A flag of the tables as they are read back (True, "True", "true")."""
    return str(x).lower() == "true"


def state(row) -> str:
    """A set's power state in words: 'full clock', or 'throttled (power cap 100% of the set, clock down to 1200 MHz)';
    '' where the run did not record clocks."""
    if "throttled" not in row or pd.isna(row.get("throttled")) or row.get("throttled") == "":
        return ""
    if not truth(row["throttled"]):
        return "full clock"
    why = []
    capped = row.get("power_capped_pct", math.nan)
    if capped == capped and capped > 0:
        why.append(f"power cap {capped:.0f}% of the set")
    words = clocks.reason_words(row.get("clock_reasons"))
    for w in words.split(", ") if words else []:
        if w and not (w == "power cap" and why):
            why.append(w)
    thermal = row.get("thermal_capped_pct", math.nan)
    if thermal == thermal and thermal > 0:
        why.append(f"thermal limit {thermal:.0f}% of the set")
    low = row.get("sm_clock_min_mhz", math.nan)
    if low == low:
        why.append(f"clock down to {low:.0f} MHz")
    return "throttled (" + ", ".join(why) + ")"


def states(summary: pd.DataFrame) -> pd.Series:
    """Each set's state (:func:`state`), indexed like ``summary``."""
    return pd.Series([state(r) for _, r in summary.iterrows()], index=summary.index, dtype=object)


def set_row(
    summary: pd.DataFrame, variant: str, shape, mode: str = "device", timed: str = "kernel"
) -> pd.Series | None:
    """The summary's row of one verified set (variant, shape (M, N, K), memory mode, what was timed), or None."""
    M, N, K = shape
    s = summary[
        (summary.variant == variant)
        & (summary.M == M)
        & (summary.N == N)
        & (summary.K == K)
        & (summary.memory_mode == mode)
        & (summary.timed == timed)
        & (summary.status == "ok")
    ]
    return s.iloc[0] if len(s) else None


def compare(
    summary: pd.DataFrame,
    a: str,
    b: str,
    shape,
    mode: str = "device",
    timed: str = "kernel",
    b_mode: str | None = None,
    b_timed: str | None = None,
) -> dict:
    """The unpaired share of set ``a`` in set ``b``'s rate at ``shape`` (b's median time over a's; b in ``b_mode``
    and ``b_timed`` where given, else a's), and whether the two ran in different power states (``mixed``): then
    also the share over their first five samples, and each set's state in words. Empty values where either set
    is missing."""
    ra = set_row(summary, a, shape, mode, timed)
    rb = set_row(summary, b, shape, b_mode or mode, b_timed or timed)
    if ra is None or rb is None:
        return {"share": math.nan, "mixed": False, "burst_share": math.nan, "a_state": "", "b_state": ""}
    if "median_ms" in ra and "median_ms" in rb:
        share = float(rb.median_ms) / float(ra.median_ms)
    else:  # a summary that kept only the rates
        share = float(ra.get("gflops", math.nan)) / float(rb.get("gflops", math.nan))
    burst = float(rb.get("burst_median_ms", math.nan)) / float(ra.get("burst_median_ms", math.nan))
    sa, sb = state(ra), state(rb)
    mixed = bool(sa and sb and truth(ra.throttled) != truth(rb.throttled))
    return {"share": share, "mixed": mixed, "burst_share": burst, "a_state": sa, "b_state": sb}


def mark(summary: pd.DataFrame, a: str, b: str, shape, mode: str = "device", timed: str = "kernel") -> str:
    """The words an unpaired share of ``a`` in ``b``'s rate carries where it stands, beside the share of the whole
    sets: '' when both sets ran in one power state, else which was throttled and the share of their first five
    samples (the card as each set started)."""
    c = compare(summary, a, b, shape, mode, timed)
    if not c["mixed"]:
        return ""
    hot = a if c["a_state"].startswith("throttled") else b
    burst = f"; first five samples: {c['burst_share']:.1%}" if c["burst_share"] == c["burst_share"] else ""
    return f"unpaired; {hot} throttled, the other not{burst}"


def cap_counts(summary: pd.DataFrame) -> dict:
    """How many timed sets ran throttled, and why: ``{"sets", "throttled", "power_cap", "at_cap", "thermal",
    "clock_only"}`` (``at_cap``: the power policy held the clock down for at least half the set)."""
    s = summary[summary.status == "ok"] if "status" in summary else summary
    if "throttled" not in s:
        return {"sets": len(s), "throttled": 0, "power_cap": 0, "at_cap": 0, "thermal": 0, "clock_only": 0}
    read = s[s.throttled.notna() & (s.throttled.astype(str) != "")]
    t = read[read.throttled.map(truth)]
    capped = t.get("power_capped_pct", pd.Series(0.0, index=t.index)).fillna(0)
    reasons = t.get("clock_reasons", pd.Series("", index=t.index)).fillna("").astype(str)
    cap = (capped > 0) | reasons.map(lambda r: bool(r) and bool(int(r, 16) & 0x4))
    thermal = t.get("thermal_capped_pct", pd.Series(0.0, index=t.index)).fillna(0) > 0
    thermal |= reasons.map(lambda r: bool(r) and bool(int(r, 16) & 0x60))
    return {
        "sets": len(read),
        "throttled": len(t),
        "power_cap": int(cap.sum()),
        "at_cap": int((capped >= 50).sum()),
        "thermal": int(thermal.sum()),
        "clock_only": int((~cap & ~thermal).sum()),
    }

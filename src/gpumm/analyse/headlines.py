"""The report's headline numbers: what a reader should take away, each computed from the run's tables and
linked to the section of the page that shows it (the index leads with them; a browser test reads them back).

Pure functions on the tables :func:`gpumm.analyse.tables.collect` makes, tested on the CPU.
"""

import math

import pandas as pd

from gpumm.analyse import memory_modes, rates

COLUMNS = ["key", "what", "value", "number", "unit", "page", "anchor"]


def _row(key, what, value, number, unit, page, anchor) -> dict:
    return {"key": key, "what": what, "value": value, "number": number, "unit": unit, "page": page, "anchor": anchor}


def best_share(summary: pd.DataFrame, n: int) -> dict | None:
    """The fastest hand-written GPU matrix multiply at n³ (device memory), and its share of cuBLAS's rate."""
    s = summary[
        (summary.M == n)
        & (summary.N == n)
        & (summary.K == n)
        & (summary.timed == "kernel")
        & (summary.memory_mode == "device")
        & (summary.status == "ok")
        & (summary.kind.isin(["cuda", "cublas"]))
        & summary.gflops.notna()
    ]
    cublas = s[s.kind == "cublas"].gflops
    hand = s[s.kind == "cuda"]
    if cublas.empty or hand.empty:
        return None
    best = hand.loc[hand.gflops.idxmax()]
    rate = cublas.iloc[0]
    return {"variant": best.variant, "gflops": best.gflops, "cublas": rate, "share": best.gflops / rate}


def headlines(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The headline rows (COLUMNS) from the collected tables ``t``; a number the run lacks is left out."""
    rows = []
    summary = t["summary"]
    for n in (rates.LADDER_SIZE, 2 * rates.LADDER_SIZE):
        b = best_share(summary, n)
        if b:
            rows.append(
                _row(
                    f"best_share_{n}",
                    f"Fastest hand-written FP32 kernel against cuBLAS at {n}³",
                    f"{b['share']:.1%} ({b['variant']}: {b['gflops'] / 1e3:.1f} against {b['cublas'] / 1e3:.1f} "
                    "TFLOP/s)",
                    100 * b["share"],
                    "% of cuBLAS",
                    "ladder",
                    "race",
                )
            )
    goal = t.get("transpose_goal", pd.DataFrame())
    if len(goal) and str(goal.measured.iloc[0]) == "True":
        g = goal.iloc[0]
        rows.append(
            _row(
                "transpose_share",
                "Best transpose against the copy kernel (the lower share over 8192 and 16384)",
                f"{g.of_copy_kernel:.1%} ({g.best}); {g.of_device_copy:.1%} of the device-to-device copy",
                100 * g.of_copy_kernel,
                "% of the copy kernel",
                "transpose",
                "S2-TR",
            )
        )
    ratio = t.get("coalescing_ratio", pd.DataFrame())
    dram = ratio[ratio.regime == "dram"].ratio.dropna() if "regime" in ratio else pd.Series(dtype=float)
    if len(dram):
        lo, hi = dram.min(), dram.max()
        rows.append(
            _row(
                "rows_over_cols",
                "Reading a matrix by rows (uncoalesced) against by columns (coalesced), from DRAM",
                f"{lo:.1f}× to {hi:.1f}× slower" if f"{lo:.1f}" != f"{hi:.1f}" else f"{lo:.1f}× slower",
                float(dram.median()),
                "× (median over sizes)",
                "coalescing",
                "S0-T2",
            )
        )
    dev, zc = memory_modes._ms(summary, "device", "kernel"), memory_modes._ms(summary, "zero_copy", "kernel")
    cold = memory_modes._ms(summary, "managed", "cold")
    for v, key, what, other, page_anchor in (
        ("cublas", "zero_copy_cublas", "Zero-copy (UVA) against device memory, cuBLAS", zc, "S1-C2"),
        ("cublas", "cold_managed_cublas", "A cold managed (unified) run against device memory, cuBLAS", cold, "S1-C2"),
    ):
        if v in dev and v in other:
            both = [n for n in dev.index if n in other.index and pd.notna(dev.at[n, v]) and pd.notna(other.at[n, v])]
            if both:
                n = max(both)
                r = other.at[n, v] / dev.at[n, v]
                rows.append(_row(key, what, f"{r:.1f}× slower at {n}³", r, "×", "memory_modes", page_anchor))
    oh = t.get("overhead", pd.DataFrame())
    floor = oh[(oh.what == "empty kernel") & (oh.method == "graph")] if "what" in oh else pd.DataFrame()
    if len(floor):
        us = float(floor.median_us.iloc[0])
        rows.append(
            _row(
                "launch_floor",
                "Launch-overhead floor: an empty kernel, back to back in a CUDA graph",
                f"{us:.2f} µs per launch",
                us,
                "µs",
                "profiles",
                "launch-floor",
            )
        )
    held, failed = claims(t)
    if held or failed:
        rows.append(
            _row(
                "claims",
                "The seeds' claims tested on this run",
                f"{len(held)} hold, {len(failed)} do not"
                + (f" (not: {'; '.join(failed[:4])}{'; …' if len(failed) > 4 else ''})" if failed else ""),
                float(len(held)),
                "claims that hold",
                "seed001",
                "S1-C1",
            )
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def claims(t: dict[str, pd.DataFrame]) -> tuple[list[str], list[str]]:
    """(claims that hold, claims that do not), each as a short line, from S1-C1 and the parts of S1-C2."""
    held, failed = [], []
    c = t.get("claims", pd.DataFrame())
    if len(c) and not (isinstance(c["size"].iloc[0], float) and math.isnan(c["size"].iloc[0])):
        r = c.iloc[0]
        for ok, text in (
            (r.over_15x, f"S1-C1: best kernel over 15× naive ({r.speedup_over_naive:.1f}×)"),
            (r.about_half_of_cublas, f"S1-C1: about half of cuBLAS ({r.share_of_cublas:.0%})"),
        ):
            (held if str(ok) == "True" else failed).append(text)
    s = t.get("s1c2", pd.DataFrame())
    if len(s):
        s = s[s.supported.astype(str).isin(["True", "False"])]
        # one claim per statement (the text before its kernel's name), holding where it holds for every kernel
        for what, g in s.groupby(s.claim.str.split(":").str[0], sort=False):
            ok = (g.supported.astype(str) == "True").sum()
            text = f"S1-C2: {what}" + (f" ({ok} of {len(g)} kernels)" if len(g) > 1 else f" ({g.ours.iloc[0]})")
            (held if ok == len(g) else failed).append(text)
    return held, failed

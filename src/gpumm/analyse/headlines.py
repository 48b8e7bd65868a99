"""The report's headline numbers: what a reader should take away, each computed from the run's tables and
linked to the section of the page that shows it (the index leads with them; a browser test reads them back).

Pure functions on the tables :func:`gpumm.analyse.tables.collect` makes, tested on the CPU.
"""

import math

import pandas as pd

from gpumm.analyse import access_patterns, claims, paired, power, rates

COLUMNS = ["key", "what", "value", "number", "unit", "page", "anchor"]


def _row(key, what, value, number, unit, page, anchor) -> dict:
    return {"key": key, "what": what, "value": value, "number": number, "unit": unit, "page": page, "anchor": anchor}


def best_share(summary: pd.DataFrame, n: int, op: str = "matmul", verdicts: pd.DataFrame | None = None) -> dict | None:
    """The fastest hand-written GPU matrix multiply of operation ``op`` at n³ (device memory), and its share of the
    rate of the same operation's cuBLAS: from the paired step where the run paired that race at n (``regime``
    sustained, with the 95% interval), else from the kernels' own sets (``regime`` unpaired, and the mark of
    :func:`gpumm.analyse.power.mark` where their power states differ)."""
    v = paired.best_verdict(verdicts, op, n) if verdicts is not None else None
    if v is not None:
        ref = verdicts[(verdicts.race == v.race) & (verdicts.M == n) & (verdicts.role == "reference")]
        return {
            "variant": v.variant,
            "gflops": v.rate,
            "cublas": float(ref.rate.iloc[0]) if len(ref) else math.nan,
            "share": v.share,
            "low": v.low,
            "high": v.high,
            "regime": v.regime,
            "burst_share": v.burst_share,
            "differ": bool(v.regimes_differ) if v.regimes_differ == v.regimes_differ else False,
            "mark": "",
        }
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
    if "op" in s:
        s = s[s.op.fillna("matmul") == op]
    cublas = s[s.kind == "cublas"]
    hand = s[s.kind == "cuda"]
    if cublas.empty or hand.empty:
        return None
    best = hand.loc[hand.gflops.idxmax()]
    rate = cublas.gflops.iloc[0]
    shape = (n, n, n)
    return {
        "variant": best.variant,
        "gflops": best.gflops,
        "cublas": rate,
        "share": best.gflops / rate,
        "low": math.nan,
        "high": math.nan,
        "regime": paired.SET_REGIME,
        "burst_share": math.nan,
        "differ": False,
        "mark": power.mark(summary, best.variant, cublas.variant.iloc[0], shape),
    }


def share_text(b: dict, digits: int = 1) -> str:
    """A best share as the index says it: '102.8% (95% interval 102.5-103.1%; bf16_persistent: 671 against 653
    TFLOP/s, sustained, paired)', with the burst share where the two regimes differ, or the unpaired mark."""
    scale = 1e3
    rates = f"{b['gflops'] / scale:.{digits}f} against {b['cublas'] / scale:.{digits}f} TFLOP/s"
    if b["regime"] == paired.PAIRED_REGIME:
        text = f"{b['share']:.1%} (95% interval {100 * b['low']:.1f}–{100 * b['high']:.1f}%; {b['variant']}: {rates}"
        text += ", sustained, paired"
        if b["differ"]:
            text += f"; burst, unpaired: {b['burst_share']:.1%}"
        return text + ")"
    text = f"{b['share']:.1%} ({b['variant']}: {rates}"
    return text + (f"; {b['mark']}" if b["mark"] else "") + ")"


def efficiency(verdicts: pd.DataFrame | None, race: str) -> dict | None:
    """At the race's largest paired size: the hand-written kernel with the most work per joule, and the
    reference's, or None where the run measured no energy."""
    if verdicts is None or verdicts.empty:
        return None
    d = verdicts[(verdicts.race == race) & verdicts.per_joule.notna()]
    if d.empty:
        return None
    n = int(d.M.max())
    d = d[d.M == n]
    ref, hand = d[d.role == "reference"], d[d.role != "reference"]
    if ref.empty or hand.empty:
        return None
    best = hand.loc[hand.per_joule.idxmax()]
    r = float(ref.per_joule.iloc[0])
    return {"n": n, "variant": best.variant, "hand": float(best.per_joule), "ref": r, "ratio": best.per_joule / r,
            "unit": str(best.per_joule_unit)}  # fmt: skip


def headlines(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The headline rows (COLUMNS) from the collected tables ``t``; a number the run lacks is left out."""
    rows = []
    for part in (_races, _efficiency, _transpose, _coalescing, _memory_modes, _floor, _claims):
        rows += part(t)
    return pd.DataFrame(rows, columns=COLUMNS)


def _races(t: dict[str, pd.DataFrame]) -> list[dict]:
    """The fastest hand-written kernel against cuBLAS, FP32 and BF16, at the ladder's size and twice it."""
    rows, summary, verdicts = [], t["summary"], t.get("verdicts")
    for op, key, what, ref, digits, page, anchor in (
        ("matmul", "best_share", "Fastest hand-written FP32 kernel against cuBLAS", "cuBLAS", 1, "ladder", "race"),
        (
            "matmul_bf16",  # the race on the tensor cores (issue 30)
            "best_bf16_share",
            "Fastest hand-written BF16 kernel against cuBLAS BF16",
            "cuBLAS BF16",
            0,
            "tensor",
            "DC-TENSOR",
        ),
    ):
        for n in (rates.LADDER_SIZE, 2 * rates.LADDER_SIZE):
            b = best_share(summary, n, op, verdicts=verdicts)
            if b:
                what_n = f"{what} at {n}³" + (" (tensor cores)" if op == "matmul_bf16" else "")
                text = share_text(b) if digits == 1 else share_text(b, digits=digits)
                rows.append(_row(f"{key}_{n}", what_n, text, 100 * b["share"], f"% of {ref}", page, anchor))
    return rows


def _efficiency(t: dict[str, pd.DataFrame]) -> list[dict]:
    """Each race's most energy-efficient hand-written kernel against the reference's work per joule."""
    rows = []
    for race, op, page, anchor, ref in (
        ("fp32", "FP32", "ladder", "race", "cuBLAS"),
        ("bf16", "BF16", "tensor", "rates", "cuBLAS BF16"),
    ):
        e = efficiency(t.get("verdicts"), race)
        if e:
            text = (
                f"{e['hand']:,.0f} against {e['ref']:,.0f} {e['unit']} ({e['variant']}: {e['ratio']:.2f}× "
                f"{ref}'s work per joule, board power over its own span, sustained)"
            )
            what = f"Most energy-efficient hand-written {op} kernel against {ref} at {e['n']}³"
            rows.append(
                _row(f"efficient_{race}", what, text, e["ratio"], "× the reference's work per joule", page, anchor)
            )
    return rows


def _transpose(t: dict[str, pd.DataFrame]) -> list[dict]:
    """The best transpose against the copy kernel, where the goal was measured."""
    goal = t.get("transpose_goal", pd.DataFrame())
    if not (len(goal) and str(goal.measured.iloc[0]) == "True"):
        return []
    g = goal.iloc[0]
    text = (
        f"{g.of_copy_kernel:.1%} ({g.best}, {g.regime if isinstance(g.get('regime'), str) else 'own sets'}); "
        f"{g.of_device_copy:.1%} of the device-to-device copy"
    )
    what = "Best transpose against the copy kernel (the lower share over 8192 and 16384)"
    return [_row("transpose_share", what, text, 100 * g.of_copy_kernel, "% of the copy kernel", "transpose", "S2-TR")]


def _coalescing(t: dict[str, pd.DataFrame]) -> list[dict]:
    """Reading by rows against by columns from DRAM, over the sizes measured."""
    ratio = t.get("coalescing_ratio", pd.DataFrame())
    dram = ratio[ratio.regime == "dram"].ratio.dropna() if "regime" in ratio else pd.Series(dtype=float)
    if not len(dram):
        return []
    lo, hi = dram.min(), dram.max()
    text = f"{lo:.1f}× to {hi:.1f}× slower" if f"{lo:.1f}" != f"{hi:.1f}" else f"{lo:.1f}× slower"
    why = access_patterns.cause_words(access_patterns.cause(ratio), short=True)
    text += f"; {why}" if why else ""
    what = "Reading a matrix by rows (uncoalesced) against by columns (coalesced), the matrices in DRAM"
    return [_row("rows_over_cols", what, text, float(dram.median()), "× (median over sizes)", "coalescing", "S0-T2")]


def _memory_modes(t: dict[str, pd.DataFrame]) -> list[dict]:
    """cuBLAS in zero-copy and in a cold managed run against device memory, at the largest size both have."""
    summary, rows = t["summary"], []
    dev, zc = claims.medians(summary, "device", "kernel"), claims.medians(summary, "zero_copy", "kernel")
    cold = claims.medians(summary, "managed", "cold")
    for v, key, what, other in (
        ("cublas", "zero_copy_cublas", "Zero-copy (UVA) against device memory, cuBLAS", zc),
        ("cublas", "cold_managed_cublas", "A cold managed (unified) run against device memory, cuBLAS", cold),
    ):
        if v in dev and v in other:
            r = (other[v] / dev[v]).dropna()
            if len(r):
                n = int(r.index.max())
                text = f"{r[n]:.1f}× slower at {n}³"
                if len(r) > 1:
                    text += f" ({r.min():.1f}× to {r.max():.1f}× over {int(r.index.min())}³ to {n}³)"
                rows.append(_row(key, what, text, float(r[n]), "×", "memory_modes", "slowdown"))
    return rows


def _floor(t: dict[str, pd.DataFrame]) -> list[dict]:
    """The launch-overhead floor: an empty kernel in a CUDA graph."""
    oh = t.get("overhead", pd.DataFrame())
    floor = oh[(oh.what == "empty kernel") & (oh.method == "graph")] if "what" in oh else pd.DataFrame()
    if not len(floor):
        return []
    us = float(floor.median_us.iloc[0])
    what = "Launch-overhead floor: an empty kernel, back to back in a CUDA graph"
    return [_row("launch_floor", what, f"{us:.2f} µs per launch", us, "µs", "profiles", "launch-floor")]


def _claims(t: dict[str, pd.DataFrame]) -> list[dict]:
    """How many of the sources' claims hold on this run, where any was tested."""
    v = t.get("claim_verdicts", pd.DataFrame())
    if not (len(v) and (v.verdict != claims.UNTESTED).any()):
        return []
    what = "The sources' claims, statement by statement, tested on this run"
    return [
        _row(
            "claims",
            what,
            claims.counted(v),
            float(claims.count(v)[claims.HOLDS]),
            "statements that hold",
            "index",
            "claims",
        )
    ]

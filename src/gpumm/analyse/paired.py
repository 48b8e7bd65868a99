"""The races' verdicts from the paired step (:mod:`gpumm.run.paired`): each share and gain, its 95% interval and
its two regimes, and each kernel's rate, power and energy per unit of work.

- **sustained**: the paired rounds, after the card has run under load (at its power cap where the race's kernels
  reach it): the share is the geometric mean of the rounds' ratios (:func:`gpumm.run.pairing.ratio`), its 95%
  interval that of ten batches of consecutive rounds (correlated rounds would make the rounds' own too narrow);
- **burst**: a cool card, each kernel's first five samples in its own set (:func:`burst` of the summary); not
  paired, so it is shown beside the sustained share only where the two differ by more than their spread.

Pure functions on the run's tables, tested on the CPU with recorded streams.
"""

import math

import numpy as np
import pandas as pd

from gpumm.analyse import power
from gpumm.run import pairing
from gpumm.setup import columns

BURST_SAMPLES = 5  # a set's first samples: the card as it starts the set (the stopping rule's minimum)
BATCHES = 10  # a share's interval: from the means of ten runs of consecutive rounds (gpumm.run.pairing.ratio)
SHARE_COLUMNS = ["race", "group", "op", "M", "N", "K", "order", "variant", "family", "against", "against_family"]
SHARE_COLUMNS += ["kind", "share", "low", "high", "rounds", "whole_share", "first5_share", "iqr_pct", "against_iqr_pct"]
SHARE_COLUMNS += ["ratio_iqr_pct"]
SHARE_COLUMNS += ["burst_share", "burst_spread", "set_share", "regimes_differ", "stop"]
MEMBER_COLUMNS = ["race", "group", "op", "M", "N", "K", "order", "variant", "family", "role", "status", "reason"]
MEMBER_COLUMNS += ["rounds", "median_ms", "iqr_pct", "rate", "unit", "burst_rate", "set_rate", "energy_j", "window_s"]
MEMBER_COLUMNS += [
    "power_w",
    "per_joule",
    "counter_per_joule",
    "per_joule_unit",
    "energy_clock_mhz",
    "energy_capped_pct",
    "energy_throttled",
]
MEMBER_COLUMNS += ["sm_clock_mhz", "power_capped_pct", "power_mean_w", "throttled", "stop"]


def rows_of(raw: pd.DataFrame) -> pd.DataFrame:
    """The paired step's rows, or none where the run has none (an archive from before the step: one row saying
    'not measured')."""
    if raw is None or raw.empty or "phase" not in raw:
        return pd.DataFrame(columns=columns.PAIRED)
    return raw


def _set_ms(summary: pd.DataFrame, variant: str, shape) -> tuple[float, float, float]:
    """(median ms, burst median ms, burst IQR %) of a variant's kernel set at ``shape`` in device memory."""
    r = power.set_row(summary, variant, shape) if summary is not None and len(summary) else None
    if r is None:
        return math.nan, math.nan, math.nan
    return (float(r.median_ms), float(r.get("burst_median_ms", math.nan)), float(r.get("burst_iqr_pct", math.nan)))


def shares(raw: pd.DataFrame, summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per group and comparison: the share of ``variant`` in ``against``'s rate (the reference, or the rung
    below: ``kind``), paired over the sustained rounds, with its 95% interval; the share the same blocks give
    unpaired (ratio of medians) and over their first five; the burst share and the whole sets' share of the two
    kernels' own sets (from ``summary``), and whether the burst and sustained shares differ beyond their spread."""
    raw = rows_of(raw)
    s = raw[(raw.phase == "sustained") & (raw.status == "ok")]
    out = []
    for (race, group, order), g in s.groupby(["race", "group", "order"], sort=False):
        wide = g.pivot_table(index="round", columns="variant", values="ms", aggfunc="first").sort_index()
        info = g.drop_duplicates("variant").set_index("variant")
        by_family = dict(zip(info.family, info.index))
        ref = info.index[info.role == "reference"]
        if ref.empty:
            continue
        ref = ref[0]
        shape = tuple(int(info.iloc[0][d]) for d in "MNK")
        stop = str(g.stop.dropna().iloc[0]) if "stop" in g and g.stop.notna().any() else ""
        for a, row in info.iterrows():
            if a == ref:
                continue
            against = [(ref, "reference")]
            below = str(row.rung_below) if isinstance(row.rung_below, str) else ""
            if below in by_family and by_family[below] != ref:
                against.append((by_family[below], "rung_below"))
            for b, kind in against:
                r = pairing.ratio(wide[b], wide[a], batches=BATCHES)
                per_round = (wide[b] / wide[a]).dropna()
                whole = pairing.ratio_of_medians(list(wide[b]), list(wide[a]))
                first5 = pairing.ratio_of_medians(list(wide[b][:BURST_SAMPLES]), list(wide[a][:BURST_SAMPLES]))
                set_a, burst_a, biqr_a = _set_ms(summary, a, shape)
                set_b, burst_b, biqr_b = _set_ms(summary, b, shape)
                burst_share = burst_b / burst_a
                spread = burst_share * (biqr_a + biqr_b) / 100 if burst_share == burst_share else math.nan
                half = (r.high - r.low) / 2 if r.high == r.high else 0.0
                differ = bool(burst_share == burst_share and abs(burst_share - r.value) > half + (spread or 0))
                out.append(
                    [race, group, row.op, *shape, order, a, row.family, b, info.at[b, "family"], kind, r.value,
                     r.low, r.high, r.rounds, whole, first5, pairing.iqr_pct(list(wide[a])),
                     pairing.iqr_pct(list(wide[b])), pairing.iqr_pct(list(per_round)), burst_share, spread,
                     set_b / set_a, differ, stop]
                )  # fmt: skip
    return pd.DataFrame(out, columns=SHARE_COLUMNS)


def _unit(op: str) -> tuple[str, str]:
    return ("GB/s", "GB/J") if op in ("transpose", "copy") else ("GFLOP/s", "GFLOP/J")


def members(raw: pd.DataFrame, summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per group and kernel: whether it raced (or why not), its sustained median and spread, its rate, its
    burst and whole-set rates (its own set), its energy over its span alone (joules, seconds, watts, work per
    joule, the clock and the capped share there), and the group's clock and power over the sustained rounds."""
    raw = rows_of(raw)
    if raw.empty:
        return pd.DataFrame(columns=MEMBER_COLUMNS)
    out = []
    for (race, group, order), g in raw.groupby(["race", "group", "order"], sort=False, dropna=False):
        checks = g[g.phase == "check"]
        sus = g[(g.phase == "sustained") & (g.status == "ok")]
        energy = g[g.phase == "energy"].set_index("variant")
        grp = sus.iloc[0] if len(sus) else None
        for r in checks.itertuples():
            if not isinstance(r.variant, str) or not r.variant:
                continue
            mine = sus[sus.variant == r.variant]
            work = float(mine.work.iloc[0]) if len(mine) else float(energy.work.get(r.variant, np.nan))
            unit, per_j = _unit(r.op)
            shape = (int(r.M), int(r.N), int(r.K))
            set_ms, burst_ms, _ = _set_ms(summary, r.variant, shape)
            ms = float(mine.ms.median()) if len(mine) else math.nan
            e = energy.loc[r.variant] if r.variant in energy.index else None
            joules = float(e.energy_j) if e is not None else math.nan
            out.append(
                {
                    "race": race, "group": group, "op": r.op, "M": shape[0], "N": shape[1], "K": shape[2],
                    "order": order, "variant": r.variant, "family": r.family, "role": r.role,
                    "status": "paired" if len(mine) else ("energy only" if r.status == "ok" else r.status),
                    "reason": r.reason if isinstance(r.reason, str) else "",
                    "rounds": int(mine["round"].nunique()) if len(mine) else 0, "median_ms": ms,
                    "iqr_pct": pairing.iqr_pct(list(mine.ms)) if len(mine) else math.nan,
                    "rate": work / (ms * 1e-3) / 1e9 if ms == ms else math.nan, "unit": unit,
                    "burst_rate": work / (burst_ms * 1e-3) / 1e9 if work == work else math.nan,
                    "set_rate": work / (set_ms * 1e-3) / 1e9 if work == work else math.nan,
                    "energy_j": joules, "window_s": float(e.window_s) if e is not None else math.nan,
                    "power_w": float(e.power_mean_w) if e is not None else math.nan,
                    # the span's rate over its power: work per joule (the counter's joules are the cross-check)
                    "per_joule": work / (float(e.ms) * 1e-3) / float(e.power_mean_w) / 1e9
                    if e is not None and float(e.power_mean_w) > 0
                    else math.nan,
                    "counter_per_joule": float(e.window_work) / joules / 1e9
                    if e is not None and joules > 0
                    else math.nan,
                    "per_joule_unit": per_j,
                    "energy_clock_mhz": float(e.sm_clock_mhz) if e is not None else math.nan,
                    "energy_capped_pct": float(e.power_capped_pct) if e is not None else math.nan,
                    "energy_throttled": _truth(e.throttled) if e is not None else None,
                    "sm_clock_mhz": float(grp.sm_clock_mhz) if grp is not None else math.nan,
                    "power_capped_pct": float(grp.power_capped_pct) if grp is not None else math.nan,
                    "power_mean_w": float(grp.power_mean_w) if grp is not None else math.nan,
                    "throttled": _truth(grp.throttled) if grp is not None else None,
                    "stop": str(grp.stop) if grp is not None and isinstance(grp.stop, str) else "",
                }
            )  # fmt: skip
    return pd.DataFrame(out, columns=MEMBER_COLUMNS)


def _truth(x) -> bool | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return str(x).lower() == "true"


VERDICT_COLUMNS = ["race", "op", "M", "N", "K", "family", "variant", "role", "status", "reason", "regime", "share"]
VERDICT_COLUMNS += ["low", "high", "burst_share", "regimes_differ", "set_share", "mark", "rung_below", "gain"]
VERDICT_COLUMNS += ["gain_low", "gain_high", "gain_regime", "gain_mark", "rate", "burst_rate", "unit", "power_w"]
VERDICT_COLUMNS += ["per_joule", "per_joule_unit", "energy_clock_mhz", "sm_clock_mhz", "power_capped_pct"]
VERDICT_COLUMNS += ["throttled", "stop"]
PAIRED_REGIME = "sustained, paired"
SET_REGIME = "own sets, unpaired"


def verdicts(shares_table: pd.DataFrame, members_table: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Every kernel of every race at every paired size (the forward pass), one row each: its share of the reference
    and its gain over the rung below, paired (``regime`` sustained, with the 95% interval, the burst share beside
    it and whether the two differ beyond their spread) or, for a rung the step timed for its energy only or left
    out, from the two kernels' own sets (with the mark of :func:`gpumm.analyse.power.mark` where their power states
    differ); its rate, power and work per joule, and the group's clock and capped share over the rounds."""
    from gpumm.setup import catalog

    fams = catalog.load()
    m = members_table[members_table.order == "forward"] if len(members_table) else members_table
    sh = shares_table[shares_table.order == "forward"] if len(shares_table) else shares_table
    rows = []
    for (race, group), g in m.groupby(["race", "group"], sort=False):
        ref = g[g.role == "reference"]
        if ref.empty:
            continue
        ref = ref.iloc[0]
        shape = (int(ref.M), int(ref.N), int(ref.K))
        chosen = dict(zip(g.family, g.variant))
        for r in g.itertuples():
            mine = sh[(sh.group == group) & (sh.variant == r.variant)] if len(sh) else sh
            of_ref = mine[mine.kind == "reference"] if len(mine) else mine
            row = {
                "race": race, "op": r.op, "M": r.M, "N": r.N, "K": r.K, "family": r.family, "variant": r.variant,
                "role": r.role, "status": r.status, "reason": r.reason, "rate": r.rate, "burst_rate": r.burst_rate,
                "unit": r.unit, "power_w": r.power_w, "per_joule": r.per_joule, "per_joule_unit": r.per_joule_unit,
                "energy_clock_mhz": r.energy_clock_mhz, "sm_clock_mhz": r.sm_clock_mhz,
                "power_capped_pct": r.power_capped_pct, "throttled": r.throttled, "stop": r.stop,
                "rung_below": "", "mark": "", "gain_mark": "",
            }  # fmt: skip
            if r.role == "reference":
                row.update(share=1.0, low=1.0, high=1.0, regime=PAIRED_REGIME if r.status == "paired" else SET_REGIME)
            elif len(of_ref):
                x = of_ref.iloc[0]
                row.update(share=x.share, low=x.low, high=x.high, burst_share=x.burst_share, set_share=x.set_share,
                           regimes_differ=bool(x.regimes_differ), regime=PAIRED_REGIME)  # fmt: skip
            else:
                c = power.compare(summary, r.variant, ref.variant, shape)
                row.update(share=c["share"], burst_share=c["burst_share"], set_share=c["share"], regime=SET_REGIME,
                           mark=power.mark(summary, r.variant, ref.variant, shape))  # fmt: skip
                if row["rate"] != row["rate"]:
                    row["rate"] = r.set_rate
                if row["rate"] != row["rate"]:  # not even checked here (left out): its own set's rate
                    mine_set = power.set_row(summary, r.variant, shape)
                    if mine_set is not None:
                        row["rate"] = float(mine_set.gbs if r.op in ("transpose", "copy") else mine_set.gflops)
            below = str(fams.get(r.family, {}).get("rung_below") or "")
            if below and below in chosen and r.role != "reference":
                row["rung_below"] = below
                gain = mine[mine.kind == "rung_below"] if len(mine) else mine
                if len(gain):
                    x = gain.iloc[0]
                    row.update(gain=x.share, gain_low=x.low, gain_high=x.high, gain_regime=PAIRED_REGIME)
                else:
                    c = power.compare(summary, r.variant, chosen[below], shape)
                    row.update(gain=c["share"], gain_regime=SET_REGIME,
                               gain_mark=power.mark(summary, r.variant, chosen[below], shape))  # fmt: skip
            rows.append(row)
    return pd.DataFrame(rows).reindex(columns=VERDICT_COLUMNS)


def best_verdict(verdicts_table: pd.DataFrame, op: str | None, n: int) -> pd.Series | None:
    """The hand-written kernel with the highest paired (sustained) share of its race's reference among the races of
    operation ``op`` (None: of every race in the table) at n³ (a transpose's n × n), or None where none was paired
    there."""
    v = verdicts_table
    if v is None or v.empty:
        return None
    if op is not None:
        v = v[v.op.isin({"transpose": ("transpose", "copy")}.get(op, (op,)))]
    d = v[(v.M == n) & (v.role != "reference") & (v.regime == PAIRED_REGIME) & v.share.notna()]
    return d.loc[d.share.idxmax()] if len(d) else None

"""The races' verdicts as the pages show them: each rung's share of its reference and gain over the rung below in
the regime they were taken in, their intervals, the burst share beside the sustained one where the two differ, the
power and work per joule of every kernel, and grid cells that carry their mark where two unpaired sets ran in
different power states (:mod:`gpumm.analyse.paired`, :mod:`gpumm.analyse.power`).

Used by the ladder, tensor and transpose pages; the notebooks pass the run's tables and show what comes back.
"""

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from gpumm.analyse import paired, power
from gpumm.report import figures as F
from gpumm.setup import regimes

PAIRED = paired.PAIRED_REGIME


def of_race(t: dict, race: str) -> pd.DataFrame:
    """The race's verdicts (the forward pass), in the catalog's ladder order, smallest size first."""
    v = t.get("verdicts", pd.DataFrame())
    if v is None or v.empty or "race" not in v:
        return pd.DataFrame(columns=paired.VERDICT_COLUMNS)
    return v[v.race == race].reset_index(drop=True)


def of_reference(t: dict, reference: str) -> pd.DataFrame:
    """The verdicts of the race whose reference is the family ``reference`` (whatever the config names the race)."""
    v = t.get("verdicts", pd.DataFrame())
    if v is None or v.empty or "race" not in v:
        return pd.DataFrame(columns=paired.VERDICT_COLUMNS)
    races = set(v[(v.role == "reference") & (v.family == reference)].race)
    return of_race(t, next(iter(races))) if races else pd.DataFrame(columns=paired.VERDICT_COLUMNS)


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}" if x == x else "—"


def _interval(low: float, high: float) -> str:
    return f"{100 * low:.1f}–{100 * high:.1f}" if low == low and high == high else "—"


def table(v: pd.DataFrame, reference: str, rate_unit: str = "TFLOP/s", rate_scale: float = 1e-3) -> pd.DataFrame:
    """The verdict table a reader sees: one row per kernel and size."""
    rows = []
    for r in v.itertuples():
        burst = _pct(r.burst_share) if r.regimes_differ is True or str(r.regimes_differ) == "True" else "the same"
        if r.regime != PAIRED or r.role == "reference":
            burst = "—"
        note = r.mark if isinstance(r.mark, str) and r.mark else ""
        if r.status == "energy only":  # the step's reason says how far below the reference, and the config's bound
            why = r.reason.split("energy only: ", 1)[-1] if isinstance(r.reason, str) else ""
            note = note or f"timed for its energy only: {why}"
        elif r.status == "skipped":
            note = note or (r.reason if isinstance(r.reason, str) else "not paired")
        gain = ""
        if isinstance(r.rung_below, str) and r.rung_below:
            gain = f"×{r.gain:.3f}" if r.gain == r.gain else "—"
            if r.gain_regime == PAIRED:
                gain += f" ({r.gain_low:.3f}–{r.gain_high:.3f})"
            elif isinstance(r.gain_mark, str) and r.gain_mark:
                gain += f" ({r.gain_mark})"
            else:
                gain += f" ({paired.SET_REGIME})"
        rows.append(
            {
                "n": int(r.M),
                "kernel": r.family,
                f"% of {reference}": _pct(r.share, 2) if r.role != "reference" else "100",
                "95% interval": _interval(r.low, r.high) if r.role != "reference" else "",
                "regime": r.regime,
                "burst (first five samples, unpaired)": burst,
                "over the rung below (95% interval)": gain,
                rate_unit: r.rate * rate_scale if r.rate == r.rate else math.nan,
                "board power (W)": r.power_w,
                r.per_joule_unit if isinstance(r.per_joule_unit, str) else "per joule": r.per_joule,
                "note": note,
            }
        )
    return pd.DataFrame(rows)


FIGURE_COLUMNS = ["M", "family", "variant", "regime", "share", "low", "high", "burst_share", "regimes_differ"]
FIGURE_COLUMNS += ["rate", "power_w", "per_joule", "per_joule_unit"]
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c"]  # one per size


def _bars(axes, d: pd.DataFrame, off: np.ndarray, h: float, k: int, n: int) -> None:
    """One size's bars: each kernel's share (hatched where unpaired) with its interval and the burst tick where
    the regimes differ (left), and its work per joule (right)."""
    pairedness = (d.regime == PAIRED).to_numpy()
    share = 100 * d.share.to_numpy(dtype=float)
    for yy, s, p in zip(off, share, pairedness):
        if s == s:
            axes[0].barh(yy, s, height=h * 0.95, color=COLOURS[k % 3], hatch=None if p else "//",
                         alpha=1.0 if p else 0.45)  # fmt: skip
    err = np.array([share - 100 * d.low.to_numpy(dtype=float), 100 * d.high.to_numpy(dtype=float) - share])
    axes[0].errorbar(share, off, xerr=np.nan_to_num(err), fmt="none", ecolor="black", lw=1, capsize=2)
    differ = d.regimes_differ.astype(str) == "True"
    axes[0].scatter(100 * d.burst_share[differ], off[differ.to_numpy()], marker="|", s=120, color="black", zorder=3)
    axes[1].barh(off, d.per_joule, height=h * 0.95, color=COLOURS[k % 3], label=f"{n}³")


def memory_words(sizes, l2_bytes: float, op: str) -> str:
    """The regime of each size, by the one rule (:mod:`gpumm.setup.regimes`), as a caption's sentence."""
    said = [f"at {int(n)}³ {regimes.square_words(int(n), l2_bytes, op)}" for n in sorted(set(sizes))]
    text = "; ".join(said)
    return f" {text[0].upper()}{text[1:]}." if text else ""


def figure(
    v: pd.DataFrame,
    reference: str,
    name: str,
    caption_more: str = "",
    goal: float | None = None,
    memory: tuple[float, str] | None = None,
) -> None:
    """Two panels, a bar per kernel and size: its share of the reference (paired bars with their 95% interval,
    unpaired ones hatched, the burst share a black tick where it differs), and its work per joule. ``memory``:
    (the L2's bytes, the operation's key in :data:`gpumm.setup.regimes.FOOTPRINT`), to name each size's regime."""
    if v.empty:
        F.md("*This race was not paired in this run.*")
        return
    sizes = sorted(v.M.unique())
    order = list(dict.fromkeys(v.family))
    fig, axes = plt.subplots(
        1, 2, figsize=(13, 0.5 * len(order) + 2.0), sharey=True, gridspec_kw={"width_ratios": [3, 2]}
    )
    y = np.arange(len(order))
    h = 0.8 / len(sizes)
    for k, n in enumerate(sizes):
        _bars(axes, v[v.M == n].set_index("family").reindex(order), y + (k - (len(sizes) - 1) / 2) * h, h, k, n)
    axes[0].set_yticks(y, labels=order)
    axes[0].invert_yaxis()
    top = float(np.nanmax(100 * v.high.fillna(v.share)))
    axes[0].set(xlabel=f"% of {reference}", title=f"Share of {reference}", xlim=(0, max(110, 1.05 * top)))
    axes[0].axvline(100, color="grey", ls="--", lw=1)
    if goal:
        axes[0].axvline(100 * goal, color="grey", ls=":", lw=1)
    unit = str(v.per_joule_unit.dropna().iloc[0]) if v.per_joule_unit.notna().any() else "per joule"
    axes[1].set(xlabel=unit, title="Work per joule")
    handles, labels = axes[1].get_legend_handles_labels()
    plt.tight_layout()
    fig.legend(handles, labels, title="size", loc="upper center", ncol=len(sizes), bbox_to_anchor=(0.5, 0.0))
    F.figure(
        v[FIGURE_COLUMNS],
        name=name,
        caption=f"Each kernel's share of {reference} at each paired size (left; bars: the sustained share, timed in "
        "alternation with the reference, with its 95% interval; a black tick: the burst share of each kernel's own "
        "first five samples, where it differs from the sustained one beyond their spread; hatched: a rung timed "
        "unpaired, from the two kernels' own sets) and its work per joule (right: its rate over the board power "
        "while it ran alone, after the card had reached its sustained state)."
        + caption_more
        + (memory_words(v.M, *memory) if memory else ""),
        alt=f"Horizontal bars: share of {reference} with intervals, and work per joule, for every kernel of the race",
    )


def state(v: pd.DataFrame, limit_w: float | None = None) -> str:
    """What the card's state was over each size's sustained rounds, in words."""
    said = []
    for n, g in v.groupby("M"):
        r = g.iloc[0]
        if r.sm_clock_mhz != r.sm_clock_mhz:
            continue
        capped = r.power_capped_pct
        words = f"at {int(n)}³ the SM clock's median was {r.sm_clock_mhz:.0f} MHz"
        if capped == capped:
            words += f", the power policy held it down {capped:.0f}% of the time" if capped > 0 else ", never capped"
        if r.power_capped_pct == r.power_capped_pct and g.power_w.notna().any():
            words += f" (board power {g.power_w.min():.0f}-{g.power_w.max():.0f} W across the kernels alone"
            words += f", limit {limit_w:.0f} W)" if limit_w else ")"
        said.append(words)
    return ("Over the sustained rounds " + "; ".join(said) + ".") if said else ""


def goal_sentence(v: pd.DataFrame, gpu: str, reference: str, goal: float) -> str:
    """The race's verdict: the best rung's sustained, paired share at every paired size, its interval, the burst
    share where it differs, and whether the goal is met by the sustained shares (what the headline uses)."""
    said, met = [], []
    for n in sorted(v.M.unique()):
        b = paired.best_verdict(v, None, n)
        if b is None:
            continue
        words = f"at {int(n)}³, **{b.family}** reaches **{100 * b.share:.1f}%** of {reference} (95% interval "
        words += f"{_interval(b.low, b.high)}%)"
        if str(b.regimes_differ) == "True":
            words += f"; in the burst regime, from each kernel's own first five samples, {100 * b.burst_share:.1f}%"
        said.append(words)
        met.append(b.share >= goal)
    if not said:
        return ""
    verdict = "met" if all(met) else "not met" if not any(met) else "met at some sizes only"
    return (
        f"Fastest hand-written kernel on {gpu}, sustained and paired (timed in alternation with {reference} after "
        "the card reached its sustained state): " + "; ".join(said) + f". The goal, {goal:.0%} of {reference} or "
        f"more at every size, is **{verdict}** on the sustained, paired shares (the headline's)."
    )


def cell(value: float, mark: str = "", low: float = math.nan, high: float = math.nan, gain: bool = False) -> str:
    """A grid cell: a share in percent (``gain``: a ratio, ×); '± half the interval (paired)' where it was paired;
    the mark, with the first-five share, where two unpaired sets ran in different power states."""
    if value != value:
        return "—"
    text = f"×{value:.3f}" if gain else f"{100 * value:.1f}"
    if low == low and high == high:
        half = (high - low) / 2
        return text + (f" ±{half:.3f}" if gain else f" ±{100 * half:.1f}") + " (paired)"
    return text + (f" ({mark})" if mark else "")


def grid(long: pd.DataFrame, v: pd.DataFrame, summary: pd.DataFrame, kind: str = "share") -> pd.DataFrame:
    """Cells of a grid of shares (``kind`` share: of the reference; gain: over the rung below) from the kernels'
    own sets, ``long`` one row per cell with columns row, column, value, variant, against and M, N, K: where the
    race was paired at that shape, the paired value and its interval instead; elsewhere the mark of two sets in
    different power states (:func:`gpumm.analyse.power.mark`)."""
    out = []
    for r in long.itertuples():
        shape = (int(r.M), int(r.N), int(r.K))
        hit = v[(v.variant == r.variant) & (v.M == shape[0]) & (v.N == shape[1]) & (v.K == shape[2])]
        x = hit.iloc[0] if len(hit) else None
        g = kind == "gain"
        if not g and x is not None and x.role == "reference":
            out.append("100")
        elif not g and x is not None and x.regime == PAIRED:
            out.append(cell(x.share, low=x.low, high=x.high))
        elif g and x is not None and x.gain_regime == PAIRED:
            out.append(cell(x.gain, low=x.gain_low, high=x.gain_high, gain=True))
        elif isinstance(r.against, str) and r.against:
            out.append(cell(r.value, power.mark(summary, r.variant, r.against, shape), gain=g))
        else:
            out.append(cell(r.value, gain=g))
    return long.assign(cell=out).pivot_table(index="row", columns="column", values="cell", aggfunc="first")


def roof_checks(failed: pd.DataFrame) -> None:
    """The roofline's failed checks, in a box above what follows: each kernel measured above a roof, which roof
    and by how much (:func:`gpumm.analyse.roofline.split`); nothing where every point is under its roofs."""
    if failed is None or failed.empty:
        return
    F.md(
        f"**Failed check{'s' if len(failed) > 1 else ''}: a roof that does not bound.** "
        + "; ".join(failed.check)
        + ". These kernels are left out of the table and the figure above until the roof or the count is mended."
    )

"""The race to cuBLAS (issue 11): each rung's rate and share of cuBLAS, its counters, and what moved.

Reads the tidy tables only (summary, profiles, variants); the ladder page plots
what these return. A rung is a catalog family with ``rung_below``; a family's
row is its fastest verified build.
"""

import math

import pandas as pd

from gpumm.analyse import rates

# The counters that explain a rung, from the profile at one size: (column, words, lower is better)
COUNTERS = [
    ("dram_bytes_per_flop", "DRAM bytes per FLOP", True),
    ("l2_bytes_per_flop", "L2 bytes per FLOP", True),
    ("shared_loads_per_ffma", "shared-memory load instructions per FFMA instruction", True),
    ("bank_conflicts_per_kflop", "shared-memory bank conflicts per 1000 FLOP", True),
    ("registers", "registers per thread", True),
    ("occupancy_pct", "achieved occupancy (%)", False),
    ("issue_active_pct", "issue-slot utilisation (%)", False),
]
STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
# stall reasons a rung's file names (warps stalled per issued instruction; lower is better): their own columns
STALLS = ["long_scoreboard", "barrier", "short_scoreboard", "mio_throttle"]
STALL_COUNTERS = [(f"stall_{s}", f"'{s.replace('_', ' ')}' stalls per issue", True) for s in STALLS]
# The counters each rung's kernel file says it should move ("The counter(s) it should move: ..." in its header;
# tests/analyse/test_race_counters.py reads the headers), first in the rung's sentence. "sm_active" is not in the
# race's metric set: its sentence says so.
MOVES = {
    "blocktile_1d": ["shared_loads_per_ffma", "dram_bytes_per_flop"],
    "blocktile_2d": ["shared_loads_per_ffma", "issue_active_pct"],
    "vectorized": ["shared_loads_per_ffma", "issue_active_pct"],
    "warptile": ["bank_conflicts_per_kflop", "stall_mio_throttle", "stall_short_scoreboard"],
    "double_buffer": ["stall_long_scoreboard", "stall_barrier", "issue_active_pct"],
    "swizzled": ["bank_conflicts_per_kflop", "issue_active_pct"],
    "interior": ["issue_active_pct"],
    "streamk": ["sm_active"],
}
NOT_PROFILED = {"sm_active": "SM active cycles against elapsed cycles"}


def _metric(w: pd.Series, name: str) -> float:
    return float(w[name]) if name in w and pd.notna(w[name]) else math.nan


def rung_rates(summary: pd.DataFrame, families: list[dict], shapes) -> pd.DataFrame:
    """The ladder (:func:`gpumm.analyse.rates.ladder`) at each (M, N, K) of ``shapes``, one row per family present."""
    parts = []
    for shape in shapes:
        t = rates.ladder(summary, families, shape)
        t = t[t.gflops.notna()]
        if len(t):
            parts.append(t.assign(variant=t.best_variant, shape="×".join(map(str, shape)), M=shape[0]))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def rung_counters(profiles: pd.DataFrame, variants: pd.DataFrame, size: int) -> pd.DataFrame:
    """One row per family profiled at the square ``size``: the counters of :data:`COUNTERS` and the top stalls."""
    p = profiles[(profiles.status == "ok") & (profiles.M == size) & (profiles.N == size) & (profiles.K == size)]
    if p.empty:
        return pd.DataFrame()
    wide = p.pivot_table(index="variant", columns="metric", values="value", aggfunc="sum")
    kernels = p.groupby("variant")["kernel"].first()
    fam_of = dict(zip(variants.variant, variants.family))
    flops = 2.0 * size**3
    rows = []
    for variant, w in wide.iterrows():
        ffma_warp = _metric(w, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") / 32
        conflicts = _metric(w, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") + _metric(
            w, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
        )
        stalls = {
            m[len(STALL_PREFIX) : -len(STALL_SUFFIX)].replace("_", " "): float(v)
            for m, v in w.items()
            if m.startswith(STALL_PREFIX) and m.endswith(STALL_SUFFIX) and pd.notna(v)
        }
        top = sorted(stalls.items(), key=lambda kv: -kv[1])[:2]
        rows.append(
            {
                "family": fam_of.get(variant, variant),
                "variant": variant,
                "kernel": kernels.get(variant, ""),
                "dram_bytes_per_flop": (_metric(w, "dram__bytes_read.sum") + _metric(w, "dram__bytes_write.sum"))
                / flops,
                "l2_bytes_per_flop": _metric(w, "lts__t_bytes.sum") / flops,
                "shared_loads_per_ffma": _metric(w, "smsp__sass_inst_executed_op_shared_ld.sum") / ffma_warp
                if ffma_warp > 0
                else math.nan,
                "bank_conflicts_per_kflop": 1000 * conflicts / flops,
                "registers": _metric(w, "launch__registers_per_thread"),
                "occupancy_pct": _metric(w, "sm__warps_active.avg.pct_of_peak_sustained_active"),
                "issue_active_pct": _metric(w, "smsp__issue_active.avg.pct_of_peak_sustained_active"),
                "top_stalls": ", ".join(f"{k} {v:.2f}" for k, v in top) if top else "",
                **{f"stall_{name}": _metric(w, f"{STALL_PREFIX}{name}{STALL_SUFFIX}") for name in STALLS},
            }
        )
    return pd.DataFrame(rows)


def _move(col: str, words: str, lower_better: bool, a: float, b: float) -> tuple[float, str] | None:
    """(how far it moved, the words) for one counter from ``a`` (the rung below) to ``b``; None where either is
    missing or nothing moved. A counter that drops to 0 or rises from 0 moved the most."""
    if not (a == a and b == b) or a == b or a < 0 or b < 0:
        return None
    size = abs(math.log(b / a)) if a > 0 and b > 0 else math.inf
    better = (b < a) == lower_better
    ratio = f"×{b / a:.2f}" if a > 0 and b > 0 else ("gone" if b == 0 else "from none")
    return size, f"{words} {_fmt(a)} → {_fmt(b)} ({'better' if better else 'worse'}, {ratio})"


def what_moved(counters: pd.DataFrame, rates: pd.DataFrame, families: list[dict], size: int, top: int = 2) -> list[str]:
    """One sentence per rung with a profiled rung below: first the counters its file says it should move
    (:data:`MOVES`), then the ``top`` others that changed most, and the gain in rate."""
    c = counters.set_index("family") if len(counters) else counters
    r = rates[rates.M == size].set_index("family") if len(rates) else rates
    known = {col: (words, lower) for col, words, lower in COUNTERS + STALL_COUNTERS}
    out = []
    for fam in families:
        name, below = fam["family"], fam.get("rung_below")
        if not below or name not in c.index or below not in c.index:
            continue
        named, missing = [], []
        for col in MOVES.get(name, []):
            if col in NOT_PROFILED:
                missing.append(f"{NOT_PROFILED[col]} (the race's metric set does not collect it)")
                continue
            if col not in c.columns:
                missing.append(f"{col} (absent from this run's profile)")
                continue
            m = _move(col, *known[col], c.at[below, col], c.at[name, col])
            named.append(m[1] if m else f"{known[col][0]} unchanged ({_fmt(c.at[name, col])})")
        scale = {col: c[col].abs().max() for col, _, _ in COUNTERS if col in c}
        others = [
            m
            for col, words, lower in COUNTERS
            if col not in MOVES.get(name, [])
            and max(c.at[below, col], c.at[name, col]) >= 0.01 * scale.get(col, 0)  # not a move among near-zeros
            and (m := _move(col, words, lower, c.at[below, col], c.at[name, col]))
        ]
        said = []
        if named or missing:
            said.append("the counters its file names: " + "; ".join(named + missing))
        if others:
            said.append("most moved besides: " + "; ".join(w for _, w in sorted(others, key=lambda m: -m[0])[:top]))
        if not said:
            continue
        gain = r.at[name, "gain_over_rung_below"] if name in r.index else math.nan
        rate = f"GFLOP/s ×{gain:.2f}" if gain == gain else "rate not measured"
        out.append(
            f"**{name}** over {below} — "
            + ". ".join(p if k == 0 else p[0].upper() + p[1:] for k, p in enumerate(said))
            + f". {rate}."
        )
    return out


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def chain(families: list[dict], top: str = "cublas", base: str = "unrolled") -> list[str]:
    """The race's rungs in order: ``naive``, then ``base`` and every rung above it up to ``top``, found by following
    ``rung_below`` down from ``top`` (so a new rung joins the chart by naming the one it improves on)."""
    below = {f["family"]: f.get("rung_below") for f in families}
    if top not in below:
        return []
    out, f = [], top
    while f is not None and f not in out:
        out.append(f)
        if f == base:
            break
        f = below.get(f)
    return (["naive"] if "naive" in below else []) + out[::-1]


def tuning_search(
    summary: pd.DataFrame, tuned: dict[str, list[str]], sizes=(4096, 8192, 16384), choose_at: int = rates.LADDER_SIZE
) -> pd.DataFrame:
    """The tuning searches of a run: one row per candidate build (``family_key``) and square size, with its
    status, median GFLOP/s, share of the same run's cuBLAS and SM clock; ``chosen`` marks each family's fastest
    verified candidate at ``choose_at`` (a candidate that failed its checks, or was not timed, is never chosen).

    ``tuned`` maps a family to its candidates' keys, in the catalog's order."""
    cols = [
        "family",
        "candidate",
        "variant",
        "defines",
        "size",
        "status",
        "gflops",
        "share_of_cublas",
        "sm_clock_mhz",
        "chosen",
    ]
    k = summary[
        (summary.timed == "kernel")
        & (summary.memory_mode == "device")
        & (summary.M == summary.N)
        & (summary.N == summary.K)
        & summary.M.isin(sizes)
    ]
    cublas = k[(k.variant == "cublas") & (k.status == "ok")].set_index("M").gflops
    rows = []
    for family, keys in tuned.items():
        for key in keys:
            vid = f"{family}_{key}"
            mine = k[k.variant == vid].set_index("M")
            for n in sizes:
                r = mine.loc[n] if n in mine.index else None
                ok = r is not None and r.status == "ok" and pd.notna(r.gflops)
                rows.append(
                    {
                        "family": family,
                        "candidate": key,
                        "variant": vid,
                        "defines": r.defines if r is not None and "defines" in mine else "",
                        "size": n,
                        "status": "not timed" if r is None else r.status,
                        "gflops": float(r.gflops) if ok else math.nan,
                        "share_of_cublas": float(r.gflops) / cublas[n] if ok and n in cublas.index else math.nan,
                        "sm_clock_mhz": float(r.sm_clock_mhz) if r is not None and "sm_clock_mhz" in mine else math.nan,
                        "chosen": False,
                    }
                )
    out = pd.DataFrame(rows, columns=cols)
    for family, g in out[(out["size"] == choose_at) & out.gflops.notna()].groupby("family"):
        winner = g.loc[g.gflops.idxmax(), "candidate"]
        out.loc[(out.family == family) & (out.candidate == winner), "chosen"] = True
    return out

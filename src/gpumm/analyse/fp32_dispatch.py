"""FP32 through the model's steps (issue 40): the tables of results/raw/model-fp32 (the ladder's kernels and cuBLAS
SGEMM on the fit shapes, in paired rounds) and results/raw/model-fp32-dispatch (the FP32 dispatcher and SGEMM on
the shapes its rule never saw: the ladder page's odd shapes, and the model's layers at ``model.fp32.tokens``).

- ``fp32_rates``: each kernel's median per step, shape and weights (cold; warm where the weight fits in the L2),
  its FP32 rate and its share of SGEMM (ratio of medians, and the median of the per-round ratios);
- ``fp32_dispatch``: per held-out shape, the kernel the rule picked and from which fit shape, its share of
  SGEMM cold and warm, and, at the ladder's odd shapes, the goal (80% of SGEMM, paired, cold and warm where B
  fits in the L2: the model steps' regime and the ladder's) and whether it is met (on the cold row).

The rule is fitted again here from the fit step's samples and must be the one the dispatch step applied.
Empty tables (their columns only) when the run did not time FP32.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from gpumm.analyse import dispatch, layers
from gpumm.setup import hardware

RATES = ["step", "layer", "M", "N", "K", "kernel", "role", "picks", "weights", "n", "median_us", "q1_us", "q3_us"]
RATES += ["tflops", "of_fp32_peak", "of_reference", "round_ratio", "stale"]
DISPATCH = ["layer", "M", "N", "K", "kernel", "from", "weights", "median_us", "reference_us", "of_reference"]
DISPATCH += ["round_ratio", "goal", "met"]
GOAL = ("at least 80% of cuBLAS SGEMM (paired), cold and warm", 0.8)


def empty() -> dict[str, pd.DataFrame]:
    return {"fp32_rates": pd.DataFrame(columns=RATES), "fp32_dispatch": pd.DataFrame(columns=DISPATCH)}


def tables(results: Path, gpu: dict, certified: dict[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """Both FP32 tables from a run's folder (``results/`` or an archive); empty where FP32 was not timed.
    ValueError where the dispatch step applied a rule the fit step's samples do not give."""
    raw, picked = results / "raw" / "model-fp32", results / "raw" / "model-fp32-dispatch"
    meta, picked_meta = layers.step_meta(raw), layers.step_meta(picked)
    if "model" not in meta:  # not timed (a replayed archive without it has a note in its place)
        return empty()
    reference = meta["model"]["fp32"]["reference"]
    fit_s, fit_c = pd.read_csv(raw / "samples.csv"), pd.read_csv(raw / "checks.csv")
    samples = [fit_s.assign(step="fit")]
    rule = None
    if "plan" in picked_meta:
        applied = picked_meta["plan"].get("dispatch") or {}
        # the tiles the rule recorded (build facts of its fit), the ranking and times from the samples again
        rule = dispatch.fit_fp32(
            fit_s, fit_c, reference, applied.get("tiles") or {}, applied.get("blocks"), applied.get("sms")
        )
        timed, picked_checks = pd.read_csv(picked / "samples.csv"), pd.read_csv(picked / "checks.csv")
        why = dispatch.check_applied(applied, rule, pd.concat([timed, picked_checks]))
        if why:
            raise ValueError(f"{picked}: the FP32 dispatch step {why} ({raw}): run the FP32 steps again")
        samples.append(timed.assign(step="dispatch"))
    s = pd.concat(samples, ignore_index=True)
    rates = rate_table(s, reference, hardware.fp32_peak(gpu))
    changed = layers.stale({**meta.get("digests", {}), **picked_meta.get("digests", {})}, certified)
    rates["stale"] = rates.picks.isin(changed)
    if rule is None:
        return {"fp32_rates": rates, "fp32_dispatch": empty()["fp32_dispatch"]}
    return {"fp32_rates": rates, "fp32_dispatch": dispatch_table(rates, rule, picked_checks)}


def rate_table(samples: pd.DataFrame, reference: str, peak: float) -> pd.DataFrame:
    """One row per step, shape, kernel and weights (gpumm.analyse.layers.rate_table on FP32's shapes: its bounds
    are the FP32 peak's, no DRAM bound is drawn here)."""
    shapes = samples.drop_duplicates(["layer", "M", "N", "K"])[["layer", "M", "N", "K"]].copy()
    shapes["bytes"] = 4 * (shapes.M * shapes.K + shapes.K * shapes.N + shapes.M * shapes.N)
    shapes["flops"] = 2.0 * shapes.M * shapes.N * shapes.K
    shapes["tensor_us"] = shapes.flops / peak * 1e6 if peak == peak else np.nan
    shapes["dram_us"], shapes["bound_us"] = np.nan, shapes.tensor_us
    t = layers.rate_table(samples, shapes, reference)
    t["of_fp32_peak"] = t.of_tensor
    return t.sort_values("step", kind="stable").reset_index(drop=True)[RATES]  # each step's shapes in its order


def _from(rule: dict, r) -> str:
    """The fit shape whose ranking gave row ``r`` (its shape and its pick) its kernel, as M×N×K."""
    near = dispatch.origin(rule, r.M, r.N, r.K, r.picks)
    return f"{near['M']}×{near['N']}×{near['K']}"


def dispatch_table(rates: pd.DataFrame, rule: dict, checks: pd.DataFrame | None = None) -> pd.DataFrame:
    """The FP32 dispatcher at every shape the dispatch step timed, cold and warm: its pick, the fit shape that gave
    it, its share of SGEMM; the goal at the held-out shapes (the ladder's odd ones). A held-out shape where the
    pick failed its check (``checks``: the dispatch step's) was not timed: a row without a time, the goal not met."""
    d = rates[(rates.step == "dispatch") & (rates.kernel == "dispatch")]
    warm = d[d.weights == "warm"].set_index(["layer", "M", "N", "K"]).round_ratio
    rows = []
    for r in d.itertuples():
        goal, met = "", None
        if r.layer == "held-out" and r.weights == "cold":  # the ladder's regime is warm, the model steps' cold
            w = warm.get((r.layer, r.M, r.N, r.K), np.inf)
            goal, met = GOAL[0], bool(r.round_ratio >= GOAL[1] and w >= GOAL[1])
        rows.append(
            {"layer": r.layer, "M": r.M, "N": r.N, "K": r.K, "kernel": r.picks, "from": _from(rule, r)}
            | {"weights": r.weights, "median_us": r.median_us}
            | {"reference_us": r.median_us * r.of_reference, "of_reference": r.of_reference}
            | {"round_ratio": r.round_ratio, "goal": goal, "met": met}
        )
    keys = ["layer", "M", "N", "K"]
    for r in dispatch.untimed(checks, {tuple(x[k] for k in keys) for x in rows}, keys):
        if r.layer != "held-out":
            continue
        rows.append(
            {"layer": r.layer, "M": r.M, "N": r.N, "K": r.K, "kernel": r.picks, "from": _from(rule, r)}
            | {"weights": "cold", "median_us": np.nan, "reference_us": np.nan, "of_reference": np.nan}
            | {"round_ratio": np.nan, "goal": f"{GOAL[0]}: not timed, its pick {r.status} ({r.reason})", "met": False}
        )
    return pd.DataFrame(rows, columns=DISPATCH)

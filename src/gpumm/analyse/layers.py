"""The model page's tables, from the model step's raw files (issue 40): results/raw/model (every kernel on the fitted
shapes) and results/raw/model-dispatch (the dispatcher and cuBLAS BF16 on every shape, held-out ones included).

- ``model_read``: the card's read rate, each pattern of the read_stream micro-benchmark and the device copy;
- ``model_ceiling``: each layer's weight read alone (cold, timed as the kernels), its rate and its share of the
  read rate: about the most of the DRAM bound a kernel reading the weight once can be expected to reach at that size;
- ``model_shapes``: every shape with its bytes, flops, the DRAM bound (bytes over the best read rate), the tensor
  bound (flops over the BF16 peak at the run's clock), the regime the larger names, and whether it was fitted;
- ``model_rates``: each kernel's median per shape and weights (cold; warm where timed), its rate and its shares
  of the shape's bound and of cuBLAS BF16 in the same rounds;
- ``model_dispatch``: per shape, the kernel the rule picked (recomputed here from the fitted samples, and
  checked against the rule the dispatch step applied), its share of the bound and of cuBLAS BF16;
- ``model_tokens``: the whole model per step: decode (M = 1, 16) and prefill (M of 1024 and more), each layer's
  median times how many of it a token passes through, summed, dispatcher against cuBLAS BF16;
- ``model_crossover``: each layer's crossover M, where its two bounds meet.

Empty tables (their columns only) when the run did not time the model.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm.analyse import dispatch, model
from gpumm.setup import hardware

READ = ["pattern", "ok", "bytes", "ms", "bytes_per_s", "chosen"]
SHAPES = [*model.COLUMNS, "fitted", "weight_bytes", "copies", "warm", "members", "failed", "heat_s", "heat_end"]
RATES = ["layer", "M", "N", "K", "kernel", "role", "picks", "weights", "step", "n", "median_us", "q1_us", "q3_us"]
RATES += ["tflops", "gbps", "of_bound", "of_dram", "of_tensor", "of_reference", "round_ratio", "stale"]
DISPATCH = ["layer", "M", "N", "K", "fitted", "kernel", "from", "median_us", "reference_us", "of_reference"]
DISPATCH += ["round_ratio", "of_bound", "over_bound_us", "regime", "goal", "met", "ceiling", "reachable"]
CEILING = ["layer", "N", "K", "pattern", "bytes", "copies", "n", "median_us", "q1_us", "q3_us", "gbps", "of_read"]
TOKENS = ["phase", "M", "kernel", "step_us", "per_token_us", "reference_step_us", "of_reference"]
CROSSOVER = ["layer", "N", "K", "crossover_m"]
DECODE, PREFILL_FROM = (1, 16), 1024
GOALS = {"decode": ("at least 90% of the DRAM bound and at or above cuBLAS BF16 (paired)", 0.9, 1.0)}


def empty() -> dict[str, pd.DataFrame]:
    cols = {"model_read": READ, "model_ceiling": CEILING, "model_shapes": SHAPES, "model_rates": RATES}
    cols |= {"model_dispatch": DISPATCH}
    cols |= {"model_tokens": TOKENS, "model_crossover": CROSSOVER}
    return {name: pd.DataFrame(columns=c) for name, c in cols.items()}


def step_meta(folder: Path) -> dict:
    """A model step's meta.json (``layers`` or its dispatch step), {} where the step did not run."""
    return json.loads((folder / "meta.json").read_text()) if (folder / "meta.json").is_file() else {}


def tables(results: Path, gpu: dict, certified: dict[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """Every model table from a run's folder (``results/`` or an archive); empty ones where the model was not
    timed. ``certified``: the digests the run's provenance gives its variants now (``variant_digests``: a replay's
    as its archive certifies them), which ``stale`` takes over the steps' own. ValueError where the dispatch step
    applied a rule the fitted samples do not give."""
    raw, picked = results / "raw" / "model", results / "raw" / "model-dispatch"
    meta = step_meta(raw)
    if "model" not in meta:  # not timed (a replayed archive without it has a note in its place)
        return empty()
    spec = meta["model"]
    reference = spec["reference"]
    fitted_s, fitted_c = pd.read_csv(raw / "samples.csv"), pd.read_csv(raw / "checks.csv")
    read = read_table(pd.read_csv(raw / "read.csv"))
    rate = float(read.loc[read.chosen, "bytes_per_s"].iloc[0])
    peak = hardware.tensor_bf16_peak(gpu)
    samples = [fitted_s.assign(step="fitted")]
    per_shape = [pd.read_csv(raw / "shapes.csv")]
    rule = dispatch.fit(fitted_s, fitted_c, reference)
    picked_meta = step_meta(picked)
    picked_checks = None
    if "plan" in picked_meta:
        timed, picked_checks = pd.read_csv(picked / "samples.csv"), pd.read_csv(picked / "checks.csv")
        made = pd.concat([timed, picked_checks])  # every pick, timed or failed
        why = dispatch.check_applied(picked_meta["plan"].get("dispatch") or {}, rule, made)
        if why:
            raise ValueError(
                f"{picked}: the dispatch step {why} ({raw}): run the model step and the dispatch step again"
            )
        samples.append(timed.assign(step="dispatch"))
        per_shape.append(pd.read_csv(picked / "shapes.csv"))
    s = pd.concat(samples, ignore_index=True)
    shapes = shape_table(spec, pd.concat(per_shape, ignore_index=True), s, rate, peak)
    rates = rate_table(s, shapes, reference)
    changed = stale({**meta.get("digests", {}), **picked_meta.get("digests", {})}, certified)
    rates["stale"] = rates.picks.isin(changed)
    ceiling = ceiling_table(pd.read_csv(raw / "ceiling.csv") if (raw / "ceiling.csv").is_file() else None, rate)
    out = {"model_read": read, "model_ceiling": ceiling, "model_shapes": shapes, "model_rates": rates}
    out["model_dispatch"] = dispatch_table(rates, shapes, rule, picked_checks, ceiling)
    out["model_tokens"] = token_table(rates, shapes, reference)
    layers = shapes.drop_duplicates("layer")
    out["model_crossover"] = pd.DataFrame(
        {"layer": layers.layer, "N": layers.N, "K": layers.K}
        | {"crossover_m": [model.crossover(n, k, rate, peak) for n, k in zip(layers.N, layers.K)]}
    )[CROSSOVER]
    return out


def stale(digests: dict[str, str], certified: dict[str, str] | None = None) -> set[str]:
    """The kernels whose code changed since the model step timed them (the digest it recorded is not today's, or
    the catalog no longer has them): their numbers are the old code's. ``certified``: the digest a replayed
    archive certifies a kernel's numbers for now, in place of the recorded one (``python -m gpumm certify``: a
    refactor whose SASS is the archived build's)."""
    from gpumm.setup import catalog

    certified = certified or {}
    return {vid for vid, recorded in digests.items() if catalog.changed(vid, certified.get(vid, recorded))}


def read_table(read: pd.DataFrame) -> pd.DataFrame:
    """The read patterns with the one chosen: the fastest whose sums checked (the DRAM bound's rate)."""
    t = read.copy()
    ok = t[t.ok.astype(bool)]
    if ok.empty:
        raise ValueError("model: no read pattern checked: no DRAM bound")
    t["chosen"] = t.index == ok.bytes_per_s.idxmax()
    return t[READ]


def ceiling_table(samples: pd.DataFrame | None, rate: float) -> pd.DataFrame:
    """Each layer's weight read alone (the model step's ``ceiling.csv``; none in an archive made before it): the
    median of its samples, its rate, and that rate's share of the read rate, by the faster of the step's read
    patterns at that layer (one or two rows a block; an archive made before the second has only the first). A
    weight whose sums did not check has no time. An archive's note in its place (a replay of a run made before it)
    is none."""
    if samples is None or samples.empty or "us" not in samples:
        return pd.DataFrame(columns=CEILING)
    if "pattern" not in samples:
        samples = samples.assign(pattern="read_rows")
    keys = ["layer", "N", "K", "pattern", "bytes", "copies"]
    ok = samples[samples.ok.astype(bool)]
    g = ok.groupby(keys, sort=False).us
    t = pd.DataFrame({"n": g.size(), "median_us": g.median(), "q1_us": g.quantile(0.25), "q3_us": g.quantile(0.75)})
    t = samples[keys].drop_duplicates().join(t, on=keys).reset_index(drop=True)
    t["n"] = t.n.fillna(0).astype(int)
    t["gbps"] = t["bytes"] / t.median_us / 1e3
    t["of_read"] = t.gbps * 1e9 / rate
    best = t.sort_values("median_us", na_position="last").drop_duplicates("layer")  # the faster pattern per layer
    return t.loc[sorted(best.index)][CEILING].reset_index(drop=True)


def shape_table(spec: dict, per_shape: pd.DataFrame, samples: pd.DataFrame, rate: float, peak: float):
    """Every shape timed (fitted, and held out: timed by the dispatch step only) with its bounds and regime, the
    most seconds of heat rounds its steps ran before its rounds (0: none; a run made before them: 0), and why their
    heat ended (gpumm.run.layers.heat: "cap", "below", "limit", "time"; its steps' ends joined where they differ;
    '' without heat, or from a run made before the steps said)."""
    tokens = sorted(set(samples.M))
    b = model.bounds(model.shapes({**spec, "tokens": tokens}), rate, peak)
    b = b[b.set_index(["layer", "M"]).index.isin(samples.set_index(["layer", "M"]).index.unique())]
    b = b.assign(fitted=b.M.isin(spec["tokens"]), weight_bytes=model.W_BYTES * b.N * b.K)
    cold = samples[samples.weights == "cold"].groupby(["layer", "M"]).copies.max().rename("copies")
    warm = samples.groupby(["layer", "M"]).weights.agg(lambda w: "warm" in set(w)).rename("warm")
    # a step made before the heat rounds has no such column (nor its rows, beside a step that has it): none
    per_shape = per_shape.assign(heat_s=per_shape["heat_s"].fillna(0.0) if "heat_s" in per_shape else 0.0)
    ends = per_shape["heat_end"].map(lambda e: e if isinstance(e, str) else "") if "heat_end" in per_shape else ""
    per_shape = per_shape.assign(heat_end=ends)
    members = per_shape.groupby(["layer", "M"])[["members", "failed", "heat_s"]].max()
    members["heat_end"] = per_shape.groupby(["layer", "M"]).heat_end.agg(lambda e: ", ".join(sorted(set(e) - {""})))
    b = b.join(cold, on=["layer", "M"]).join(warm, on=["layer", "M"]).join(members, on=["layer", "M"])
    return b.reset_index(drop=True)[SHAPES]


def rate_table(samples: pd.DataFrame, shapes: pd.DataFrame, reference: str) -> pd.DataFrame:
    """One row per step, shape, kernel and weights: the median and quartiles, rate, shares of the bounds, and of
    the reference timed in the same rounds (ratio of medians, and the median of the per-round ratios)."""
    keys = ["step", "layer", "M", "N", "K", "kernel", "picks", "weights"]
    g = samples.groupby(keys, sort=False).us
    t = pd.DataFrame({"n": g.size(), "median_us": g.median(), "q1_us": g.quantile(0.25), "q3_us": g.quantile(0.75)})
    cols = ["layer", "M", "N", "K", "bytes", "flops", "dram_us", "tensor_us", "bound_us"]
    t = t.reset_index().merge(shapes[cols])  # a shape is its layer and M x N x K (FP32's fit shapes share a layer)
    t["tflops"], t["gbps"] = t.flops / t.median_us / 1e6, t["bytes"] / t.median_us / 1e3
    t["of_bound"], t["of_dram"], t["of_tensor"] = (t[c] / t.median_us for c in ("bound_us", "dram_us", "tensor_us"))
    at = ["step", "layer", "M", "N", "K", "weights"]
    ref = t[t.kernel == reference].set_index(at).median_us
    t["of_reference"] = [ref.get(tuple(k), np.nan) / u for k, u in zip(t[at].values, t.median_us)]
    med = dispatch.round_ratios(samples, reference, at).groupby(level=at).median().stack().rename("round_ratio")
    t = t.join(med, on=[*at, "kernel"])
    t["role"] = np.where(t.kernel == reference, "reference", np.where(t.kernel == "dispatch", "dispatcher", "kernel"))
    t["stale"] = False  # set by tables() from the steps' digests
    return t[RATES]


def _goal(m: int) -> str:
    if m in DECODE:
        return GOALS["decode"][0]
    return "at least 98% of cuBLAS BF16 (paired)" if m >= PREFILL_FROM else ""


def dispatch_table(
    rates: pd.DataFrame,
    shapes: pd.DataFrame,
    rule: dict,
    checks: pd.DataFrame | None = None,
    ceiling: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The dispatcher at every shape the dispatch step timed (cold weights): what it picked, from which fitted shape,
    its share of cuBLAS BF16 and of the bound, the µs its launch takes over the bound, and the goal of its regime
    (decode: M = 1 and 16; prefill: M of 1024 and more) with whether it is met. A shape where the pick failed its
    check (``checks``: the dispatch step's) was not timed: a row without a time, a goal there not met. ``ceiling``:
    the layer's weight read alone (``ceiling_table``), its share of the read rate; ``reachable`` (decode goals
    only): whether that share is at least the goal's 90%, so that a kernel reading the weight once could meet it at
    this size."""
    d = rates[(rates.step == "dispatch") & (rates.kernel == "dispatch") & (rates.weights == "cold")]
    of_read = {} if ceiling is None else dict(zip(ceiling.layer, ceiling.of_read))
    rows = []
    for r in d.itertuples():
        near = dispatch.origin(rule, r.M, r.N, r.K, r.picks)
        s = shapes[(shapes.layer == r.layer) & (shapes.M == r.M)].iloc[0]
        goal, met = _goal(r.M), None
        if r.M in DECODE:
            met = bool(r.of_dram >= GOALS["decode"][1] and r.round_ratio >= GOALS["decode"][2])
        elif r.M >= PREFILL_FROM:
            met = bool(r.round_ratio >= 0.98)
        rows.append(
            {"layer": r.layer, "M": r.M, "N": r.N, "K": r.K, "fitted": bool(s.fitted), "kernel": r.picks}
            | {"from": f"{near['layer']} M={near['M']}", "median_us": r.median_us}
            | {"reference_us": r.median_us * r.of_reference, "of_reference": r.of_reference}
            | {"round_ratio": r.round_ratio, "of_bound": r.of_bound, "over_bound_us": r.median_us - s.bound_us}
            | {"regime": s.regime, "goal": goal, "met": met}
            | _reach(r.layer, r.M, of_read)
        )
    for r in dispatch.untimed(checks, {(x["layer"], x["M"]) for x in rows}, ["layer", "M"]):
        at = shapes[(shapes.layer == r.layer) & (shapes.M == r.M)]
        if at.empty:
            continue
        s, near, goal = at.iloc[0], dispatch.origin(rule, r.M, r.N, r.K, r.picks), _goal(r.M)
        rows.append(
            {"layer": r.layer, "M": r.M, "N": r.N, "K": r.K, "fitted": bool(s.fitted), "kernel": r.picks}
            | {"from": f"{near['layer']} M={near['M']}", "median_us": np.nan, "reference_us": np.nan}
            | {"of_reference": np.nan, "round_ratio": np.nan, "of_bound": np.nan, "over_bound_us": np.nan}
            | {"regime": s.regime}
            | {
                "goal": f"{goal}: not timed, its pick {r.status} ({r.reason})" if goal else "",
                "met": False if goal else None,
            }
            | _reach(r.layer, r.M, of_read)
        )
    return pd.DataFrame(rows, columns=DISPATCH)


def _reach(layer: str, m: int, of_read: dict) -> dict:
    """The layer's ceiling (its weight read alone, a share of the read rate) and, at a decode goal, whether it
    reaches the goal's share of the DRAM bound (None where the run did not time it)."""
    c = of_read.get(layer, np.nan)
    reachable = bool(c >= GOALS["decode"][1]) if m in DECODE and not np.isnan(c) else None
    return {"ceiling": c, "reachable": reachable}


def token_table(rates: pd.DataFrame, shapes: pd.DataFrame, reference: str) -> pd.DataFrame:
    """The whole model per step at each M the dispatch step timed on every layer: each layer's cold median times
    its count, summed, for the dispatcher and the reference; per token = per step / M."""
    d = rates[(rates.step == "dispatch") & (rates.weights == "cold") & rates.kernel.isin(["dispatch", reference])]
    d = d.merge(shapes[["layer", "M", "count"]])
    layers = shapes.layer.nunique()
    rows = []
    for (m, kernel), g in d.groupby(["M", "kernel"]):
        if len(g) < layers or not (m in DECODE or m >= PREFILL_FROM):
            continue
        rows.append({"phase": "decode" if m in DECODE else "prefill", "M": m, "kernel": kernel})
        rows[-1] |= {"step_us": float((g.median_us * g["count"]).sum())}
        rows[-1]["per_token_us"] = rows[-1]["step_us"] / m
    t = pd.DataFrame(rows, columns=TOKENS[:5])
    ref = t[t.kernel == reference].set_index("M").step_us
    t["reference_step_us"] = t.M.map(ref)
    t["of_reference"] = t.reference_step_us / t.step_us
    return t[t.kernel != reference].reset_index(drop=True)[TOKENS]

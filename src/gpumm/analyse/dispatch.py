"""The dispatcher's rule: which kernel a shape gets, fitted on the model step's measured shapes (issue 40).

As cuBLAS's heuristics do, the rule maps a shape (M tokens against an N x K weight) to one kernel build of the
catalog, and it is computed, not typed: from the model step's cold-weight samples at the *fitted* shapes (the
configuration's ``model.tokens`` on every layer), each shape's verified members ranked by their paired cost: one
over the median over the rounds of the reference's time over theirs in the same round (the FP32 rule: the worse of
cold and warm, where B fits in the L2). A
shape, fitted or not, takes the ranking of the nearest fitted shape, nearness measured in octaves of M (counted
four times: the tokens decide the regime), N and K, and in it the first kernel whose build takes its M (the
catalog's ``MAX_M``); a shape between two fitted token counts of its layer takes the kernel ranked at both whose
worse cost of the two is least (``pick``). The held-out shapes (``model.held_out``: other token counts on every
layer) were never fitted; the dispatch step times the rule there too, and the page says which shapes are which.

Pure functions on tables, tested on the CPU.
"""

import math

import numpy as np
import pandas as pd

from gpumm.run.rule import (
    M_WEIGHT,
    block_of,
    bracket,
    distance,
    fill,
    load,
    pick,
    tile_of,
)  # the rule applied, as the dispatch step does

__all__ = [
    "FP32_M_WEIGHT",
    "FP32_REGIMES",
    "M_WEIGHT",
    "block_of",
    "blocks_of",
    "bracket",
    "check_applied",
    "distance",
    "fill",
    "fit",
    "fit_fp32",
    "load",
    "max_m_of",
    "origin",
    "paired_cost",
    "pick",
    "round_ratios",
    "same",
    "tile_of",
    "tiles_of",
    "untimed",
]

FP32_M_WEIGHT = 1.0  # the FP32 rule (model.fp32): its fit shapes have no tokens axis, every side counts alike
FP32_REGIMES = ("cold", "warm")  # its goal holds it to both: the model steps' weights cold, the ladder page's warm


def fit(
    samples: pd.DataFrame,
    checks: pd.DataFrame,
    reference: str,
    m_weight: float | None = None,
    tiles: dict[str, list[int] | None] | None = None,
    regimes: tuple[str, ...] = ("cold",),
    blocks: dict[str, dict | None] | None = None,
    sms: int | None = None,
) -> dict:
    """The rule from the model step's samples and checks: for each fitted shape, its members that passed both checks,
    best first by their cost there, the worst over ``regimes`` (the weights cold, and warm where the step timed it)
    of their paired cost against the reference in the same regime (``paired_cost``). The reference (cuBLAS BF16, or
    SGEMM for FP32) is measured beside them but never picked: the rule chooses among this project's kernels. The
    BF16 rule is fitted cold (its goals are); the FP32 rule on both regimes, as its goal holds it to both.
    ``m_weight``: how much an octave of M counts against one of N or K (default ``M_WEIGHT``: the tokens decide the
    regime). With ``tiles`` (each kernel's block tile of C, [BM, BN] or None: the FP32 rule), the rule keeps them
    and each fitted shape's costs, and a pick re-ranks the nearest shape's kernels by how fully their tiles cover
    the asked shape (``pick``); with ``blocks`` (each kernel's blocks a tile, its cluster, and whether its grid is
    one block per SM) and ``sms`` (the GPU's SMs) as well, by the work of the SM with the most blocks
    (``gpumm.run.rule.load``)."""
    timed = samples[samples.weights.isin(regimes) & (samples.kernel != "dispatch")]
    at = ["layer", "M", "N", "K", "kernel"]  # a shape is its layer and M x N x K (FP32's fit shapes share a layer)
    failed = set(map(tuple, checks[checks.status == "failed"][at].values))
    points = []
    for (layer, m, n, k), g in timed.groupby(["layer", "M", "N", "K"], sort=False):
        kernels = sorted(set(g.kernel) - {reference})
        if not kernels:
            continue
        med = paired_cost(g, reference)
        ref = [w for w in regimes if (w, reference) in med.index]
        if not ref:
            continue  # the reference failed its check here: no cost to rank by (the checks table says so)
        # a kernel's cost: its worse paired cost over the regimes the reference was timed in; a kernel not timed
        # in one of them is not ranked
        cost = {kid: max(med[(w, kid)] for w in ref) for kid in kernels if all((w, kid) in med.index for w in ref)}
        ranking = [kid for kid in sorted(cost, key=cost.get) if (layer, m, n, k, kid) not in failed]
        points.append({"layer": layer, "M": int(m), "N": int(n), "K": int(k), "ranking": ranking})
        points[-1]["cost"] = {kid: float(cost[kid]) for kid in ranking}
    if not points:
        raise ValueError("no fitted shape: the model step timed no kernel but the reference")
    rule = {"reference": reference, "m_weight": M_WEIGHT if m_weight is None else m_weight, "points": points}
    ranked = sorted({k for p in points for k in p["ranking"]})
    if tiles is not None:
        rule["tiles"] = {kid: tiles.get(kid) for kid in ranked}
    if tiles is not None and blocks is not None and sms:
        rule["blocks"] = {kid: blocks.get(kid) for kid in ranked}
        rule["sms"] = int(sms)
    if tuple(regimes) != ("cold",):
        rule["regimes"] = list(regimes)
    return rule


def round_ratios(samples: pd.DataFrame, reference: str, at: list[str]) -> pd.DataFrame:
    """The reference's time over each kernel's in the same round: a row per ``at`` and round, a column per kernel
    (all NaN where the reference was not timed). Their median is a kernel's paired share, ``round_ratio``
    (gpumm.analyse.layers), and its inverse the rule's paired cost (``paired_cost``)."""
    per = samples.pivot_table(index=[*at, "round"], columns="kernel", values="us")
    return per.rdiv(per[reference], axis=0) if reference in per else per * np.nan


def paired_cost(g: pd.DataFrame, reference: str) -> pd.Series:
    """Each kernel's cost at one shape, by regime ((weights, kernel) -> cost): the inverse of the median over the
    rounds of the reference's time over the kernel's in the same round, the statistic the goals hold a pick to
    (``round_ratio``, gpumm.analyse.layers), so the rule ranks kernels as their goals will judge them. A ratio of
    whole medians pairs one kernel's rounds with another's other rounds: where the clock moves between rounds
    (the power cap) it ranks on samples taken in different power states. The reference's own cost is 1. A kernel
    missing some of the reference's rounds in a regime has no cost there (it is not ranked); two samples of one
    kernel in one round are an error, not averaged."""
    at = ["weights", "round", "kernel"]
    twice = g[g.duplicated(at, keep=False)]
    if len(twice):
        first = twice.iloc[0]
        raise ValueError(f"{first.kernel} has two samples in round {first['round']} ({first.weights}): not paired")
    ratios = round_ratios(g, reference, ["weights"])
    if reference not in ratios:
        return pd.Series(dtype=float)  # the reference not timed here (failed its check): nothing to rank by
    ratios = ratios[ratios[reference].notna()]
    whole = ratios.notna().groupby(level="weights").all()  # every round the reference ran, the kernel ran too
    return (1.0 / ratios.groupby(level="weights").median()).where(whole).stack().dropna()


def fit_fp32(
    samples: pd.DataFrame, checks: pd.DataFrame, reference: str, tiles: dict, blocks: dict | None = None, sms=None
) -> dict:
    """The FP32 rule (``model-rule --fp32``, and fitted again by the FP32 tables to check the one applied): every
    side counted alike, each kernel's cost the worse of cold and warm, the tiles kept."""
    return fit(samples, checks, reference, FP32_M_WEIGHT, tiles, FP32_REGIMES, blocks, sms)


def same(a, b) -> bool:
    """Whether two rules are the same: equal in every key, their costs within a part in 10^9 (the same samples'
    median can differ in its last bit between two builds of pandas: the archive's machine and this one)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b, rel_tol=1e-9)
    return a == b


def _without_costs(rule: dict) -> dict:
    """``rule`` as recorded before the rules kept each fitted shape's costs."""
    return {**rule, "points": [{k: v for k, v in p.items() if k != "cost"} for p in rule["points"]]}


def check_applied(applied: dict, rule: dict, timed: pd.DataFrame) -> str:
    """'' where the rule a dispatch step applied (``applied``, from its meta.json) is ``rule``, fitted again here
    from the same samples, else why not. A rule recorded before the rules kept each fitted shape's costs is compared
    without them. Then each pick the step made (``timed``: its samples and its checks, the member ``dispatch``
    with the kernel it ``picks``, timed or failed) must be the one ``rule`` gives today: the same rule picks
    otherwise where ``pick`` has changed since the step."""
    if not same(applied, rule) and not same(applied, _without_costs(rule)):
        return "applied a rule its fit samples do not give (fitted again here)"
    kernels = sorted({k for p in rule["points"] for k in p["ranking"]})
    max_m = max_m_of(kernels)
    for r in timed[timed.kernel == "dispatch"].drop_duplicates(["M", "N", "K"]).itertuples():
        today = pick(rule, r.M, r.N, r.K, max_m)
        if today != r.picks:
            return f"picked {r.picks} at {r.M} x {r.N} x {r.K}, where today's rule picks {today}"
    return ""


def _per_build(kernels, fact) -> dict:
    """``fact`` of each kernel's build in today's catalog, None where the catalog has no such build."""
    from gpumm.setup import catalog

    def one(k):
        try:
            return fact(catalog.from_id(k))
        except catalog.CatalogError:
            return None

    return {k: one(k) for k in kernels}


def max_m_of(kernels) -> dict[str, int | None]:
    """Each kernel's MAX_M from today's catalog (None for any M, and where the catalog has no such build)."""
    from gpumm.run.layers import max_m

    return _per_build(kernels, max_m)


def tiles_of(kernels) -> dict[str, list[int] | None]:
    """Each kernel's block tile of C from today's catalog (the FP32 rule's ``tiles``; None where the catalog has
    no such build)."""
    return _per_build(kernels, tile_of)


def blocks_of(kernels) -> dict[str, dict | None]:
    """Each kernel's blocks per tile and grid from today's catalog (the FP32 rule's ``blocks``; None where the
    catalog has no such build)."""
    return _per_build(kernels, block_of)


def untimed(checks: pd.DataFrame | None, timed: set, keys: list[str]):
    """The dispatch step's check rows (``checks``) of the shapes whose pick failed its check, each shape once by
    ``keys``, leaving out those in ``timed`` (tuples of ``keys``): the shapes a dispatch table has no time for."""
    if checks is None:
        return []
    bad = checks[(checks.kernel == "dispatch") & (checks.status != "ok")].drop_duplicates(keys)
    return [r for r in bad.itertuples() if tuple(getattr(r, k) for k in keys) not in timed]


def origin(rule: dict, M: int, N: int, K: int, kernel: str) -> dict:
    """The fitted shape whose ranking gave ``kernel`` to M x N x K: the nearest one that ranks it (a pick falls
    through to a further shape where no kernel of the nearest takes M); between two fitted token counts
    (``bracket``), the two as one shape whose M is their range ("1024–4096") where both rank it, the lower where
    only it does (a build that cannot take the upper's M)."""
    ends = bracket(rule, M, N, K)
    if ends:
        lo, hi = ends
        if kernel in lo["ranking"] and kernel in hi["ranking"]:
            return {**lo, "M": f"{lo['M']}–{hi['M']}"}
        if kernel in lo["ranking"]:
            return lo
    ranked = [p for p in sorted(rule["points"], key=lambda p: distance(rule, p, M, N, K)) if kernel in p["ranking"]]
    if not ranked:
        raise ValueError(f"no fitted shape of the rule ranks {kernel}")
    return ranked[0]

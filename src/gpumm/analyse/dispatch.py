"""The dispatcher's rule: which kernel a shape gets, fitted on the model step's measured shapes (issue 40).

As cuBLAS's heuristics do, the rule maps a shape (M tokens against an N x K weight) to one kernel build of the
catalog, and it is computed, not typed: from the model step's cold-weight samples at the *fitted* shapes (the
configuration's ``model.tokens`` on every layer), each shape's verified members ranked by their median time. A
shape, fitted or not, takes the ranking of the nearest fitted shape, nearness measured in octaves of M (counted
four times: the tokens decide the regime), N and K, and in it the first kernel whose build takes its M (the
catalog's ``MAX_M``). The held-out shapes (``model.held_out``: other token counts on every layer) were never
fitted; the dispatch step times the rule there too, and the page says which shapes are which.

Pure functions on tables, tested on the CPU.
"""

import math

import pandas as pd

M_WEIGHT = 4.0  # an octave of M counts as much as four of N or K


def fit(samples: pd.DataFrame, checks: pd.DataFrame, reference: str) -> dict:
    """The rule from the model step's samples (cold weights) and checks: for each fitted shape, its members that
    passed both checks, fastest first by median. The reference (cuBLAS BF16) is measured beside them but never
    picked: the rule chooses among this project's kernels."""
    cold = samples[(samples.weights == "cold") & (samples.kernel != reference) & (samples.kernel != "dispatch")]
    failed = set(map(tuple, checks[checks.status == "failed"][["layer", "M", "kernel"]].values))
    points = []
    for (layer, m, n, k), g in cold.groupby(["layer", "M", "N", "K"], sort=False):
        med = g.groupby("kernel").us.median()
        ranking = [kid for kid in med.sort_values().index if (layer, m, kid) not in failed]
        points.append({"layer": layer, "M": int(m), "N": int(n), "K": int(k), "ranking": ranking})
    if not points:
        raise ValueError("no fitted shape: the model step timed no kernel but the reference")
    return {"reference": reference, "m_weight": M_WEIGHT, "points": points}


def distance(rule: dict, point: dict, M: int, N: int, K: int) -> float:
    """How far a fitted shape is from M x N x K: octaves of M (times the rule's weight), of N and of K."""
    w = rule.get("m_weight", M_WEIGHT)
    return w * abs(math.log2(M / point["M"])) + abs(math.log2(N / point["N"])) + abs(math.log2(K / point["K"]))


def pick(rule: dict, M: int, N: int, K: int, max_m: dict[str, int | None]) -> str:
    """The kernel the rule gives M x N x K: the nearest fitted shape's fastest kernel that takes M tokens
    (``max_m``: each kernel's MAX_M, None for any), else the next nearest shape's. ValueError if none takes it."""
    for point in sorted(rule["points"], key=lambda p: distance(rule, p, M, N, K)):
        for kid in point["ranking"]:
            if kid in max_m and (max_m[kid] is None or M <= max_m[kid]):
                return kid
    raise ValueError(f"no kernel of the rule takes M = {M} (N = {N}, K = {K})")


def table(rule: dict, shapes: pd.DataFrame, max_m: dict[str, int | None]) -> pd.DataFrame:
    """``shapes`` (layer, M, N, K, and whether fitted) with the kernel the rule picks for each and the fitted shape
    it comes from."""
    rows = []
    for s in shapes.itertuples():
        near = min(rule["points"], key=lambda p: distance(rule, p, s.M, s.N, s.K))
        rows.append({**s._asdict(), "kernel": pick(rule, s.M, s.N, s.K, max_m)})
        rows[-1]["from"] = f"{near['layer']} M={near['M']}"
    return pd.DataFrame(rows).drop(columns="Index")

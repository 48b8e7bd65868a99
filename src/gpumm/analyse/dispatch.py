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

import pandas as pd

from gpumm.run.layers import M_WEIGHT, distance, pick  # the rule applied, as the dispatch step applies it

__all__ = ["M_WEIGHT", "distance", "fit", "origin", "pick"]


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


def origin(rule: dict, M: int, N: int, K: int, kernel: str) -> dict:
    """The fitted shape whose ranking gave ``kernel`` to M x N x K: the nearest one that ranks it (a pick falls
    through to a further shape where no kernel of the nearest takes M)."""
    ranked = [p for p in sorted(rule["points"], key=lambda p: distance(rule, p, M, N, K)) if kernel in p["ranking"]]
    if not ranked:
        raise ValueError(f"no fitted shape of the rule ranks {kernel}")
    return ranked[0]

"""Which kernels race which, at which sizes: the paired step's plan, from the config's ``paired`` section and the
catalog, and each family's build that races at a shape (its fastest verified one in this run's own sets).

Read by the workflow when it plans the run (no GPU needed) and by :mod:`gpumm.run.paired`.
"""

import math

import pandas as pd

from gpumm.setup import catalog

SETTINGS = {  # the config's paired section, its defaults (workflow/schemas/config.schema.yaml documents each)
    "block_ms": 3.0,
    "sustained_after_s": 0.5,
    "min_rounds": 10,
    "max_rounds": 400,
    "max_s": 3.0,
    "ci_points": 0.5,
    "energy_s": 0.2,
    "settle_s": 0.05,
    "max_launch_ms": 40.0,
    "min_share": 0.5,
}


def race_families(families: dict, reference: str, down_to: str | None = None, rungs_of: str | None = None) -> list:
    """The families a race's group holds, in catalog order, the reference last.

    By default the rungs below ``reference``: its ``rung_below``, that one's, and so on down to ``down_to`` (or the
    first rung), with the families whose rung below is one of them (a side branch, as bf16_cluster beside
    bf16_pingpong). With ``rungs_of`` (an operation): every GPU family of that operation instead (the transposes,
    whose ceiling, the copy kernel, is not a rung of theirs)."""
    if reference not in families:
        return []
    if rungs_of:
        rungs = {f for f, x in families.items() if x.get("op", "matmul") == rungs_of and x.get("kind") != "cpu"}
    else:
        chain, f = [], families[reference].get("rung_below")
        while f and f in families and f not in chain:
            chain.append(f)
            if f == down_to:
                break
            f = families[f].get("rung_below")
        op = families[reference].get("op", "matmul")
        side = {
            f
            for f, x in families.items()
            if x.get("rung_below") in chain
            and f != reference
            and x.get("op", "matmul") == op
            and x.get("kind") != "cpu"
        }
        rungs = set(chain) | side
    return [f for f in families if f in rungs and f != reference] + [reference]


def plan(config: dict, variants: dict, families: dict | None = None) -> dict:
    """The step's plan from the config's ``paired`` section and the run's variants (id -> Variant): for each race,
    its sizes and its families (each with its builds in this run, its rung below and its role). A race whose
    reference is not in the run is left out; so is a family with no build in the run."""
    families = families if families is not None else catalog.load()
    section = config.get("paired", {}) or {}
    races = []
    if not section.get("enabled", True):
        return {"races": races}
    by_family: dict[str, list[str]] = {}
    for v in variants.values():
        by_family.setdefault(v.family, []).append(v.id)
    for name, race in (section.get("races") or {}).items():
        ref = race["reference"]
        if ref not in by_family:
            continue
        fams = race_families(families, ref, race.get("down_to"), race.get("rungs_of"))
        members = [
            {
                "family": f,
                "role": "reference" if f == ref else "rung",
                "rung_below": families[f].get("rung_below") or "",
                "variants": by_family[f],
            }
            for f in fams
            if f in by_family
        ]
        if len(members) > 1:
            races.append({"race": name, "reference": ref, "sizes": list(race["sizes"]), "members": members})
    return {"races": races}


def inputs_of(p: dict) -> list[str]:
    """Every variant a plan reads (its samples choose each family's build; its binary is launched)."""
    return sorted({v for r in p["races"] for m in r["members"] for v in m["variants"]})


def square(op: str, n: int) -> tuple[int, int, int]:
    """A race's square shape at size n: n³ for a product, n × n (K = 1) for a transpose or copy."""
    return (n, n, 1) if op in ("transpose", "copy") else (n, n, n)


def best_build(samples: dict[str, pd.DataFrame], ids: list[str], shape) -> tuple[str | None, float, str]:
    """(the fastest verified build among ``ids`` at ``shape`` in device memory, its median ms, why none) from each
    build's samples of this run."""
    M, N, K = shape
    best, best_ms, why = None, math.inf, "not measured at this shape in this run"
    for vid in ids:
        s = samples.get(vid)
        if s is None or s.empty or "M" not in s:
            continue
        s = s[(s.M == M) & (s.N == N) & (s.K == K) & (s.memory_mode == "device") & (s.timed == "kernel")]
        ok = s[s.status == "ok"]
        if ok.empty:
            if len(s):
                why = f"{vid}: {s.status.iloc[0]} at this shape ({s.reason.iloc[0]})"
            continue
        ms = float(ok.ms.median())
        if ms < best_ms:
            best, best_ms = vid, ms
    return best, best_ms, why

"""How this run's numbers were taken, written from the run's own records (never from today's code).

Every sentence here is computed from the tables and the provenance of the run the report shows: the timing
methods and batches its samples record, its stopping rule as its configuration set it and why its sets
stopped, its warm-ups, its checks, the sizes and regimes of its profiles, its clocks. A page that cites a
method therefore describes the run it shows, archived or measured; the run page gathers them all.
"""

import pandas as pd

from gpumm.report import labels


def _ok(samples: pd.DataFrame) -> pd.DataFrame:
    return samples[samples.status == "ok"] if "status" in samples else samples


def _config(tables: dict) -> dict:
    return (tables.get("source") or {}).get("config") or {}


def floor_us(tables: dict) -> float:
    oh = tables.get("overhead", pd.DataFrame())
    r = oh[(oh.what == "empty kernel") & (oh.method == "graph")] if "what" in oh else pd.DataFrame()
    return float(r.median_us.iloc[0]) if len(r) else float("nan")


def copy_size(tables: dict) -> str:
    """The bytes of one copy of the run's bandwidth study, as its configuration set them ("1 GiB"), or "" where
    the run does not record them."""
    b = (_config(tables).get("bandwidth") or {}).get("bytes")
    if not b:
        return ""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return f"{b / (1 << shift):g} {unit}"
    return f"{b:,} bytes"


def timing(tables: dict) -> str:
    """The timing method of the run's kernel sets: batching, its floor, the stopping rule and how sets stopped."""
    s = _ok(tables["samples"])
    k = s[s.timed == "kernel"] if "timed" in s else s
    parts = []
    methods = k["method"].dropna().value_counts() if "method" in k else pd.Series(dtype=int)
    if "graph" in methods:
        batch = k[k.method == "graph"].batch.dropna()
        parts.append(
            "Kernel times are per launch, from back-to-back launches in CUDA graphs between one pair of events "
            f"(each sample at least 2 ms: {int(batch.min())} to {int(batch.max())} launches a sample)"
        )
    elif len(methods):
        parts.append(f"Kernel times were taken with the {', '.join(methods.index)} method")
    else:
        parts.append("Kernel times were taken one launch per event pair (before batched timing)")
    us = floor_us(tables)
    if us == us:
        parts.append(f"the floor of that method, an empty kernel, is {us:.2f} µs a launch on this GPU")
    sentence = "; ".join(parts) + "."
    t = _config(tables).get("timing") or {}
    if "stop" in s and s["stop"].notna().any() and "min_samples" in t:
        sets = s.drop_duplicates(["variant", "M", "N", "K", "memory_mode", "timed"])
        stops = sets["stop"].value_counts()
        counts = ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in stops.items())
        sentence += (
            f" Each set took at least {t['min_samples']} samples{_long(t)}, then stopped once its interquartile "
            f"range was at most {t['max_noise_pct']:g}% of its median, at {t['max_samples']} samples, or after "
            f"{t['timeout_s']:g} s of sampling ({counts}); up to {t.get('warmups', 3)} warm-ups came first, none "
            f"once the checks' launches had run the kernel for {t.get('warmup_s', 0.05):g} s."
        )
    elif "repeat" in s and len(s):
        per = s.groupby(["variant", "M", "N", "K", "memory_mode", "timed"]).size()
        sentence += f" Each set took {int(per.median())} samples (a fixed count)."
    return sentence


def _long(t: dict) -> str:
    """The lowered minimum of a set of long samples, when the run's config had one."""
    long_s, least = t.get("long_sample_s"), t.get("long_min_samples")
    if long_s is None or least is None or least >= t["min_samples"]:
        return ""
    return f" ({least} when one sample, a single launch, lasted {long_s:g} s or more)"


def checks(tables: dict) -> str:
    """The checks made before any timing, counted from the verification table."""
    v = tables.get("verification", pd.DataFrame())
    if v.empty or "exact_check" not in v:
        return ""
    exact = (v.exact_check == "ok").sum()
    failed = (v.status == "failed").sum()
    rel = pd.to_numeric(v.max_rel_err, errors="coerce")
    tol = pd.to_numeric(v.tolerance, errors="coerce").dropna()
    worst = f" (the largest error {rel.max():.2g}, against a tolerance of {tol.max():.2g})" if tol.size else ""
    return (
        f"Before any timing, each of the {len(v):,} variant × shape × memory-mode sets was checked with its output "
        f"poisoned first: {exact:,} by the exact check (small integers, equal to the float64 product bit for bit), "
        f"the matrix multiplies also by the rounding check{worst}; {failed} failed"
        + (" and were not timed." if failed else ".")
    )


def profiles(tables: dict) -> str:
    """The sizes and regimes of the run's Nsight Compute profiles."""
    ps = tables.get("profile_summary", pd.DataFrame())
    if ps.empty or "size" not in ps:
        return "This run has no Nsight Compute profiles."
    by = ps.groupby(["size", "regime"]).variant.nunique().reset_index()
    parts = [f"{int(r.variant)} variants at {int(r.size)}³ ({r.regime} regime)" for r in by.itertuples()]
    return (
        "Nsight Compute profiled one product of each variant: " + "; ".join(parts) + ". In the DRAM regime the "
        "three matrices are at least 3× the L2, so the counters show device-memory traffic; in the cached regime "
        "they fit in the L2."
    )


def clocks(tables: dict) -> str:
    """Which sets ran below the maximum SM clock (NVML, read during every timed set)."""
    s = tables.get("summary", pd.DataFrame())
    if "throttled" not in s:
        return "This run did not record clocks."
    t = s[s.throttled.astype(str).str.lower() == "true"]
    if t.empty:
        return "Every timed set ran at the maximum SM clock (NVML, read during each set)."
    names = "; ".join(
        sorted({f"{r.variant} at {r.M}×{r.N}×{r.K} ({r.memory_mode}, {r.timed})" for r in t.itertuples()})
    )
    return (
        f"{len(t)} timed sets ran below 98% of the maximum SM clock at some point (lowest "
        f"{t.sm_clock_min_mhz.min():.0f} MHz) and are marked throttled: {names}."
    )


def residency() -> str:
    return (
        "Inputs stay resident between launches, as in the sources, so sizes whose matrices fit in the L2 run from "
        "the cache."
    )


def throttled_among(tables: dict, df: pd.DataFrame) -> str:
    """A note for a table: which of its rows are throttled sets ('' when none are, or the table has no keys)."""
    s = tables.get("summary", pd.DataFrame())
    keys = [k for k in ("variant", "M", "N", "K", "memory_mode", "timed") if k in df and k in s]
    if "throttled" not in s or len(keys) < 2:
        return ""
    t = s[s.throttled.astype(str).str.lower() == "true"][keys].drop_duplicates()
    hit = df[keys].merge(t, on=keys) if len(t) else t
    if hit.empty:
        return ""
    what = "; ".join(sorted({f"{r.variant} at {r.M}" for r in hit.itertuples()}))
    return f"Throttled (SM clock below 98% of its maximum during the set): {what}."


def all_notes(tables: dict) -> list[tuple[str, str]]:
    """(heading, text) of every method note, for the run page."""
    return [
        ("Timing", timing(tables) + " " + residency()),
        ("Checks", checks(tables)),
        ("Profiles", profiles(tables)),
        ("Clocks", clocks(tables)),
        ("Units", labels.UNITS_NOTE),
    ]

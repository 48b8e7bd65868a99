"""How this run's numbers were taken, written from the run's own records (never from today's code).

Every sentence here is computed from the tables and the provenance of the run the report shows: the timing
methods and batches its samples record, its stopping rule as its configuration set it and why its sets
stopped, its warm-ups, its checks, the sizes and regimes of its profiles, its clocks. A page that cites a
method therefore describes the run it shows, archived or measured; the run page gathers them all.
"""

import pandas as pd

from gpumm.report import labels
from gpumm.setup import regimes


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


KINDS = {  # a set's kind of timing, as the samples record it (``timed``)
    "kernel": "kernel",
    "prepare": "preparation (the transpose of B)",
    "warm": "warm managed",
    "cold": "cold managed",
    "end_to_end": "end-to-end",
}


def timing(tables: dict) -> str:
    """The timing method of the run's sets, kind by kind, as their samples record it: batching and its floor, how
    long a sample lasted, the stopping rule and how the sets stopped."""
    s = _ok(tables["samples"])
    if "timed" not in s or s.empty:
        return "This run recorded no timed samples."
    parts = []
    for kind, words in KINDS.items():
        k = s[s.timed == kind]
        if k.empty:
            continue
        graph = k[k["method"] == "graph"] if "method" in k else k.iloc[:0]
        if len(graph):
            dur = graph.ms * graph.batch
            single = int((graph.batch == 1).sum())
            parts.append(
                f"{words} sets: back-to-back launches in CUDA graphs between one pair of events, "
                f"{int(graph.batch.min()):,} to {int(graph.batch.max()):,} launches a sample, the shortest sample "
                f"{dur.min():.3g} ms" + (f" ({single:,} of {len(graph):,} samples a single launch)" if single else "")
            )
        else:
            how = "a host clock (the CPU baselines)" if set(k.get("method", [])) == {"host"} else "one pair of events"
            parts.append(f"{words} sets: one launch per sample, timed with {how}")
    sentence = "Times are per launch. " + "; ".join(parts) + "."
    us = floor_us(tables)
    if us == us:
        sentence += f" The floor of batched timing, an empty kernel, is {us:.2f} µs a launch on this GPU."
    t = _config(tables).get("timing") or {}
    if "stop" in s and s["stop"].notna().any() and "min_samples" in t:
        sets = s.drop_duplicates(["variant", "M", "N", "K", "memory_mode", "timed"])
        by = sets.groupby("timed")["stop"].value_counts()
        counts = "; ".join(
            f"{KINDS.get(kind, kind)}: " + ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in by[kind].items())
            for kind in KINDS
            if kind in by.index.get_level_values(0)
        )
        cold = t.get("cold_max_samples")
        sentence += (
            f" Each of the {len(sets):,} sets took at least {t['min_samples']} samples{_long(t)}, then stopped once "
            f"its interquartile range was at most {t['max_noise_pct']:g}% of its median, at {t['max_samples']} samples "
            + (f"({cold} for a cold set) " if cold else "")
            + f"or after {t['timeout_s']:g} s of sampling ({counts}); up to {t.get('warmups', 3)} warm-ups came "
            f"first, none once the checks' launches had run the kernel for {t.get('warmup_s', 0.05):g} s."
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
    exact = int((v.exact_check == "ok").sum())
    failed = int((v.status == "failed").sum())
    skipped = v[v.status == "skipped"]
    rel = pd.to_numeric(v.max_rel_err, errors="coerce")
    tol = pd.to_numeric(v.tolerance, errors="coerce").dropna()
    worst = f" (the largest error {rel.max():.2g}, against a tolerance of {tol.max():.2g})" if tol.size else ""
    text = (
        f"Of the {len(v):,} variant × shape × memory-mode sets of this run, {len(v) - len(skipped):,} were checked "
        f"before any timing, with their output poisoned first: {exact:,} by the exact check (small integers, equal "
        f"to the float64 product bit for bit), the matrix multiplies also by the rounding check{worst}; {failed} "
        + ("failed and were not timed." if failed != 1 else "failed and was not timed.")
    )
    if len(skipped):
        reasons = skipped.reason.fillna("").value_counts()
        text += (
            f" {len(skipped):,} were skipped, neither checked nor timed ("
            + "; ".join(f"{n:,}: {r or 'no reason recorded'}" for r, n in reasons.items())
            + ")."
        )
    return text


def profiles(tables: dict) -> str:
    """The sizes and regimes of the run's Nsight Compute profiles."""
    ps = tables.get("profile_summary", pd.DataFrame())
    if ps.empty or "size" not in ps:
        return "This run has no Nsight Compute profiles."
    v = tables.get("variants", pd.DataFrame())
    op = dict(zip(v.variant, v.op)) if {"variant", "op"} <= set(v.columns) else {}
    ps = ps.assign(op=ps.variant.map(lambda x: op.get(x, "matmul")))
    parts = []
    for (size, regime), g in ps.groupby(["size", "regime"]):
        what = ", ".join(
            f"{n} {'product' if o == 'matmul' else o}{'s' if n != 1 else ''}"
            for o, n in g.drop_duplicates("variant").op.value_counts().items()
        )
        parts.append(f"at {int(size)} ({regime} regime): {what}")
    return (
        "Nsight Compute profiled one launch of each variant at each of its profile sizes ("
        + "; ".join(parts)
        + f"). In the DRAM regime the matrices a launch touches are at least {regimes.DRAM_FACTOR}× the L2, so the "
        f"counters show device-memory traffic; in the cached regime they fit in {regimes.CACHED_FACTOR:.0%} of it; "
        "in between, mixed, they show neither alone."
    )


def clocks(tables: dict) -> str:
    """How the SM clock stood during the timed sets (NVML, read during every set), and which ran throttled."""
    s = tables.get("summary", pd.DataFrame())
    if "throttled" not in s or "sm_clock_min_mhz" not in s:
        return "This run did not record clocks."
    s = s[s.status == "ok"]
    read = s[s.sm_clock_min_mhz.notna()]
    unread = len(s) - len(read)
    top = read.sm_clock_min_mhz.max() if len(read) else float("nan")
    below = read[read.sm_clock_min_mhz < top]
    why = []
    if "kind" not in s:  # a summary without the kind of each variant: say both
        why = [f"{unread:,}: CPU baselines and sets of runs that predate it"] if unread else []
    else:
        cpu = int(((s.kind == "cpu") & s.sm_clock_min_mhz.isna()).sum())
        if cpu:
            base = "CPU baselines" if cpu != 1 else "CPU baseline"
            why.append(f"{cpu:,}: {base}" if cpu == unread else f"{cpu:,} {base}")
        if unread - cpu > 0:
            old = unread - cpu
            why.append(f"{old:,} set{'s' if old != 1 else ''} of runs that predate the record")
    text = (
        f"The SM clock was read during {len(read):,} of the {len(s):,} timed sets"
        + (f" (not during {', '.join(why)})" if why else "")
        + f"; its lowest reading was the maximum, {top:.0f} MHz, in {len(read) - len(below):,} of them"
    )
    if len(below):
        text += f", and lower in {len(below):,} (down to {below.sm_clock_min_mhz.min():.0f} MHz)"
    t = s[s.throttled.astype(str).str.lower() == "true"]
    if t.empty:
        return text + "; no slowdown reason touched any set (none throttled)."
    keys = sorted({(r.variant, int(r.M), int(r.N), int(r.K), r.memory_mode, r.timed) for r in t.itertuples()})
    names = "; ".join(f"{v} at {m}×{n}×{k} ({mode}, {timed})" for v, m, n, k, mode, timed in keys)  # sizes in order
    sets = "1 set" if len(t) == 1 else f"{len(t)} sets"
    return text + f". {sets} ran throttled (what that means: the power note below): {names}."


def power_note(tables: dict) -> str:
    """What throttled means, how many sets ran at the cap, and how the races' comparisons were made."""
    from gpumm.analyse import paired, power

    s = tables.get("summary", pd.DataFrame())
    if "throttled" not in s:
        return ""
    c = power.cap_counts(s)
    text = (
        "A set is throttled when any slowdown reason touched it: the power cap (NVML's clock-event reason, or its "
        "violation counter, which counts the nanoseconds the power policy held the clock down and so sees the cap's "
        "fast swings that a clock polled every few milliseconds misses), a thermal or hardware slowdown, or an SM "
        f"clock below 98% of the maximum. Of the {c['sets']:,} timed sets with clocks, {c['throttled']:,} ran "
        f"throttled: {c['power_cap']:,} by the power cap ({c['at_cap']:,} at the cap for half the set or more), "
        f"{c['thermal']:,} by a thermal limit, {c['clock_only']:,} by a low clock alone. Every set records its board "
        "power (mean and peak of NVML's 20 ms power samples, for sets of 0.1 s or more), the energy counter's change, "
        "and the share of its time the power and thermal policies held the clock down."
    )
    v = tables.get("verdicts", pd.DataFrame())
    if v is not None and len(v):
        sizes = "; ".join(
            f"{race} at {', '.join(str(int(n)) for n in sorted(g.M.unique()))}" for race, g in v.groupby("race")
        )
        paired_n = int((v.regime == paired.PAIRED_REGIME).sum())
        text += (
            f" The races' comparisons were paired ({sizes}): each rung and its reference timed in alternation, rounds "
            "of one short block of every kernel back to back, the order reversed every other round, after the card had "
            "reached its sustained state; each share is the geometric mean of the rounds' ratios, its 95% interval "
            f"that of ten batches of consecutive rounds ({paired_n} kernels and sizes). A rung below half its "
            "reference's rate was timed alone for its power only, and its shares, like every share at other sizes, "
            "come from the two kernels' own sets, marked on the page where one set ran throttled and the other not."
        )
    return text


def residency() -> str:
    return (
        "Inputs stay resident between launches, as in the sources, so sizes whose matrices fit in the L2 run from "
        "the cache."
    )


def throttled_among(tables: dict, df: pd.DataFrame) -> str:
    """A note for a table: which of its rows are throttled sets ('' when none are, or the table has no keys)."""
    s = tables.get("summary", pd.DataFrame())
    keys = [k for k in ("variant", "M", "N", "K", "memory_mode", "timed") if k in df and k in s]
    if "throttled" not in s or "variant" not in keys or len(keys) < 2:  # a shape alone names no set
        return ""
    t = s[s.throttled.astype(str).str.lower() == "true"][keys].drop_duplicates()
    hit = df[keys].merge(t, on=keys) if len(t) else t
    if hit.empty:
        return ""
    what = "; ".join(sorted({f"{r.variant} at {r.M}" for r in hit.itertuples()}))
    return f"Throttled sets in this table (a slowdown reason touched the set: run page, Power): {what}."


def all_notes(tables: dict) -> list[tuple[str, str]]:
    """(heading, text) of every method note, for the run page."""
    return [
        ("Timing", timing(tables) + " " + residency()),
        ("Checks", checks(tables)),
        ("Profiles", profiles(tables)),
        ("Clocks", clocks(tables)),
        ("Power and paired comparisons", power_note(tables)),
        ("Units", labels.UNITS_NOTE),
    ]

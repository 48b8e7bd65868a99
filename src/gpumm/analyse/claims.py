"""The sources' claims, tested on the run (issue 28): every statement of a claim, at every size and kernel the source
makes it for, compared on unrounded values, with one verdict per statement that says where it holds and where not:
seed 001's S1-C1 and S1-C2, seed 002's transpose (S2-TR), CPU against GPU (S2-CPU) and the naive kernel's ratio
(S2-CGMA).

Two tables: ``cases`` (one row per statement, kernel and size: the value, the threshold, whether it holds) and
``verdicts`` (one row per statement: how it was tested and the verdict). Every page and the index read the verdicts,
so they count the same way: a statement is counted once, as holding (at every case tested), holding in part (at some),
or not holding (at none). Pure functions on the run's tables, tested on the CPU.
"""

import math

import pandas as pd

from gpumm.analyse import power

CASE_COLUMNS = ["claim", "part", "statement", "variant", "size", "value", "unit", "rule", "threshold", "holds", "note"]
VERDICT_COLUMNS = ["claim", "part", "statement", "test", "cases", "held", "verdict", "detail", "page", "anchor"]
HOLDS, IN_PART, NOT, UNTESTED = "holds", "holds in part", "does not hold", "not tested"
SIX = ["naive", "tiled_tile16", "no_bank_conflict_tile16", "outer_product", "unrolled", "cublas"]  # seed 001's
ABOUT_HALF = (0.35, 0.65)  # 'about half' of cuBLAS: the source's 4.07 of 8.95 TFLOPS is 45%
SAME_WITHIN = 0.10  # 'unified matches manual': warm managed time within 10% of device memory's


def medians(summary: pd.DataFrame, mode: str, timed: str, value: str = "median_ms") -> pd.DataFrame:
    """``value`` (the median time by default) of the square power-of-two sizes: a column per variant, a row per size."""
    s = summary[(summary.M == summary.N) & (summary.N == summary.K) & (summary.memory_mode == mode)]
    s = s[(s.timed == timed) & (s.status == "ok") & s.M.map(lambda n: n > 0 and int(n) & (int(n) - 1) == 0)]
    return s.pivot_table(index="M", columns="variant", values=value)


def _holds(value: float, rule: str, threshold) -> bool:
    """Whether ``value`` passes ``rule`` against ``threshold`` (unrounded): '>' and '<' strict, 'within' a range."""
    if value != value:
        return False
    if rule == ">":
        return value > threshold
    if rule == "<":
        return value < threshold
    lo, hi = threshold
    return lo <= value <= hi


def _case(claim, part, statement, variant, size, value, unit, rule, threshold, note="") -> dict:
    return {
        "claim": claim,
        "part": part,
        "statement": statement,
        "variant": variant,
        "size": size,
        "value": value,
        "unit": unit,
        "rule": rule,
        "threshold": threshold if rule != "within" else f"{threshold[0]}..{threshold[1]}",
        "holds": _holds(value, rule, threshold),
        "note": note,
    }


# How each statement is tested, in words (the page shows it under the statement).
TESTS = {
    ("S1-C1", "a"): "unrolled's rate over naive's at the largest square size where naive, unrolled and cuBLAS all "
    "ran (the source: at the largest size), device memory; holds above 15×",
    ("S1-C1", "b"): "unrolled's rate over cuBLAS's at that size; 'about half' read as 35% to 65% (the source: 45%)",
    ("S1-C2", "a1"): "cuBLAS's kernel time in zero-copy (UVA) memory over its time in device memory, at every square "
    "size both ran (the source: over its figure's sizes); holds above 30×",
    ("S1-C2", "a2"): "the same for the most optimised kernel, unrolled; holds above 50×",
    ("S1-C2", "b"): "each of the six kernels' warm managed (unified) time over its device-memory time at the largest "
    "size both ran; holds within 10%",
    ("S1-C2", "c1"): "each of the six kernels' rate at 1024 over the lower of its rates at 512 and 2048, device "
    "memory; a dip is a ratio below 0.95 (5% under both neighbours: a smaller step is within the sets' noise)",
    ("S1-C2", "c2"): "the same in zero-copy (UVA) memory",
    ("S1-C2", "c3"): "whether the shared memory a block uses changes with the matrix size (the compiler's report)",
    ("S2-TR", "a"): "the padded transpose's speed-up over the naive one at every square size from 16 to 1024 (the "
    "source's sizes), device memory; 'about 10×' read as 7× to 14× (within a factor of √2)",
    ("S2-TR", "b"): "at each size from 32 to 1024, the padded transpose's speed-up over the naive one against its "
    "speed-up at half that size; holds where it is larger",
    ("S2-CPU", "a"): "at every small square size both ran, 16 to 128 (the lower half, on a log scale, of the source's "
    "16 to 1024), the serial CPU loop's time over the fastest GPU variant's time end to end (copies in and out "
    "included); the CPU wins below 1",
    ("S2-CGMA", "a"): "the naive kernel's flops per byte of its counted inner loop (2 flops per multiply-add over "
    "its global loads of 4 bytes); 'about 1/4' read as 0.2 to 0.3",
    ("S2-CGMA", "b"): "what bounds the naive kernel on the roofline at the DRAM-regime profile size (the lowest roof "
    "it reaches 60% of, else the counters' reason); holds where it is DRAM",
}
STATEMENTS = {
    ("S1-C1", "a"): "the most optimised kernel is over 15× the naive one at the largest size",
    ("S1-C1", "b"): "it reaches about half of cuBLAS",
    ("S1-C2", "a1"): "even cuBLAS is over 30× slower under UVA than with manual memory",
    ("S1-C2", "a2"): "the most optimised kernel is over 50× slower under UVA",
    ("S1-C2", "b"): "unified memory matches manual at the top size",
    ("S1-C2", "c1"): "a dip at 1024 with manual memory",
    ("S1-C2", "c2"): "a dip at 1024 under UVA",
    ("S1-C2", "c3"): "the dip is explained by the shared memory per block",
    ("S2-TR", "a"): "the optimised (padded) transpose is about 10× faster than the naive one",
    ("S2-TR", "b"): "the speed-up grows with size",
    ("S2-CPU", "a"): "the CPU wins for small matrices",
    ("S2-CGMA", "a"): "the naive kernel does about 1/4 flop per byte",
    ("S2-CGMA", "b"): "so it is bandwidth bound",
}
WHERE = {
    "S1-C1": ("seed001", "S1-C1"),
    "S1-C2": ("memory_modes", "S1-C2"),
    "S2-TR": ("transpose", "S2-TR"),
    "S2-CPU": ("seed002", "S2-CPU"),
    "S2-CGMA": ("seed002", "S2-CGMA"),
}
BY_SIZE = {("S1-C2", "a1"), ("S1-C2", "a2"), ("S2-TR", "a"), ("S2-TR", "b"), ("S2-CPU", "a")}
ABOUT_10X = (7.0, 14.0)  # 'about 10x': within a factor of √2
DIP = 0.95  # a dip at 1024: its rate at least 5% under both neighbours
SMALL = 128  # 'small matrices' (seed 002, sizes 16 to 1024): up to 128, the lower half on a log scale
ABOUT_QUARTER = (
    0.2,
    0.3,
)  # 'about 1/4 flop per byte'  # tested size by size, for one kernel (the others kernel by kernel)


def s1_c1(summary: pd.DataFrame, best: str = "unrolled", naive: str = "naive") -> list[dict]:
    """Seed 001's S1-C1 at the largest square size where naive, ``best`` and cuBLAS all ran in device memory."""
    rate = medians(summary, "device", "kernel", "gflops")
    if not all(v in rate for v in (best, naive, "cublas")):
        return []
    both = rate[[best, naive, "cublas"]].dropna()
    if both.empty:
        return []
    n = int(both.index.max())
    speedup, share = both.at[n, best] / both.at[n, naive], both.at[n, best] / both.at[n, "cublas"]
    # two kernels' own sets: where one ran throttled and the other not, the case says so (gpumm.analyse.power)
    marks = [power.mark(summary, best, other, (n, n, n)) for other in (naive, "cublas")]
    return [
        _case("S1-C1", "a", STATEMENTS["S1-C1", "a"], best, n, speedup, "×", ">", 15, marks[0]),
        _case("S1-C1", "b", STATEMENTS["S1-C1", "b"], best, n, share, "share", "within", ABOUT_HALF, marks[1]),
    ]


def s1_c2(summary: pd.DataFrame, resources: pd.DataFrame, best: str = "unrolled") -> list[dict]:
    """Seed 001's S1-C2, each statement at every size and kernel it names."""
    rows = []
    dev, zc = medians(summary, "device", "kernel"), medians(summary, "zero_copy", "kernel")
    for part, v, floor in (("a1", "cublas", 30), ("a2", best, 50)):
        if v in dev and v in zc:
            pair = pd.concat([zc[v].rename("zc"), dev[v].rename("dev")], axis=1).dropna()
            for n, r in pair.iterrows():
                note = throttled_note(summary, v, int(n), ("zero_copy", "device"))
                rows.append(
                    _case("S1-C2", part, STATEMENTS["S1-C2", part], v, int(n), r.zc / r.dev, "×", ">", floor, note)
                )
    warm = medians(summary, "managed", "warm")
    for v in [v for v in SIX if v in dev and v in warm]:
        pair = pd.concat([warm[v].rename("warm"), dev[v].rename("dev")], axis=1).dropna()
        if len(pair):
            n = int(pair.index.max())
            ratio = pair.at[n, "warm"] / pair.at[n, "dev"]
            band = (1 - SAME_WITHIN, 1 + SAME_WITHIN)
            rows.append(_case("S1-C2", "b", STATEMENTS["S1-C2", "b"], v, n, ratio, "×", "within", band))
    for part, table in (("c1", dev), ("c2", zc)):
        for v in [v for v in SIX if v in table]:
            col = table[v].dropna()
            if {512, 1024, 2048} <= set(col.index):
                rate = {n: 2 * n**3 / col[n] for n in (512, 1024, 2048)}  # FLOP per ms
                ratio = rate[1024] / min(rate[512], rate[2048])
                rows.append(_case("S1-C2", part, STATEMENTS["S1-C2", part], v, 1024, ratio, "×", "<", DIP))
    if len(resources) and "smem_bytes" in resources:
        r = resources[resources.variant.isin(SIX) & resources.smem_bytes.notna()]
        if len(r):
            note = "shared memory per block, set by the tile at compile time: " + ", ".join(
                f"{a} {int(b)} B" for a, b in zip(r.variant, r.smem_bytes)
            )
            case = _case("S1-C2", "c3", STATEMENTS["S1-C2", "c3"], "", math.nan, math.nan, "", ">", 0, note)
            rows.append({**case, "holds": False})
    return rows


def throttled_note(summary: pd.DataFrame, variant: str, n: int, modes: tuple[str, ...], timed: str = "kernel") -> str:
    """'' when none of ``variant``'s sets at n³ in ``modes`` ran throttled, else which did ('zero_copy set ran
    throttled'): a case whose ratio divides a throttled set's time is marked where it stands."""
    if "throttled" not in summary:
        return ""
    s = summary[(summary.variant == variant) & (summary.M == n) & (summary.N == n) & (summary.K == n)]
    s = s[s.timed == timed]
    hot = [m for m in modes if s[s.memory_mode == m].throttled.map(power.truth).any()]
    sets = "sets" if len(hot) > 1 else "set"
    return f"{' and '.join(m.replace('_', '-') for m in hot)} {sets} ran throttled" if hot else ""


def s2_tr(transpose: pd.DataFrame) -> list[dict]:
    """Seed 002's transpose: the padded one about 10x the naive one from 16 to 1024, the speed-up growing with size."""
    t = transpose[(transpose.status == "ok") & (transpose.M == transpose.N) & (transpose.variant == "transpose_padded")]
    t = t[t.M.map(lambda n: 16 <= n <= 1024 and int(n) & (int(n) - 1) == 0).astype(bool)]
    t = t.set_index("M").speedup_over_naive
    t = t.dropna().sort_index()
    rows = [
        _case("S2-TR", "a", STATEMENTS["S2-TR", "a"], "transpose_padded", int(n), x, "×", "within", ABOUT_10X)
        for n, x in t.items()
    ]
    for n, x in t.items():
        if n // 2 in t.index:
            rows.append(
                _case("S2-TR", "b", STATEMENTS["S2-TR", "b"], "transpose_padded", int(n), x / t[n // 2], "×", ">", 1)
            )
    return rows


def s2_cpu(summary: pd.DataFrame, cpu: str = "cpu_serial") -> list[dict]:
    """Seed 002: the serial CPU loop against the fastest GPU variant end to end, size by size."""
    e = summary[(summary.timed == "end_to_end") & (summary.status == "ok") & (summary.M == summary.N)]
    e = e[(e.N == e.K) & e.M.map(lambda n: n > 0 and int(n) & (int(n) - 1) == 0)]
    ms = e.pivot_table(index="M", columns="variant", values="median_ms")
    gpus = [v for v in ms.columns if v in set(e[e.kind.isin(["cuda", "cublas"])].variant)] if "kind" in e else []
    if cpu not in ms or not gpus:
        return []
    best = ms[gpus].min(axis=1)
    pair = pd.concat([ms[cpu].rename("cpu"), best.rename("gpu")], axis=1).dropna()
    return [
        _case("S2-CPU", "a", STATEMENTS["S2-CPU", "a"], cpu, int(n), r.cpu / r.gpu, "×", "<", 1)
        for n, r in pair.iterrows()
        if n <= SMALL
    ]


def s2_cgma(estimate: pd.DataFrame, roofline: pd.DataFrame) -> list[dict]:
    """Seed 002's S2-CGMA: the naive kernel's ratio of its loop, and what bounds it on the roofline."""
    rows = []
    e = estimate[(estimate.variant == "naive") & (estimate.level == "ptx")] if len(estimate) else estimate
    if len(e) and pd.notna(e.cgma.iloc[0]):
        rows.append(
            _case(
                "S2-CGMA",
                "a",
                STATEMENTS["S2-CGMA", "a"],
                "naive",
                math.nan,
                float(e.cgma.iloc[0]) / 4,
                " flop/byte",
                "within",
                ABOUT_QUARTER,
            )
        )
    r = roofline[roofline.variant == "naive"] if len(roofline) else roofline
    if len(r):
        r = r.sort_values("size").iloc[-1]
        case = _case(
            "S2-CGMA",
            "b",
            STATEMENTS["S2-CGMA", "b"],
            "naive",
            int(r["size"]),
            math.nan,
            "",
            ">",
            0,
            f"{r.bound} at {int(r['size'])}³ ({r.share_of_roof:.0%} of its lowest roof, {r.lowest_roof})",
        )
        rows.append({**case, "holds": str(r.bound).startswith("DRAM")})
    return rows


def cases(
    summary: pd.DataFrame,
    resources: pd.DataFrame,
    transpose: pd.DataFrame | None = None,
    estimate: pd.DataFrame | None = None,
    roofline: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every case of every claim statement this run can test."""
    rows = s1_c1(summary) + s1_c2(summary, resources)
    if transpose is not None and len(transpose):
        rows += s2_tr(transpose)
    rows += s2_cpu(summary)
    rows += s2_cgma(
        estimate if estimate is not None else pd.DataFrame(), roofline if roofline is not None else pd.DataFrame()
    )
    return pd.DataFrame(rows, columns=CASE_COLUMNS)


def shown(value: float, unit: str, threshold=None) -> str:
    """A value as a reader sees it, with as many decimals as it takes not to round onto its threshold."""
    if value != value:
        return "—"
    bounds = [float(t) for t in (threshold if isinstance(threshold, tuple) else (threshold,)) if t is not None]
    scale, suffix = (100, "%") if unit == "share" else (1, unit)
    first = 0 if unit == "share" or abs(value) >= 100 else 2 if isinstance(threshold, tuple) else 1
    for digits in range(first, first + 4):
        text = f"{scale * value:.{digits}f}"
        if value in bounds or all(text != f"{scale * b:.{digits}f}" for b in bounds):
            break
    return f"{text}{suffix}"


def _threshold(row) -> float | tuple:
    t = row.threshold
    if isinstance(t, str) and ".." in t:
        lo, hi = t.split("..")
        return float(lo), float(hi)
    return float(t)


def spans(sizes: list[int]) -> str:
    """Sizes as runs of the power-of-two sweep: [512, 1024, 2048, 8192] -> '512–2048 and 8192'."""
    sizes = sorted(int(s) for s in sizes)
    runs: list[list[int]] = []
    for n in sizes:
        if runs and n == 2 * runs[-1][-1]:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [f"{r[0]}" if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _where(g: pd.DataFrame) -> str:
    """Where a statement held and where not, with the values that decide it."""
    held, missed = g[g.holds.astype(bool)], g[~g.holds.astype(bool)]
    if g.value.isna().all():
        return "; ".join(dict.fromkeys(g.note))
    by_size = (g.claim.iloc[0], g.part.iloc[0]) in BY_SIZE

    def said(d: pd.DataFrame) -> str:
        vals = [shown(v, u, _threshold(r)) for v, u, r in zip(d.value, d.unit, d.itertuples())]
        if by_size:
            lo, hi = d.value.idxmin(), d.value.idxmax()
            span = (
                shown(d.value[lo], d.unit[lo], _threshold(d.loc[lo]))
                if lo == hi
                else f"{shown(d.value[lo], d.unit[lo], _threshold(d.loc[lo]))} to "
                f"{shown(d.value[hi], d.unit[hi], _threshold(d.loc[hi]))}"
            )
            return f"at {spans(d['size'])} ({span})"
        return (
            "for "
            + ", ".join(f"{v} ({x})" for v, x in zip(d.variant, vals))
            + (f" at {int(d['size'].iloc[0])}" if d["size"].nunique() == 1 else "")
        )

    marks = [n for n in dict.fromkeys(g.note) if isinstance(n, str) and n.startswith("unpaired")]
    tail = (" (" + "; ".join(marks) + ")") if marks else ""  # two sets in different power states (S1-C1)
    if len(missed) == 0:
        return said(held) + tail
    if len(held) == 0:
        return said(missed) + tail
    return f"{said(held)}; not {said(missed)}{tail}"


def verdicts(c: pd.DataFrame) -> pd.DataFrame:
    """One row per statement the sources make, tested or not: its test, its cases and its verdict."""
    rows = []
    for (claim, part), statement in STATEMENTS.items():
        g = c[(c.claim == claim) & (c.part == part)] if len(c) else c
        n, held = len(g), int(g.holds.astype(bool).sum()) if len(g) else 0
        verdict = UNTESTED if n == 0 else HOLDS if held == n else NOT if held == 0 else IN_PART
        page, anchor = WHERE[claim]
        rows.append(
            {
                "claim": claim,
                "part": part,
                "statement": statement,
                "test": TESTS[claim, part],
                "cases": n,
                "held": held,
                "verdict": verdict,
                "detail": _where(g) if n else "this run has none of the sizes or kernels it names",
                "page": page,
                "anchor": anchor,
            }
        )
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def count(v: pd.DataFrame) -> dict[str, int]:
    """How many statements hold, hold in part, do not hold (tested ones only): the index's and the pages' count."""
    tested = v[v.verdict != UNTESTED]
    return {k: int((tested.verdict == k).sum()) for k in (HOLDS, IN_PART, NOT)}


def counted(v: pd.DataFrame) -> str:
    """The count in words: '1 holds, 3 hold in part and 4 do not hold, of 8 statements tested'."""
    k = count(v)
    n = sum(k.values())

    def verb(m: int, one: str, many: str) -> str:
        return f"{m} {one if m == 1 else many}"

    return (
        f"{verb(k[HOLDS], 'holds', 'hold')}, {verb(k[IN_PART], 'holds', 'hold')} in part and "
        f"{verb(k[NOT], 'does', 'do')} not hold, of {n} statement{'' if n == 1 else 's'} tested"
    )

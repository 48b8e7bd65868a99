"""The roofline of a run's GPU and where each matrix-multiply kernel sits under it (issue 11).

A kernel doing F flops while moving D bytes to and from a memory level has an
arithmetic intensity I = F / D there. Under a compute roof P (flop/s) and a
bandwidth roof W (byte/s) it can reach at most min(P, I·W); the ridge point
P / W is the intensity where the two roofs meet. Left of it a kernel is
bound by that memory, right of it by arithmetic.

Here: F = 2·M·N·K (FFMA counted as two flops), D from Nsight Compute
(``dram__bytes_read.sum + dram__bytes_write.sum`` for DRAM, ``lts__t_bytes.sum``
for the L2 when the profile has it), P the FP32 peak of
:func:`gpumm.setup.hardware.fp32_peak` (SMs x FP32 lanes x 2 x clock), and two
bandwidth roofs: DRAM (the device-to-device copy this run measured) and the L2
(the L2-resident reads of the memory-hierarchy study).

A kernel is *bound* by the lowest roof at its intensities when it reaches at
least NEAR (60%) of it. Further below every roof, no roof explains it: the
counters do. With the issue slots mostly used (``smsp__issue_active``, at least
NEAR) it is issue-bound (instructions other than the FMAs take the slots);
otherwise it waits: on the load/store queue when its largest stall is a throttle of that queue (``lg throttle``,
``mio throttle``: more memory instructions than the pipe takes, whatever cache serves them), else on latency, its
largest stall reason saying on what.

A roof bounds: a kernel measured above one (a share of its lowest roof above 1) is not a point of the table but a
failed check (:func:`split`), naming the kernel and the roof: the traffic counted or the bandwidth behind that roof
is wrong, and no bound word is given for it.
"""

import math

import pandas as pd

DRAM_READ, DRAM_WRITE, L2_BYTES = "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum"
ISSUE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
NEAR = 0.6  # at least this share of the lowest roof: bound by that roof
QUEUE_STALLS = ("lg throttle", "mio throttle")  # the memory-instruction queue is full
CHECK_COLUMNS = ["variant", "size", "roof", "roof_gflops", "gflops", "share_of_roof", "check"]


def attainable(intensity: float, peak: float, bandwidth: float) -> float:
    """The roof at ``intensity`` (flop/byte): min(peak, intensity x bandwidth), in the units of ``peak``."""
    if not (intensity > 0 and peak > 0 and bandwidth > 0):
        return math.nan
    return min(peak, intensity * bandwidth)


def level_bandwidth(levels: pd.DataFrame, level: str = "L2") -> float:
    """A memory level's bandwidth in byte/s from the hierarchy study's table (``hierarchy_bandwidth``: level,
    median_gbs); nan where the run has no such level."""
    if not len(levels):
        return math.nan
    return float(levels.set_index("level").median_gbs.get(level, math.nan)) * 1e9


def ridge(peak: float, bandwidth: float) -> float:
    """The intensity (flop/byte) where the bandwidth roof meets the compute roof."""
    return peak / bandwidth if peak > 0 and bandwidth > 0 else math.nan


def bound(share_of_roof: float, binding: str, issue_pct: float, top_stall: str) -> str:
    """What holds a kernel back, in words: the roof it is near, or, far under every roof, the counters' reason."""
    if share_of_roof != share_of_roof:
        return "unknown (no roof)"
    if share_of_roof >= NEAR:
        return f"{binding}-bound"
    if issue_pct == issue_pct and issue_pct >= 100 * NEAR:
        return f"issue-bound ({issue_pct:.0f}% of issue slots used, under every roof)"
    if top_stall.split(" (")[0] in QUEUE_STALLS:
        return f"load/store-queue-bound (waits most on {top_stall}: memory instructions queue, under every roof)"
    if top_stall:
        return f"latency-bound (waits most on {top_stall}, under every roof)"
    return "under every roof (latency or issue: this profile has no stall counters)"


def points(
    summary: pd.DataFrame, profiles: pd.DataFrame, peak: float, bandwidth: float, l2_bandwidth: float = math.nan
) -> pd.DataFrame:
    """One point per matrix-multiply variant and profiled square size.

    ``summary``: the run's summary (median kernel GFLOP/s, device memory, status
    ok); ``profiles``: the tidy Nsight Compute table; ``peak`` in flop/s,
    ``bandwidth`` (DRAM) and ``l2_bandwidth`` in byte/s. Columns: the achieved
    GFLOP/s, the DRAM and L2 intensities, each roof at the kernel's intensities,
    the lowest (``roof_gflops``) and which it is, the share of it achieved, the
    issue-slot use and largest stall where profiled, and the bound in words.
    """
    cols = ["variant", "size", "gflops", "dram_bytes", "flop_per_dram_byte", "flop_per_l2_byte"]
    cols += ["compute_roof_gflops", "dram_roof_gflops", "l2_roof_gflops", "roof_gflops", "lowest_roof"]
    cols += ["share_of_roof", "issue_active_pct", "top_stall", "bound"]
    ok = profiles[(profiles.status == "ok") & (profiles.M == profiles.N) & (profiles.N == profiles.K)]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    wide = ok.pivot_table(index=["variant", "M"], columns="metric", values="value", aggfunc="sum")
    s = summary[(summary.timed == "kernel") & (summary.memory_mode == "device") & (summary.status == "ok")]
    s = s[(s.M == s.N) & (s.N == s.K)].set_index(["variant", "M"])["gflops"]
    rows = [
        _point(variant, int(n), r, float(s.loc[(variant, n)]), peak, bandwidth, l2_bandwidth)
        for (variant, n), r in wide.iterrows()
        if (variant, n) in s.index and DRAM_READ in r
    ]
    return pd.DataFrame(rows, columns=cols)


def _point(variant: str, n: int, r: pd.Series, g: float, peak: float, bandwidth: float, l2_bandwidth: float) -> dict:
    """One variant at n³ (``r``: its profile's metrics; ``g``: its median GFLOP/s) under the three roofs."""
    flops = 2.0 * n**3
    dram = r.get(DRAM_READ, math.nan) + r.get(DRAM_WRITE, 0.0)
    l2 = r.get(L2_BYTES, math.nan)
    ai, ai_l2 = (flops / dram if dram > 0 else math.nan), (flops / l2 if l2 > 0 else math.nan)
    roofs = {
        "compute": peak / 1e9 if peak > 0 else math.nan,
        "DRAM": ai * bandwidth / 1e9 if ai == ai and bandwidth > 0 else math.nan,
        "L2": ai_l2 * l2_bandwidth / 1e9 if ai_l2 == ai_l2 and l2_bandwidth > 0 else math.nan,
    }
    known = {k: v for k, v in roofs.items() if v == v}
    lowest = min(known, key=known.get) if known else ""
    roof = known.get(lowest, math.nan)
    stalls = {
        m[len(STALL_PREFIX) : -len(STALL_SUFFIX)].replace("_", " "): v
        for m, v in r.items()
        if isinstance(m, str) and m.startswith(STALL_PREFIX) and m.endswith(STALL_SUFFIX) and v == v
    }
    top = max(stalls, key=stalls.get) if stalls else ""
    issue = float(r.get(ISSUE, math.nan))
    share = g / roof if roof > 0 else math.nan
    return {
        "variant": variant,
        "size": n,
        "gflops": g,
        "dram_bytes": dram,
        "flop_per_dram_byte": ai,
        "flop_per_l2_byte": ai_l2,
        "compute_roof_gflops": roofs["compute"],
        "dram_roof_gflops": roofs["DRAM"],
        "l2_roof_gflops": roofs["L2"],
        "roof_gflops": roof,
        "lowest_roof": lowest,
        "share_of_roof": share,
        "issue_active_pct": issue,
        "top_stall": f"{top} ({stalls[top]:.2f} per issue)" if top else "",
        "bound": bound(share, lowest, issue, top),
    }


def split(points_table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the points under their roofs, the failed checks): a point above its lowest roof is a failed check naming
    the kernel, the roof and by how much it beats it, and leaves the table."""
    over = points_table.share_of_roof > 1
    failed = points_table[over].assign(
        roof=lambda d: d.lowest_roof,
        check=lambda d: [
            f"{v} at {n}³ runs at {s:.2f}× its {r} roof ({g / 1e3:,.0f} of {c / 1e3:,.0f} TFLOP/s): the {r} "
            "traffic counted or the bandwidth behind that roof is wrong, so no bound is given for it"
            for v, n, s, r, g, c in zip(d.variant, d["size"], d.share_of_roof, d.lowest_roof, d.gflops, d.roof_gflops)
        ],
    )
    return points_table[~over].reset_index(drop=True), failed[CHECK_COLUMNS].reset_index(drop=True)

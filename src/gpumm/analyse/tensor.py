"""The race on the tensor cores (issue 30): the BF16 ladder against cuBLAS BF16, its counters and its roof.

Pure functions on the run's tables, tested on the CPU. The ladder is :func:`gpumm.analyse.rates.ladder` over the
families of op ``matmul_bf16``, against ``cublas_bf16``, at every square size the run measured them at.
"""

import math

import pandas as pd

from gpumm.analyse import paired, rates
from gpumm.setup import hardware

OP = "matmul_bf16"
REFERENCE = "cublas_bf16"
GOAL = 1.0  # the issue's goal: the best hand-written BF16 kernel at cuBLAS BF16's rate or above, at 4096³ and 8192³
GOAL_SIZES = (4096, 8192)


def ladder(summary: pd.DataFrame, fams: list[dict]) -> pd.DataFrame:
    """The BF16 ladder at every square size its variants ran at: one row per family (``fams``: the BF16 families
    in catalog order, each with its rung below) and size (M), with its rate, spread, share of cuBLAS BF16 and
    gain over the rung below."""
    if not fams or "op" not in summary:
        return pd.DataFrame(columns=["M", *_columns()])
    s = summary[summary.op == OP]
    sizes = sorted(int(n) for n in s[(s.M == s.N) & (s.N == s.K)].M.dropna().unique())
    parts = [rates.ladder(s, fams, n, reference=REFERENCE).assign(M=n) for n in sizes]
    if not parts:
        return pd.DataFrame(columns=["M", *_columns()])
    out = pd.concat(parts, ignore_index=True)
    return out[["M", *[c for c in out.columns if c != "M"]]]


def _columns() -> list[str]:
    return ["family", "best_variant", "gflops", "iqr_pct", "share_of_cublas", "rung_below", "gain_over_rung_below"]


def goal(lad: pd.DataFrame) -> dict:
    """The issue's goal read from the ladder: the best hand-written family's share of cuBLAS BF16 at each of
    GOAL_SIZES, and whether it is met at every one (None where a size was not measured)."""
    out = {}
    for n in GOAL_SIZES:
        d = lad[(lad.M == n) & (lad.family != REFERENCE) & lad.share_of_cublas.notna()] if len(lad) else lad
        out[n] = (d.loc[d.share_of_cublas.idxmax()].family, float(d.share_of_cublas.max())) if len(d) else None
    measured = [v for v in out.values() if v is not None]
    met = bool(measured) and len(measured) == len(GOAL_SIZES) and all(share >= GOAL for _, share in measured)
    return {"best": out, "met": met}


def roofs(gpu: dict, d2d_gbs: float) -> dict:
    """The roofs of the two races on this GPU: the FP32 and the tensor-core (BF16) peaks in flop/s at the SM clock the
    run recorded (``mhz``), their ratio (the one number the pages give for it), NVIDIA's BF16 figure and the clock
    it is stated at, the DRAM roof (the run's device-to-device copy, byte/s), and each race's ridge point (flop per
    DRAM byte where its peak meets the DRAM roof)."""
    fp32, tensor = hardware.fp32_peak(gpu), hardware.tensor_bf16_peak(gpu)
    dram = d2d_gbs * 1e9 if d2d_gbs == d2d_gbs else math.nan
    vendor, vendor_mhz = hardware.vendor_tensor_bf16(gpu)
    return {
        "fp32": fp32,
        "tensor": tensor,
        "ratio": tensor / fp32 if fp32 > 0 else math.nan,
        "mhz": float(gpu.get("sm_clock_khz") or math.nan) / 1e3,
        "vendor": vendor,
        "vendor_mhz": vendor_mhz,
        "dram": dram,
        "fp32_ridge": fp32 / dram if dram else math.nan,
        "tensor_ridge": tensor / dram if dram else math.nan,
    }


PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"  # HMMA and HGMMA alike
DRAM_READ = "dram__bytes_read.sum"
L2_HIT = "lts__t_sector_hit_rate.pct"


def counter_table(profiles: pd.DataFrame, order: list[str], metrics: list[str]) -> pd.DataFrame:
    """Nsight Compute's ``metrics`` (columns, in that order; NaN where not collected) of the variants in ``order`` (the
    ladder's, cuBLAS BF16 last), one row per variant and profiled size (M), sizes ascending, rows in ladder order."""
    cols = ["variant", "M", *metrics]
    if profiles.empty or not order:
        return pd.DataFrame(columns=cols)
    ok = profiles[(profiles.status == "ok") & profiles.variant.isin(order)]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    wide = ok.pivot_table(index=["variant", "M"], columns="metric", values="value", aggfunc="first")
    wide = wide.reindex(columns=metrics).reset_index()
    wide.columns.name = None
    wide["rank"] = wide.variant.map({f: i for i, f in enumerate(order)})
    return wide.sort_values(["M", "rank"]).drop(columns="rank").reset_index(drop=True)


def counters(profiles: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """The BF16 rungs' counters, one row per family (``order``: the ladder's, cuBLAS BF16 last) and profiled size
    (M): tensor pipe busy (% of active cycles), DRAM bytes read and L2 hit rate (%), NaN where not collected."""
    wide = counter_table(profiles, order, [PIPE, DRAM_READ, L2_HIT])
    wide.columns = ["family", "M", "tensor_pipe_pct", "dram_read_bytes", "l2_hit_pct"]
    return wide


def steps(lad: pd.DataFrame, cnt: pd.DataFrame) -> pd.DataFrame:
    """Each rung's gain over the rung below at every profiled size, beside the counters of both: the tensor pipe's
    busy share, the DRAM bytes read and the L2 hit rate, below and here."""
    cols = ["M", "family", "rung_below", "gain", "busy_below", "busy", "dram_below", "dram", "hit_below", "hit"]
    if lad.empty or cnt.empty:
        return pd.DataFrame(columns=cols)
    c = cnt.set_index(["family", "M"])
    rows = []
    for r in lad[lad.M.isin(set(cnt.M)) & lad.gain_over_rung_below.notna()].itertuples():
        here, below = (r.family, r.M), (r.rung_below, r.M)
        if here not in c.index or below not in c.index:
            continue
        a, b = c.loc[below], c.loc[here]
        rows.append(
            [r.M, r.family, r.rung_below, r.gain_over_rung_below, a.tensor_pipe_pct, b.tensor_pipe_pct,
             a.dram_read_bytes, b.dram_read_bytes, a.l2_hit_pct, b.l2_hit_pct]
        )  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def reading(lad: pd.DataFrame, cnt: pd.DataFrame, n: int) -> dict | None:
    """The rungs the page's sentence on the counters at n³ names, and their numbers (None without a hand-written
    rung whose tensor pipe was counted): the first rung and the busiest (tensor pipe % of active cycles), cuBLAS
    BF16's share (NaN where not counted), the rungs that read the least and the most from DRAM (None, their bytes
    NaN, where no DRAM bytes were counted), and ``ahead``: the fastest timed rung faster than the busiest (None if
    none is). The counters count cycles and the timing counts
    seconds, at clocks that differ: the busiest rung need not be the fastest."""
    c = cnt[cnt.M == n].set_index("family")
    rate = lad[lad.M == n].set_index("family").gflops
    hand = c.drop(index=REFERENCE, errors="ignore").dropna(subset=["tensor_pipe_pct"])
    if hand.empty:
        return None
    busiest = hand.tensor_pipe_pct.idxmax()
    faster = [f for f in hand.index if f != busiest and rate.get(f, math.nan) > rate.get(busiest, math.nan)]
    ahead = max(faster, key=lambda f: rate[f]) if faster else None
    dram = hand.dram_read_bytes.dropna()
    return {
        "first": hand.index[0],
        "first_pct": float(hand.tensor_pipe_pct.iloc[0]),
        "busiest": busiest,
        "busiest_pct": float(hand.at[busiest, "tensor_pipe_pct"]),
        "reference_pct": float(c.at[REFERENCE, "tensor_pipe_pct"]) if REFERENCE in c.index else math.nan,
        "least_dram": dram.idxmin() if len(dram) else None,
        "least_dram_bytes": float(dram.min()) if len(dram) else math.nan,
        "most_dram": dram.idxmax() if len(dram) else None,
        "most_dram_bytes": float(dram.max()) if len(dram) else math.nan,
        "ahead": ahead,
        "ahead_pct": float(hand.at[ahead, "tensor_pipe_pct"]) if ahead else math.nan,
        "busiest_gflops": float(rate.get(busiest, math.nan)),
        "ahead_gflops": float(rate[ahead]) if ahead else math.nan,
    }


CYCLES = "sm__cycles_elapsed.avg"
DURATION = "gpu__time_duration.sum"


def per_cycle(profiles: pd.DataFrame, verdicts: pd.DataFrame, summary: pd.DataFrame, n: int, gpu: dict) -> pd.DataFrame:
    """The counters and the timing in one unit at n³: for each kernel profiled there, the clock its profiled launch
    ran at (its own elapsed cycles over its duration: Nsight Compute leaves the clock alone here), its tensor pipe's
    busy share, its profiled launch's rate over the tensor peak at that clock, and its timed rates each over the
    tensor peak at the clock NVML reported: the burst rate (its own set, at that set's median clock) and the
    sustained one (the paired rounds, at their median clock). A rate per cycle compares with a busy share per cycle
    whatever the clock; a rate per second does not. (NVML's clock moves every 100 ms on an H100: where the cap
    swings the clock faster, the clock it reports is not the one the kernel ran at, and the timed rate per cycle
    says so by falling short of the busy share.)"""
    cols = ["variant", "family", "profile_mhz", "tensor_pipe_pct", "profile_gflops", "profile_of_peak_pct"]
    cols += ["burst_gflops", "burst_mhz", "burst_of_peak_pct"]
    cols += ["sustained_gflops", "sustained_mhz", "sustained_of_peak_pct"]
    p = profiles[(profiles.status == "ok") & (profiles.M == n)] if len(profiles) else profiles
    if p.empty:
        return pd.DataFrame(columns=cols)
    wide = p.pivot_table(index="variant", columns="metric", values="value", aggfunc="first")
    peak, top = hardware.tensor_bf16_peak(gpu), float(gpu.get("sm_clock_khz") or 0) / 1e3
    per_mhz = peak / top if top else math.nan  # flop/s per MHz of SM clock
    v = verdicts[verdicts.M == n].set_index("variant") if len(verdicts) else pd.DataFrame()
    rows = []
    for variant, w in wide.iterrows():
        if PIPE not in w or pd.isna(w.get(PIPE)):
            continue
        mhz = float(w[CYCLES]) / float(w[DURATION]) * 1e3 if CYCLES in w and DURATION in w else math.nan
        p_rate = 2.0 * n**3 / (float(w[DURATION]) * 1e-9) / 1e9 if DURATION in w else math.nan
        s = summary[(summary.variant == variant) & (summary.M == n) & (summary.N == n) & (summary.K == n)]
        s = s[(s.timed == "kernel") & (s.memory_mode == "device") & (s.status == "ok")]
        b_rate = float(s.gflops.iloc[0]) if len(s) else math.nan
        b_mhz = float(s.sm_clock_mhz.iloc[0]) if len(s) and "sm_clock_mhz" in s else math.nan
        x = v.loc[variant] if variant in v.index else None
        paired_here = x is not None and x.regime == paired.PAIRED_REGIME
        s_rate = float(x.rate) if paired_here else math.nan
        s_mhz = float(x.sm_clock_mhz) if paired_here else math.nan
        rows.append(
            {
                "variant": variant,
                "family": x.family if x is not None else variant,
                "profile_mhz": mhz,
                "tensor_pipe_pct": float(w[PIPE]),
                "profile_gflops": p_rate,
                "profile_of_peak_pct": 100 * p_rate * 1e9 / (per_mhz * mhz) if mhz == mhz else math.nan,
                "burst_gflops": b_rate,
                "burst_mhz": b_mhz,
                "burst_of_peak_pct": 100 * b_rate * 1e9 / (per_mhz * b_mhz) if b_mhz == b_mhz else math.nan,
                "sustained_gflops": s_rate,
                "sustained_mhz": s_mhz,
                "sustained_of_peak_pct": 100 * s_rate * 1e9 / (per_mhz * s_mhz) if s_mhz == s_mhz else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=cols)

"""Analyses of a run, as pure functions on its tables (tested on the CPU).

- occupancy: the theoretical occupancy of a kernel from its resource report
  and the device's limits (S0-S36);
- peak and the PTX estimate of seed 000 Section 3.7 (S0-S37);
- the compute-to-global-memory ratio of a loop (S2-CGMA, S3-CGMA);
- the ladder: each family's best GFLOP/s at one size, its share of cuBLAS and
  its gain over the rung below;
- claim S1-C1 of seed 001, checked on our numbers.
"""

import math

import pandas as pd

# FP32 results per clock per SM (fused multiply-add lanes), by compute
# capability: CUDA C++ Programming Guide, "Arithmetic Instructions" table.
FP32_LANES_PER_SM = {
    (7, 0): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128,
    (10, 3): 128,
    (12, 0): 128,
}
# Occupancy granularities for compute capability 7.0 and newer (CUDA occupancy
# calculator): registers are allocated per warp in units of 256, and the
# runtime reserves 1 KiB of shared memory per block (8.0 and newer).
REG_ALLOC_UNIT = 256
SMEM_RESERVED_PER_BLOCK = 1024
SMEM_ALLOC_UNIT = 128


def lanes(gpu: dict) -> int | None:
    major, minor = (int(x) for x in str(gpu.get("compute_capability", "0.0")).split("."))
    return FP32_LANES_PER_SM.get((major, minor))


def dram_bandwidth(gpu: dict) -> float:
    """Specified DRAM bandwidth in byte/s: 2 (double data rate) x memory clock x bus width; nan if unknown."""
    clock, bus = float(gpu.get("memory_clock_khz") or 0), float(gpu.get("memory_bus_bits") or 0)
    return 2 * clock * 1e3 * bus / 8 if clock and bus else math.nan


def fp32_peak(gpu: dict) -> float:
    """FP32 peak in flop/s: SMs x lanes x 2 (a fused multiply-add is 2 flops) x SM clock."""
    n = lanes(gpu)
    if n is None or not gpu.get("sm_count") or not gpu.get("sm_clock_khz"):
        return math.nan
    return gpu["sm_count"] * n * 2 * gpu["sm_clock_khz"] * 1e3


def occupancy(threads: int, registers: int, smem_bytes: int, gpu: dict) -> dict:
    """Theoretical occupancy of a kernel on ``gpu`` (provenance's device limits)."""
    max_threads = gpu.get("max_threads_per_sm") or 2048
    max_warps = max_threads // 32
    regs_per_sm = gpu.get("regs_per_sm") or 65536
    smem_per_sm = gpu.get("smem_per_sm") or 0
    warps = math.ceil(threads / 32)
    regs_per_warp = math.ceil(max(registers, 1) * 32 / REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    smem = math.ceil(smem_bytes / SMEM_ALLOC_UNIT) * SMEM_ALLOC_UNIT + SMEM_RESERVED_PER_BLOCK
    limits = {
        "blocks": gpu.get("max_blocks_per_sm") or 32,
        "warps": max_warps // warps,
        "registers": (regs_per_sm // regs_per_warp) // warps,
        "shared memory": smem_per_sm // smem if smem_per_sm else 10**9,
    }
    blocks = min(limits.values())
    limiter = next(k for k in ("warps", "registers", "shared memory", "blocks") if limits[k] == blocks)
    return {
        "blocks_per_sm": blocks,
        "active_warps": blocks * warps,
        "occupancy": blocks * warps / max_warps,
        "limited_by": limiter,
    }


def ptx_estimate(fma: int, instructions: int, global_loads: int, gpu: dict) -> dict:
    """Seed 000's estimate from a loop's instruction counts.

    potential = peak x (multiply-adds / instructions): every issue slot that is
    not a multiply-add is a lost one; required bandwidth = cores x (global
    loads / instructions) x 4 bytes x clock: what feeding that loop at full
    issue rate would need from memory.
    """
    n = lanes(gpu) or 0
    cores = gpu.get("sm_count", 0) * n
    clock = gpu.get("sm_clock_khz", 0) * 1e3
    return {
        "peak_gflops": fp32_peak(gpu) / 1e9,
        "fma_share": fma / instructions,
        "potential_gflops": fp32_peak(gpu) * fma / instructions / 1e9,
        "load_share": global_loads / instructions,
        "required_gbs": cores * global_loads / instructions * 4 * clock / 1e9,
    }


def cgma(fma: int, global_loads: int) -> float:
    """Flops per global memory access of a loop (seed 003's CGMA ratio): 2 per multiply-add."""
    return 2 * fma / global_loads if global_loads else math.inf


LADDER_SIZE = 4096  # the size of the ladder's summary table (seed 000's largest) and of the GPU comparison


def best_per_family(summary: pd.DataFrame, shape, timed: str = "kernel") -> pd.DataFrame:
    """Each family's fastest verified instance at ``shape`` (a square size n, or (M, N, K)), device memory."""
    M, N, K = shape if isinstance(shape, tuple) else (shape, shape, shape)
    s = summary[(summary.M == M) & (summary.N == N) & (summary.K == K) & (summary.timed == timed)]
    s = s[(s.status == "ok") & (s.memory_mode == "device")]
    if s.empty:
        return s
    return s.loc[s.groupby("family")["gflops"].idxmax()].set_index("family")


def ladder(summary: pd.DataFrame, families: list[dict], shape) -> pd.DataFrame:
    """One row per family in catalog order at ``shape`` (a square size or (M, N, K)): best GFLOP/s, its spread,
    share of cuBLAS, gain over the rung below."""
    best = best_per_family(summary, shape)
    cublas = best["gflops"].get("cublas", math.nan)
    spread = best["iqr_pct"] if "iqr_pct" in best else pd.Series(dtype=float)
    rows = []
    for fam in families:
        name, below = fam["family"], fam.get("rung_below")
        g = best["gflops"].get(name, math.nan)
        rows.append(
            {
                "family": name,
                "best_variant": best["variant"].get(name, ""),
                "gflops": g,
                "iqr_pct": spread.get(name, math.nan),
                "share_of_cublas": g / cublas,
                "rung_below": below or "",
                "gain_over_rung_below": g / best["gflops"].get(below, math.nan) if below else math.nan,
            }
        )
    columns = ["family", "best_variant", "gflops", "iqr_pct", "share_of_cublas", "rung_below", "gain_over_rung_below"]
    return pd.DataFrame(rows, columns=columns)


def claim_s1_c1(summary: pd.DataFrame, best: str = "unrolled", naive: str = "naive") -> dict:
    """Seed 001: the most optimised kernel is over 15x naive at the largest size, about half of cuBLAS.

    'Largest size' is the largest square size at which naive, the best kernel
    and cuBLAS were all measured in this run.
    """
    s = summary[(summary.M == summary.N) & (summary.N == summary.K) & (summary.timed == "kernel")]
    s = s[(s.status == "ok") & (s.memory_mode == "device")]
    have = [set(s[s.family == f].M) for f in (best, naive, "cublas")]
    common = set.intersection(*have) if all(have) else set()
    if not common:
        return {
            "size": math.nan,
            "speedup_over_naive": math.nan,
            "share_of_cublas": math.nan,
            "over_15x": None,
            "about_half_of_cublas": None,
        }
    n = max(common)
    at = best_per_family(summary, n)["gflops"]
    speedup, share = at[best] / at[naive], at[best] / at["cublas"]
    return {
        "size": n,
        "best_gflops": at[best],
        "naive_gflops": at[naive],
        "cublas_gflops": at["cublas"],
        "speedup_over_naive": speedup,
        "share_of_cublas": share,
        "over_15x": bool(speedup > 15),
        "about_half_of_cublas": bool(0.35 <= share <= 0.65),
    }


def _ms(summary: pd.DataFrame, mode: str, timed: str) -> pd.DataFrame:
    """Median ms of square shapes: one column per variant, one row per size."""
    s = summary[(summary.M == summary.N) & (summary.N == summary.K) & (summary.memory_mode == mode)]
    s = s[(s.timed == timed) & (s.status == "ok")]
    return s.pivot_table(index="M", columns="variant", values="median_ms")


def claim_s1_c2(summary: pd.DataFrame, resources: pd.DataFrame, best: str = "unrolled") -> pd.DataFrame:
    """Seed 001's claim S1-C2, part by part, on our numbers.

    a. UVA (zero_copy) is 30x (cuBLAS) to over 50x (the best kernel) slower than manual (device);
    b. unified (managed, warm) matches manual at the top size;
    c. a dip at 1024 for manual and UVA, explained by the shared memory per block.
    """
    rows = []
    dev, zc = _ms(summary, "device", "kernel"), _ms(summary, "zero_copy", "kernel")
    common = sorted(set(dev.index) & set(zc.index))
    for v, floor in (("cublas", 30), (best, 50)):
        both = [n for n in common if v in dev and v in zc and pd.notna(dev.at[n, v]) and pd.notna(zc.at[n, v])]
        if not both:
            rows.append(
                {"part": "a", "claim": f"UVA over {floor}x slower: {v}", "ours": "not measured", "supported": None}
            )
            continue
        n = max(both)
        ratio = zc.at[n, v] / dev.at[n, v]
        rows.append(
            {
                "part": "a",
                "claim": f"UVA over {floor}x slower than manual: {v}",
                "ours": f"{ratio:.0f}x at {n}",
                "supported": bool(ratio > floor),
            }
        )
    warm, cold = _ms(summary, "managed", "warm"), _ms(summary, "managed", "cold")
    for v in sorted(set(dev.columns) & set(warm.columns)):
        both = [n for n in warm.index if n in dev.index and pd.notna(warm.at[n, v]) and pd.notna(dev.at[n, v])]
        if not both:
            continue
        n = max(both)
        r = warm.at[n, v] / dev.at[n, v]
        c = cold.at[n, v] / dev.at[n, v] if v in cold and n in cold.index else float("nan")
        rows.append(
            {
                "part": "b",
                "claim": f"unified equals manual at the top: {v}",
                "ours": f"warm {r:.2f}x, cold {c:.2f}x manual's time at {n}",
                "supported": bool(abs(r - 1) <= 0.1),
            }
        )
    studied = [v for v in dev.columns if v in zc.columns] or list(dev.columns)  # seed 001's six, where UVA ran
    for mode, table in (("manual", dev), ("UVA", zc)):
        for v in [v for v in studied if v in table.columns]:
            col = table[v]
            if not {512, 1024, 2048} <= set(col.dropna().index):
                continue
            g = {n: 2 * n**3 / (col[n] * 1e-3) for n in (512, 1024, 2048)}
            dip = g[1024] < min(g[512], g[2048])
            rows.append(
                {
                    "part": "c",
                    "claim": f"a dip at 1024 ({mode}): {v}",
                    "ours": f"{g[512] / 1e9:,.0f} / {g[1024] / 1e9:,.0f} / {g[2048] / 1e9:,.0f} GFLOP/s"
                    " at 512 / 1024 / 2048",
                    "supported": bool(dip),
                }
            )
    if len(resources) and "smem_bytes" in resources:
        r = resources[resources.variant.isin(studied)]
        rows.append(
            {
                "part": "c",
                "claim": "the dip is explained by the shared memory per block",
                "ours": "shared memory per block does not depend on the matrix size (compiler report: "
                + ", ".join(f"{a} {int(b)} B" for a, b in zip(r.variant, r.smem_bytes))
                + ")",
                "supported": False,
            }
        )
    return pd.DataFrame(rows, columns=["part", "claim", "ours", "supported"])


COALESCING_KEYS = ["pattern", "regime", "n", "copies", "stride", "offset"]


def coalescing_summary(samples: pd.DataFrame, copy_gbs: float, l2_bytes: float = math.nan) -> pd.DataFrame:
    """One row per access pattern: median ms (and per matrix), GB/s, IQR, share of the copy ceilings, regime."""
    keys = COALESCING_KEYS
    ok = samples[samples.status == "ok"]
    g = ok.groupby(keys)
    out = g.agg(
        median_ms=("ms", "median"),
        median_gbs=("gbs", "median"),
        q25_gbs=("gbs", lambda x: x.quantile(0.25)),
        q75_gbs=("gbs", lambda x: x.quantile(0.75)),
        bytes=("bytes", "first"),
        threads=("threads", "first"),
        working_set_bytes=("working_set_bytes", "first"),
        batch=("batch", "first"),
    ).reset_index()
    out["ms_per_matrix"] = out.median_ms / out.copies
    out["working_set_over_l2"] = out.working_set_bytes / l2_bytes if l2_bytes else math.nan
    kernel_copy = out[(out.pattern == "strided") & (out.stride == 1) & (out.offset == 0)].median_gbs
    out["share_of_device_copy"] = out.median_gbs / copy_gbs if copy_gbs else math.nan
    out["share_of_copy_kernel"] = out.median_gbs / kernel_copy.iloc[0] if len(kernel_copy) else math.nan
    failed = samples[samples.status != "ok"].drop_duplicates(keys)[[*keys, "status", "reason"]]
    return pd.concat([out.assign(status="ok", reason=""), failed], ignore_index=True)


def rows_over_cols(summary: pd.DataFrame) -> pd.DataFrame:
    """Seed 000's Table 2 ratio, per size and regime: time reading rows (uncoalesced) over columns (coalesced)."""
    rc = summary[summary.pattern.isin(["rows", "cols"]) & (summary.status == "ok")]
    if rc.empty:
        return pd.DataFrame(columns=["regime", "n", "rows_ms", "cols_ms", "ratio"])
    wide = rc.pivot_table(index=["regime", "n"], columns="pattern", values="ms_per_matrix").reset_index()
    wide = wide.rename(columns={"rows": "rows_ms", "cols": "cols_ms"})
    wide["ratio"] = wide.rows_ms / wide.cols_ms
    return wide[["regime", "n", "rows_ms", "cols_ms", "ratio"]]


def sectors_per_request(profile: pd.DataFrame) -> pd.DataFrame:
    """Global load sectors per request of each profiled launch (32 floats in 4 sectors is perfect)."""
    req, sec = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    if "metric" not in profile or profile.empty:
        return pd.DataFrame(columns=["launch", "sectors_per_request"])
    keys = [c for c in ("launch", *COALESCING_KEYS) if c in profile]
    wide = profile[profile.metric.isin([req, sec])].pivot_table(index=keys, columns="metric", values="value")
    if not {req, sec} <= set(wide.columns):
        return pd.DataFrame(columns=[*keys, "sectors_per_request"])
    return (wide[sec] / wide[req]).rename("sectors_per_request").reset_index()


def profile_summary(profiles: pd.DataFrame, l2_bytes: float, footprints: dict[str, int] | None = None) -> pd.DataFrame:
    """One row per variant and profiled size: the regime and the derived counters the pages cite.

    - regime: ``dram`` when A, B and C (3·4·n² bytes) are at least 3× the L2,
      ``cached`` when they fit in half of it (:func:`gpumm.profile.regime`);
    - sectors per request of the global loads (4 = a warp's 32 floats in one
      128-byte line);
    - DRAM bytes (read + written) over the minimum 3·4·n² (each matrix moved
      once; 2·4·n² for a transpose or copy): re-reads the caches did not absorb;
    - FLOPs per DRAM byte: 2n³ over the DRAM bytes (S2-CGMA, measured; matrix multiplies only).

    ``footprints`` maps a variant to its arrays' bytes over n² (12, the default, for a matrix multiply).
    """
    footprints = footprints or {}
    from gpumm.profile import regime

    cols = [
        "variant",
        "size",
        "regime",
        "working_set_over_l2",
        "kernel",
        "sectors_per_request",
        "store_sectors_per_request",
        "dram_bytes",
        "dram_over_minimum",
        "flop_per_dram_byte",
        "bank_conflicts",
        "achieved_occupancy_pct",
        "duration_ms",
    ]
    ok = profiles[profiles.status == "ok"] if "status" in profiles else profiles.iloc[0:0]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    wide = ok.pivot_table(index=["variant", "M"], columns="metric", values="value", aggfunc="first")
    kernels = ok.drop_duplicates(["variant", "M"]).set_index(["variant", "M"])["kernel"]
    rows = []
    for (variant, n), r in wide.iterrows():
        n = int(n)
        get = r.get
        fp = footprints.get(variant, 12)
        minimum = fp * n * n
        st_req = get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", math.nan)
        dram = get("dram__bytes_read.sum", math.nan) + get("dram__bytes_write.sum", math.nan)
        req = get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", math.nan)
        conflicts = get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 0.0) + get(
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0.0
        )
        rows.append(
            {
                "variant": variant,
                "size": n,
                "regime": regime(n, l2_bytes, fp),
                "working_set_over_l2": minimum / l2_bytes if l2_bytes else math.nan,
                "kernel": kernels.get((variant, r.name[1]), ""),
                "sectors_per_request": get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", math.nan) / req
                if req
                else math.nan,
                "store_sectors_per_request": get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", math.nan) / st_req
                if st_req
                else math.nan,
                "dram_bytes": dram,
                "dram_over_minimum": dram / minimum,
                "flop_per_dram_byte": 2 * n**3 / dram if dram and fp == 12 else math.nan,
                "bank_conflicts": conflicts,
                "achieved_occupancy_pct": get("sm__warps_active.avg.pct_of_peak_sustained_active", math.nan),
                "duration_ms": get("gpu__time_duration.sum", math.nan) / 1e6,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def overhead_summary(samples: pd.DataFrame) -> pd.DataFrame:
    """Median and interquartile range, in µs per launch, of each (what, method) of the overhead study."""
    cols = ["what", "method", "batch", "median_us", "q25_us", "q75_us"]
    if "what" not in samples or samples.empty:
        return pd.DataFrame(columns=cols)
    g = samples.groupby(["what", "method"], sort=False)
    out = g.agg(
        batch=("batch", "first"),
        median_us=("ms", lambda x: 1e3 * x.median()),
        q25_us=("ms", lambda x: 1e3 * x.quantile(0.25)),
        q75_us=("ms", lambda x: 1e3 * x.quantile(0.75)),
    ).reset_index()
    return out[cols]


def launch_floor_ms(overhead: pd.DataFrame, method: str = "graph") -> float:
    """Per-launch time of an empty kernel by ``method``: no kernel timed that way can look faster."""
    if overhead.empty or "what" not in overhead:
        return math.nan
    r = overhead[(overhead.what == "empty kernel") & (overhead.method == method)]
    return float(r.median_us.iloc[0]) / 1e3 if len(r) else math.nan


def cpu_crossover(summary: pd.DataFrame, gpu_variants: list[str], cpu_variants: list[str]) -> pd.DataFrame:
    """For each GPU variant (end to end) against each CPU variant: the smallest square size from which the
    GPU is faster at every larger size compared."""
    cols = ["gpu_variant", "cpu_variant", "gpu_faster_from", "sizes_compared"]
    s = summary[
        (summary.timed == "end_to_end") & (summary.M == summary.N) & (summary.N == summary.K) & (summary.status == "ok")
    ]
    s = s[s.memory_mode.isin(["device", "host"])]
    ms = s.pivot_table(index="M", columns="variant", values="median_ms")
    rows = []
    for g in [v for v in gpu_variants if v in ms]:
        for c in [v for v in cpu_variants if v in ms]:
            both = ms[[g, c]].dropna().sort_index()
            if both.empty:
                continue
            faster = (both[g] < both[c]).to_numpy()
            start = next((i for i in range(len(faster)) if faster[i:].all()), None)
            rows.append(
                {
                    "gpu_variant": g,
                    "cpu_variant": c,
                    "gpu_faster_from": int(both.index[start]) if start is not None else math.nan,
                    "sizes_compared": f"{int(both.index.min())}–{int(both.index.max())}",
                }
            )
    return pd.DataFrame(rows, columns=cols)


TRANSPOSE_GOAL = {"size": 8192, "of_copy_kernel": 0.95, "of_device_copy": 0.90}


def transpose_summary(summary: pd.DataFrame, variants: pd.DataFrame, device_copy_gbs: float) -> pd.DataFrame:
    """Every transpose and the copy at every shape: GB/s (bytes read + written), share of the same run's copy
    kernel and device-to-device copy at that shape, and speed-up over the naive transpose."""
    cols = ["variant", "op", "M", "N", "status", "reason", "median_ms", "iqr_pct", "gbs", "batch"]
    ops = variants.set_index("variant").op if "op" in variants else pd.Series(dtype=str)
    mine = [v for v in summary.variant.unique() if ops.get(v, "matmul") in ("transpose", "copy")]
    s = summary[summary.variant.isin(mine) & (summary.memory_mode == "device") & (summary.timed == "kernel")].copy()
    if s.empty:
        return pd.DataFrame(columns=[*cols, "share_of_copy_kernel", "share_of_device_copy", "speedup_over_naive"])
    s["op"] = s.variant.map(ops)
    s = s[[c for c in cols if c in s]]
    ok = s[s.status == "ok"]
    copy = ok[ok.op == "copy"].groupby(["M", "N"]).gbs.max()
    naive = ok[ok.variant == "transpose_naive"].set_index(["M", "N"]).median_ms
    key = list(zip(s.M, s.N))
    s["share_of_copy_kernel"] = [g / copy.get(k, math.nan) for g, k in zip(s.gbs, key)]
    s["share_of_device_copy"] = s.gbs / device_copy_gbs if device_copy_gbs else math.nan
    s["speedup_over_naive"] = [naive.get(k, math.nan) / ms for ms, k in zip(s.median_ms, key)]
    return s.reset_index(drop=True)


def transpose_goal(table: pd.DataFrame, goal: dict = TRANSPOSE_GOAL) -> dict:
    """The issue's benchmark goal, read on the data: at the goal's size and above, the best transpose's share
    of the copy kernel and of the device-to-device copy (the lower of its shares over those sizes)."""
    t = table[(table.op == "transpose") & (table.status == "ok") & (table.M == table.N) & (table.M >= goal["size"])]
    shares = t.groupby("variant").share_of_copy_kernel.min().dropna()
    if shares.empty:  # no transpose at the goal's sizes, or no copy kernel to share it with (a subset)
        return {"measured": False}
    best = shares.idxmax()
    b = t[t.variant == best]
    of_copy, of_d2d = b.share_of_copy_kernel.min(), b.share_of_device_copy.min()
    return {
        "measured": True,
        "best": best,
        "sizes": sorted(int(m) for m in b.M),
        "of_copy_kernel": of_copy,
        "of_device_copy": of_d2d,
        "met": bool(of_copy >= goal["of_copy_kernel"] and of_d2d >= goal["of_device_copy"]),
    }


LEVELS = ("L1", "L2", "DRAM")


def latency_plateaus(sizes, latencies, tolerance: float = 0.25, min_points: int = 2) -> pd.DataFrame:
    """Plateaus of a latency sweep (buffer size ascending): runs of consecutive sizes whose latency stays
    within ``tolerance`` (relative) of the run's first point, at least ``min_points`` long. The points of a
    transition between two levels form short runs and are left out. The first plateau is named L1, the last
    DRAM and one between them L2 (more than one between: L2, L2 (2), ...)."""
    pts = sorted(zip(sizes, latencies))
    runs, cur = [], []
    for size, lat in pts:
        if cur and abs(lat / cur[0][1] - 1) > tolerance:
            runs.append(cur)
            cur = []
        cur.append((size, lat))
    if cur:
        runs.append(cur)
    runs = [r for r in runs if len(r) >= min_points]
    rows = []
    for i, r in enumerate(runs):
        if i == 0:
            level = "L1"
        elif i == len(runs) - 1 and len(runs) > 1:
            level = "DRAM"
        else:
            level = "L2" if i == 1 else f"L2 ({i})"
        lat = [x[1] for x in r]
        rows.append(
            {
                "level": level,
                "from_bytes": r[0][0],
                "to_bytes": r[-1][0],
                "points": len(r),
                "latency": float(pd.Series(lat).median()),
            }
        )
    return pd.DataFrame(rows, columns=["level", "from_bytes", "to_bytes", "points", "latency"])


def hierarchy_tables(samples: pd.DataFrame, gpu: dict) -> dict[str, pd.DataFrame]:
    """The latency sweep (median per size), its plateaus (in ns and cycles), and the bandwidth per level."""
    empty = {
        "hierarchy_latency": pd.DataFrame(columns=["bytes", "ns_per_step", "cycles_per_step"]),
        "hierarchy_levels": pd.DataFrame(
            columns=["level", "from_bytes", "to_bytes", "points", "latency_ns", "latency_cycles"]
        ),
        "hierarchy_bandwidth": pd.DataFrame(columns=["level", "median_gbs", "q25_gbs", "q75_gbs"]),
    }
    if "kind" not in samples or samples.empty:
        return empty
    ok = samples[samples.status == "ok"]
    lat = ok[ok.kind == "latency"].groupby("bytes")[["ns_per_step", "cycles_per_step"]].median().reset_index()
    if len(lat):
        ns = latency_plateaus(lat.bytes, lat.ns_per_step).rename(columns={"latency": "latency_ns"})
        ns["latency_cycles"] = [
            float(lat[(lat.bytes >= a) & (lat.bytes <= b)].cycles_per_step.median())
            for a, b in zip(ns.from_bytes, ns.to_bytes)
        ]
    else:
        ns = empty["hierarchy_levels"]
    bw = ok[ok.kind == "bandwidth"].groupby("level").gbs
    bandwidth = pd.DataFrame(
        {"median_gbs": bw.median(), "q25_gbs": bw.quantile(0.25), "q75_gbs": bw.quantile(0.75)}
    ).reset_index()
    return {"hierarchy_latency": lat, "hierarchy_levels": ns, "hierarchy_bandwidth": bandwidth}


DEVICE_MEMORY = [  # (quantity as typed from seed 003's table, provenance key, scale to the table's unit)
    ("32-bit registers per block", "regs_per_block", 1),
    ("shared memory per block", "smem_per_block", 1),
    ("constant memory", "constant_bytes", 1),
    ("global memory", "memory_bytes", 1 / 2**20),
    ("L2 cache", "l2_bytes", 1),
]


def device_memory_table(published: pd.DataFrame, gpu: dict) -> pd.DataFrame:
    """Seed 003's device-memory table (S3-MEM), one column per GPU it lists, and this run's GPU from the
    device's own properties (provenance); a property the run did not record is empty, never typed."""
    p = published[published.study_id == "S3-MEM"]
    table = p.pivot_table(index="quantity", columns="gpu", values="value", aggfunc="first", dropna=False)
    units = p.drop_duplicates("quantity").set_index("quantity").unit
    rows = []
    for quantity, key, scale in DEVICE_MEMORY:
        ours = gpu.get(key)
        rows.append(
            {
                "quantity": quantity,
                "unit": units.get(quantity, ""),
                **{g: table.at[quantity, g] if quantity in table.index else math.nan for g in table.columns},
                gpu.get("name", "this run's GPU"): ours * scale if ours is not None else math.nan,
            }
        )
    return pd.DataFrame(rows)


def cgma_table(estimate: pd.DataFrame, profile_summary: pd.DataFrame, profiles: pd.DataFrame) -> pd.DataFrame:
    """The compute-to-global-memory-access ratio (S3-CGMA) of the naive kernel and every tiled build.

    - model: flops per global access of the kernel's loop as the lecture counts it: the naive loop does
      2 flops for its 2 loads (1; the lecture's 2/3 also counts C[i], which our kernel keeps in a register),
      a w x w tile does 2w flops for 2 loads per thread and step (w);
    - loop: 2 x FMAs / global loads of the innermost loop, counted in the PTX and in the SASS;
    - measured (Nsight Compute, per profiled size): FP32 operations (2 per FFMA, 1 per FADD or FMUL) over
      the global load accesses (requests x 32 threads), and over DRAM bytes x 4 (accesses that reached DRAM).
    """
    cols = ["variant", "w", "model", "loop_ptx", "loop_sass", "size", "regime", "measured_per_access"]
    cols += ["measured_per_dram_access"]
    if estimate.empty:
        return pd.DataFrame(columns=cols)
    e = estimate[estimate.family.isin(["naive", "tiled"])]
    ok = profiles[profiles.status == "ok"] if "status" in profiles else profiles.iloc[0:0]
    wide = ok.pivot_table(index=["variant", "M"], columns="metric", values="value", aggfunc="first")
    rows = []
    for v, g in e.groupby("variant", sort=False):
        fam = g.family.iloc[0]
        w = 1 if fam == "naive" else int(str(v).rsplit("tile", 1)[1])
        level = g.set_index("level").cgma
        base = {"variant": v, "w": w, "model": float(w), "loop_ptx": level.get("ptx"), "loop_sass": level.get("sass")}
        sizes = profile_summary[profile_summary.variant == v] if len(profile_summary) else profile_summary
        if sizes.empty:
            rows.append(base)
        for r in sizes.itertuples():
            m = wide.loc[(v, r.size)] if (v, r.size) in wide.index else pd.Series(dtype=float)
            flops = 2 * m.get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", math.nan)
            flops += m.get("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 0.0)
            flops += m.get("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 0.0)
            accesses = 32 * m.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", math.nan)
            rows.append(
                {
                    **base,
                    "size": r.size,
                    "regime": r.regime,
                    "measured_per_access": flops / accesses if accesses else math.nan,
                    "measured_per_dram_access": flops / (r.dram_bytes / 4) if r.dram_bytes else math.nan,
                }
            )
    return pd.DataFrame(rows, columns=cols).sort_values(["w", "variant", "size"]).reset_index(drop=True)


def cgma_to_peak(gpu: dict, dram_gbs: float) -> float:
    """The CGMA (flops per 4-byte global access served by DRAM) at which the FP32 peak stops being out of
    reach of the measured DRAM bandwidth: peak / (bandwidth / 4)."""
    peak = fp32_peak(gpu)
    return peak / (dram_gbs * 1e9 / 4) if dram_gbs else math.nan

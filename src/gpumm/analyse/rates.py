"""Rates across variants: the ladder (each family's best GFLOP/s at one shape, its share of cuBLAS and its gain over
the rung below), claim S1-C1 of seed 001, and the size from which the GPU beats the CPU end to end (S2-CPU).

Pure functions on the run's tables, tested on the CPU.
"""

import math

import pandas as pd

LADDER_SIZE = 4096  # the size of the ladder's summary table (seed 000's largest) and of the GPU comparison


def best_per_family(summary: pd.DataFrame, shape, timed: str = "kernel") -> pd.DataFrame:
    """Each family's fastest verified instance at ``shape`` (a square size n, or (M, N, K)), device memory."""
    M, N, K = shape if isinstance(shape, tuple) else (shape, shape, shape)
    s = summary[(summary.M == M) & (summary.N == N) & (summary.K == K) & (summary.timed == timed)]
    s = s[(s.status == "ok") & (s.memory_mode == "device")]
    if s.empty:
        return s
    return s.loc[s.groupby("family")["gflops"].idxmax()].set_index("family")


def ladder(summary: pd.DataFrame, families: list[dict], shape, reference: str = "cublas") -> pd.DataFrame:
    """One row per family in catalog order at ``shape`` (a square size or (M, N, K)): best GFLOP/s, its spread,
    share of cuBLAS (the ``reference`` family: cublas_bf16 for the BF16 race), gain over the rung below."""
    best = best_per_family(summary, shape)
    if best.empty:
        best = pd.DataFrame(columns=["variant", "gflops", "iqr_pct"])
    cublas = best["gflops"].get(reference, math.nan)
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


MULTI_THREAD_GAIN = 1.5  # the least speed-up over one thread that shows a BLAS ran on several cores


def blas_threads(summary: pd.DataFrame, every: str = "cpu_blas", one: str = "cpu_blas1") -> dict | None:
    """How many threads the every-core BLAS baseline ran on, for S2-CPU: what the run recorded, or, for runs that
    did not record it, what its speed against the one-thread baseline says.

    ``{"recorded": text or "", "size": n, "gain": one's ms / every's ms, "one_thread": bool}``; None where
    ``every`` was not measured. ``one_thread`` is true where the record says one thread, or, with no record, where
    ``every`` was less than ``MULTI_THREAD_GAIN`` times faster than ``one`` at their largest common square size of
    1024 or more (a BLAS on several cores is several times faster there).
    """
    s = summary[(summary.status == "ok") & (summary.M == summary.N) & (summary.N == summary.K)]
    mine = s[s.variant == every]
    if mine.empty:
        return None
    recorded = next((str(x) for x in mine.get("library", pd.Series(dtype=str)) if isinstance(x, str) and x), "")
    ms = s[s.variant.isin([every, one]) & (s.M >= 1024)].pivot_table(index="M", columns="variant", values="median_ms")
    both = ms.dropna() if {every, one} <= set(ms.columns) else ms.iloc[0:0]
    size = int(both.index.max()) if len(both) else None
    gain = float(both.loc[size, one] / both.loc[size, every]) if size else math.nan
    if recorded:
        threads = recorded.rsplit(", ", 1)[-1].split(" ", 1)[0]
        one_thread = threads == "1"
    else:
        one_thread = bool(size) and gain < MULTI_THREAD_GAIN
    return {"recorded": recorded, "size": size, "gain": gain, "one_thread": one_thread}

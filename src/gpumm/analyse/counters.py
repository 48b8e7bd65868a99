"""The Nsight Compute profiles summed up per variant and size: traffic over the minimum, sectors per request, the
regime of each size.

Pure functions on the run's tables, tested on the CPU.
"""

import math

import pandas as pd


def profile_summary(profiles: pd.DataFrame, l2_bytes: float, footprints: dict[str, int] | None = None) -> pd.DataFrame:
    """One row per variant and profiled size: the regime and the derived counters the pages cite.

    - regime: ``dram`` when A, B and C (3·4·n² bytes) are at least 3× the L2,
      ``cached`` when they fit in half of it (:func:`gpumm.profile.session.regime`);
    - sectors per request of the global loads (4 = a warp's 32 floats in one
      128-byte line);
    - DRAM bytes (read + written) over the minimum 3·4·n² (each matrix moved
      once; 2·4·n² for a transpose or copy): re-reads the caches did not absorb;
    - FLOPs per DRAM byte: 2n³ over the DRAM bytes (S2-CGMA, measured; matrix multiplies only).

    ``footprints`` maps a variant to its arrays' bytes over n² (12, the default, for a matrix multiply).
    """
    footprints = footprints or {}
    ok = profiles[profiles.status == "ok"] if "status" in profiles else profiles.iloc[0:0]
    if ok.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    wide = ok.pivot_table(index=["variant", "M"], columns="metric", values="value", aggfunc="first")
    kernels = ok.drop_duplicates(["variant", "M"]).set_index(["variant", "M"])["kernel"]
    rows = [
        _summary_row(
            variant, int(n), r.get, footprints.get(variant, 12), l2_bytes, kernels.get((variant, r.name[1]), "")
        )
        for (variant, n), r in wide.iterrows()
    ]
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


SUMMARY_COLUMNS = [
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


def _summary_row(variant: str, n: int, get, fp: int, l2_bytes: float, kernel: str) -> dict:
    """One profiled variant and size (``get``: its metric's value by name) in the units the pages cite."""
    from gpumm.profile.session import regime

    minimum = fp * n * n
    st_req = get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", math.nan)
    dram = get("dram__bytes_read.sum", math.nan) + get("dram__bytes_write.sum", math.nan)
    req = get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", math.nan)
    conflicts = get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 0.0) + get(
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0.0
    )
    return {
        "variant": variant,
        "size": n,
        "regime": regime(n, l2_bytes, fp),
        "working_set_over_l2": minimum / l2_bytes if l2_bytes else math.nan,
        "kernel": kernel,
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

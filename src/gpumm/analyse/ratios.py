"""The computation-to-global-memory ratio (S2-CGMA, S3-CGMA): by the model, on a kernel's own loop, and measured by
Nsight Compute; and the ratio the FP32 peak needs at the measured DRAM bandwidth.

Pure functions on the run's tables, tested on the CPU.
"""

import math

import pandas as pd

from gpumm.setup.hardware import fp32_peak


def cgma(fma: int, global_loads: int) -> float:
    """Flops per global memory access of a loop (seed 003's CGMA ratio): 2 per multiply-add."""
    return 2 * fma / global_loads if global_loads else math.inf


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

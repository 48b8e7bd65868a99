"""How the report's tables read: column headers with their units, shares as percentages, one number format.

Tables keep their tidy column names (``median_ms``, ``share_of_copy_kernel``)
in the CSV files; :func:`for_reader` turns a table into what a reader sees:
each known column renamed to a header with its unit, shares (fractions)
shown as percentages, every number in one format (thousands separated, about
three significant digits, no scientific notation but for errors), booleans
as yes/no.
"""

import math

import pandas as pd

# tidy name -> (header, scale): scale 100 turns a fraction into a percentage
LABELS: dict[str, tuple[str, float]] = {
    "variant": ("variant", 1),
    "family": ("family", 1),
    "best_variant": ("best build", 1),
    "rung_below": ("rung below", 1),
    "memory_mode": ("memory", 1),
    "timed": ("timed", 1),
    "status": ("status", 1),
    "reason": ("reason", 1),
    "defines": ("defines", 1),
    "median_ms": ("median (ms)", 1),
    "q25_ms": ("q25 (ms)", 1),
    "q75_ms": ("q75 (ms)", 1),
    "min_ms": ("min (ms)", 1),
    "max_ms": ("max (ms)", 1),
    "s1m_mean_ms": ("mean of the first ≤ 10 (ms)", 1),
    "iqr_pct": ("IQR (% of median)", 1),
    "samples": ("samples", 1),
    "stop": ("stopped by", 1),
    "warmups": ("warm-ups", 1),
    "gflops": ("GFLOP/s", 1),
    "gbs": ("GB/s", 1),
    "median_gbs": ("GB/s", 1),
    "q25_gbs": ("q25 (GB/s)", 1),
    "q75_gbs": ("q75 (GB/s)", 1),
    "share_of_cublas": ("% of cuBLAS", 100),
    "gain_over_rung_below": ("× rung below", 1),
    "share_of_copy_kernel": ("% of copy kernel", 100),
    "share_of_device_copy": ("% of device copy", 100),
    "speedup_over_naive": ("× naive", 1),
    "sectors_per_request": ("load sectors / request", 1),
    "store_sectors_per_request": ("store sectors / request", 1),
    "dram_bytes": ("DRAM bytes", 1),
    "dram_over_minimum": ("DRAM bytes ÷ minimum", 1),
    "flop_per_dram_byte": ("flop / DRAM byte", 1),
    "flop_per_l2_byte": ("flop / L2 byte", 1),
    "roof_gflops": ("roof (GFLOP/s)", 1),
    "share_of_roof": ("% of roof", 100),
    "lowest_roof": ("lowest roof", 1),
    "working_set_over_l2": ("working set ÷ L2", 1),
    "bank_conflicts": ("bank conflicts", 1),
    "achieved_occupancy_pct": ("achieved occupancy (%)", 1),
    "duration_ms": ("duration (ms)", 1),
    "registers": ("registers / thread", 1),
    "threads_per_block": ("threads / block", 1),
    "smem_bytes": ("shared memory (B)", 1),
    "stack_bytes": ("stack (B)", 1),
    "spill_store_bytes": ("spill stores (B)", 1),
    "spill_load_bytes": ("spill loads (B)", 1),
    "barriers": ("barriers", 1),
    "occupancy": ("occupancy (%)", 100),
    "limited_by": ("limited by", 1),
    "arch": ("arch", 1),
    "max_rel_err": ("max error (÷ |A|·|B|)", 1),
    "tolerance": ("tolerance", 1),
    "reference": ("reference", 1),
    "exact_check": ("exact check", 1),
    "batch": ("launches / sample", 1),
    "method": ("timing", 1),
    "sm_clock_mhz": ("SM clock (MHz)", 1),
    "sm_clock_min_mhz": ("lowest SM clock (MHz)", 1),
    "temperature_c": ("temperature (°C)", 1),
    "throttled": ("throttled", 1),
    "rows_ms": ("A by rows (ms / matrix)", 1),
    "cols_ms": ("B by columns (ms / matrix)", 1),
    "ratio": ("rows ÷ columns", 1),
    "copies": ("matrices", 1),
    "regime": ("regime", 1),
    "median_us": ("median (µs / launch)", 1),
    "q25_us": ("q25 (µs)", 1),
    "q75_us": ("q75 (µs)", 1),
    "latency_ns": ("latency (ns)", 1),
    "latency_cycles": ("latency (cycles)", 1),
    "from_bytes": ("from (bytes)", 1),
    "to_bytes": ("to (bytes)", 1),
    "points": ("sizes", 1),
    "transfer": ("copy", 1),
    "gpu_variant": ("GPU variant (end to end)", 1),
    "cpu_variant": ("against", 1),
    "gpu_faster_from": ("GPU faster from size", 1),
    "sizes_compared": ("sizes compared", 1),
    "fma_share": ("FMA share (%)", 100),
    "ptx_instructions": ("PTX instructions", 1),
    "ptx_fma": ("PTX FMAs", 1),
    "ptx_fma_share": ("PTX FMA share (%)", 100),
    "sass_instructions": ("SASS instructions", 1),
    "sass_fma": ("SASS FFMAs", 1),
    "sass_fma_share": ("SASS FFMA share (%)", 100),
    "load_share": ("load share (%)", 100),
    "peak_gflops": ("FP32 peak (GFLOP/s)", 1),
    "potential_gflops": ("potential (GFLOP/s)", 1),
    "required_gbs": ("required (GB/s)", 1),
    "instructions": ("instructions", 1),
    "fma": ("FMAs", 1),
    "global_loads": ("global loads", 1),
    "level": ("level", 1),
    "supported": ("supported", 1),
    "claim": ("claim", 1),
    "ours": ("ours", 1),
    "part": ("part", 1),
}


# Nsight Compute's metric names, shortened for a table header (the full name is the CSV's column)
METRICS = {
    "gpu__time_duration.sum": "duration (ns)",
    "dram__bytes_read.sum": "DRAM read (B)",
    "dram__bytes_write.sum": "DRAM written (B)",
    "lts__t_bytes.sum": "L2 bytes",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "load requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "load sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "store requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "store sectors",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared-store bank conflicts",
    "smsp__sass_inst_executed_op_shared_ld.sum": "shared-load instructions",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy (%)",
    "launch__registers_per_thread": "registers / thread",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": "FADD",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": "FMUL",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "FFMA",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue slots used (%)",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe busy (%)",
    "sm__cycles_active.avg": "SM active cycles",
    "sm__cycles_elapsed.avg": "elapsed cycles",
    "lts__t_sector_hit_rate.pct": "L2 hit rate (%)",
}
METRICS["smsp__average_warps_active_per_issue_active.ratio"] = "warps per issue (all)"
_STALLS = ("long_scoreboard", "short_scoreboard", "mio_throttle", "barrier", "math_pipe_throttle", "not_selected")
_STALLS += ("wait", "no_instruction", "dispatch_stall", "lg_throttle", "branch_resolving", "misc")
for _stall in _STALLS:
    METRICS[f"smsp__average_warps_issue_stalled_{_stall}_per_issue_active.ratio"] = f"stall: {_stall.replace('_', ' ')}"
LABELS.update({m: (short, 1) for m, short in METRICS.items()})

UNITS_NOTE = (
    "GFLOP/s and TFLOP/s are 10⁹ and 10¹² floating-point operations a second, 2·M·N·K over the median time; GB/s "
    "is 10⁹ bytes a second; KiB, MiB and GiB are 2¹⁰, 2²⁰ and 2³⁰ bytes; a size n means n × n matrices (n³ for "
    "a product)."
)

SIZES = {"M", "N", "K", "n", "size", "w", "gpu_faster_from"}  # shown as plain integers: 4096, not 4,096


def label(column) -> str:
    return LABELS.get(column, (column, 1))[0] if isinstance(column, str) else str(column)


def number(x) -> str:
    """One format for every number: 51,192 · 812 · 81.2 · 8.12 · 0.812 · 0.0812; errors below 0.001 as 4.0e-07."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    if a >= 1e-3:
        return f"{x:.3g}"
    return f"{x:.1e}"


def for_reader(df: pd.DataFrame) -> pd.DataFrame:
    """The table as the report shows it: headers with units, percentages, formatted numbers and booleans."""
    out = pd.DataFrame(index=df.index)
    for col in df.columns:
        name, scale = LABELS.get(col, (str(col), 1)) if isinstance(col, str) else (str(col), 1)
        values = df[col]
        present = values.dropna()
        if values.dtype == bool or (
            len(present) and all(isinstance(v, bool) or v in ("True", "False") for v in present.unique())
        ):  # 1 == True in Python: numbers never count as booleans
            out[name] = values.map(lambda v: "—" if pd.isna(v) else ("yes" if v in (True, "True") else "no"))
        elif col in SIZES and pd.api.types.is_numeric_dtype(values):
            out[name] = values.map(lambda v: "—" if pd.isna(v) else str(int(v)))
        elif pd.api.types.is_numeric_dtype(values):
            out[name] = (values * scale).map(number)
        else:
            out[name] = values.map(lambda v: "—" if pd.isna(v) or v == "" else str(v))
    return out

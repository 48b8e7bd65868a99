"""The compiler and profiler parsers, on real output kept as fixtures."""

import math
from pathlib import Path

import pytest

from gpumm.build import ptxas
from gpumm.profile import ncu

FIX = Path(__file__).parents[1] / "fixtures"


def test_ptxas_report_of_tiled_kernel():
    r = ptxas.parse((FIX / "ptxas_tiled16_sm90.txt").read_text(), "matmul_tiled")
    assert r == {
        "entry": "matmul_tiled",
        "arch": "sm_90",
        "registers": 32,
        "stack_bytes": 0,
        "spill_store_bytes": 0,
        "spill_load_bytes": 0,
        "smem_bytes": 2048,  # two 16x16 float tiles
        "barriers": 1,
        "register_cap": None,
    }


def test_ptxas_report_with_register_cap_and_odd_tile():
    r = ptxas.parse((FIX / "ptxas_tiled12_maxrreg16_sm90.txt").read_text(), "matmul_tiled")
    assert r["registers"] == 24 and r["register_cap"] == 24  # ptxas raised the cap of 16 to its floor
    assert r["smem_bytes"] == 2 * 12 * 12 * 4


def test_ptxas_report_with_stack_frame():
    r = ptxas.parse((FIX / "ptxas_stack_sm90.txt").read_text(), "spill")
    assert r["stack_bytes"] == 256 and r["smem_bytes"] == 0 and r["barriers"] == 0


def test_ptxas_missing_entry_is_an_error():
    with pytest.raises(ptxas.PtxasParseError):
        ptxas.parse((FIX / "ptxas_tiled16_sm90.txt").read_text(), "matmul_naive")


METRICS = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "launch__registers_per_thread",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
]


def test_ncu_raw_page_of_naive_kernel():
    rows = {r["metric"]: r for r in ncu.parse((FIX / "ncu_raw_naive_h200.csv").read_text(), METRICS)}
    assert list(rows) == METRICS
    assert all(r["kernel"] == "matmul_naive" and r["launch"] == "0" for r in rows.values())
    assert rows["gpu__time_duration.sum"]["unit"] == "ns"
    assert rows["dram__bytes_read.sum"]["unit"] == "byte"
    # 1024^3 multiply-adds, one FFMA each; 2 loads of 4 B each per FMA, 32 threads per request
    assert rows["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]["value"] == 1024**3
    assert rows["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]["value"] == 2 * 1024**3 / 32
    assert rows["launch__registers_per_thread"]["value"] == 32


def test_ncu_library_kernel_name_is_kept():
    rows = ncu.parse((FIX / "ncu_raw_cublas_h200.csv").read_text(), ["gpu__time_duration.sum"])
    assert len(rows) == 1 and "gemm" in rows[0]["kernel"]


def test_ncu_thousands_separators_na_and_noise():
    text = "\n".join(
        [
            "==PROF== Connected to process 1",
            '"ID","Kernel Name","a__b.sum","c__d.sum","e__f.pct"',
            '"","","byte","","%"',
            '"0","k","4,197,376","n/a","12.5"',
            "==PROF== Disconnected",
        ]
    )
    rows = ncu.parse(text)
    assert [r["metric"] for r in rows] == ["a__b.sum", "c__d.sum", "e__f.pct"]
    assert rows[0]["value"] == 4197376 and rows[0]["unit"] == "byte"
    assert math.isnan(rows[1]["value"])
    assert rows[2]["value"] == 12.5 and rows[2]["unit"] == "%"


def test_ncu_metric_asked_for_but_absent_is_nan():
    rows = ncu.parse((FIX / "ncu_raw_naive_h200.csv").read_text(), ["not__there.sum"])
    assert len(rows) == 1 and math.isnan(rows[0]["value"])


def test_ncu_no_table_gives_no_rows():
    assert ncu.parse("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n") == []


def test_a_failed_build_names_nvccs_first_error_line():
    """Issue 37: the console line of a failed build names the variant and nvcc's first error."""
    from gpumm.build import nvcc

    out = (
        "kernels/matmul/tiled.cu(12): warning #177-D: variable never used\n"
        'kernels/matmul/tiled.cu(40): error: identifier "TILEX" is undefined\n'
        "kernels/matmul/tiled.cu(41): error: expected a ';'\n2 errors detected\n"
    )
    assert nvcc.first_error(out) == 'kernels/matmul/tiled.cu(40): error: identifier "TILEX" is undefined'
    assert nvcc.first_error("\nnvcc fatal   : Unsupported gpu architecture 'sm_1'\n").startswith("nvcc fatal")
    assert nvcc.first_error("") == "no output"


def test_a_profiled_percentage_outside_0_to_100_is_kept_marked_and_used_by_no_table():
    """Nsight Compute's percentages can fall outside 0-100 when it could not collect them accurately (an L2 hit
    rate of 104.43% for cuBLAS at 1024^3 on an H200 stopped that run at collect): the profile step marks such a
    value, the raw check passes the marked row, and the table of counters leaves it out."""
    import math

    import pandas as pd

    from gpumm.analyse import counters
    from gpumm.profile import session

    occupancy = "sm__warps_active.avg.pct_of_peak_sustained_active"
    rows = [
        {"launch": 9, "kernel": "k", "metric": "lts__t_sector_hit_rate.pct", "value": 104.43, "unit": "%"},
        {"launch": 9, "kernel": "k", "metric": occupancy, "value": 61.0, "unit": "%"},
        {"launch": 9, "kernel": "k", "metric": "gpu__time_duration.sum", "value": 2.0e6, "unit": "ns"},
        {"launch": 9, "kernel": "k", "metric": "dram__bytes_read.sum", "value": float("nan"), "unit": "byte"},
    ]
    recs = session._records("cublas", {9: rows}, [(9, 0)], [{"name": "cublas", "size": 1024}])
    assert [r["status"] for r in recs] == [session.OUT_OF_RANGE, "ok", "ok", "ok"]
    assert "104.43%" in recs[0]["reason"] and recs[1]["reason"] == ""
    summary = counters.profile_summary(pd.DataFrame(recs), 50e6)
    assert summary.achieved_occupancy_pct.tolist() == [61.0] and summary.duration_ms.tolist() == [2.0]
    # an occupancy over 100: marked, and the table has none
    recs = session._records(
        "cublas", {9: rows[:1] + [dict(rows[1], value=101.5)] + rows[2:]}, [(9, 0)], [{"name": "cublas", "size": 1024}]
    )
    assert recs[1]["status"] == session.OUT_OF_RANGE
    assert math.isnan(counters.profile_summary(pd.DataFrame(recs), 50e6).achieved_occupancy_pct.iloc[0])

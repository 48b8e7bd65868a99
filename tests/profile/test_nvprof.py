"""The nvprof importer on real nvprof output (tests/fixtures/nvprof/, sources in SOURCES.md), and on files
that are not nvprof's."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from gpumm.profile import nvprof
from gpumm.setup import paths

FIX = Path(__file__).parents[1] / "fixtures" / "nvprof"


@pytest.mark.parametrize(
    "name, kind",
    [
        ("magus_matrixMul_gtx1080ti_metrics", "metrics"),
        ("ieee2017_jacobi_global_k20c_metrics", "metrics"),
        ("ieee2017_j3d27pt_k20c_events", "events"),
        ("magus_matrixMul_gtx1080ti_gputrace", "trace"),
        ("cuda_timeline_gtx950_gputrace", "trace"),
        ("ieee2017_jacobi_global_k20c_gputrace", "trace"),
        ("ieee2017_jacobi_global_k20c_summary", "summary"),
        ("gpgpu_project_base_model_ACET_summary", "summary"),
    ],
)
def test_every_layout_is_recognised(name, kind):
    assert nvprof.kind((FIX / f"{name}.csv").read_text()) == kind
    assert len(nvprof.import_file(FIX / f"{name}.csv", "naive")) > 0


def test_values_with_units_and_levels():
    assert nvprof.value("85.200000%") == (85.2, "%")
    assert nvprof.value("976.562500KB/s") == (976562.5, "byte/second")
    assert nvprof.value("12.5GB/s") == (12.5e9, "byte/second")
    assert nvprof.value("High (7)") == (7.0, "level")
    assert nvprof.value("8.192000e+03") == (8192.0, "")
    v, unit = nvprof.value("")
    assert v != v and unit == ""


def test_metrics_map_to_the_nsight_compute_names_the_report_uses():
    """matrixMul on a GTX 1080 Ti: the file's own numbers, converted by hand."""
    df = nvprof.import_file(FIX / "magus_matrixMul_gtx1080ti_metrics.csv", "tiled_tile32", 320)
    m = df.set_index("metric").value
    assert m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 1024000  # gld_transactions
    assert m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 1024000 / 8  # per request: 8
    assert m["dram__bytes_read.sum"] == 32 * 11963  # dram_read_transactions (Avg) x 32 bytes
    assert m["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 65536000  # flop_count_sp_fma
    assert m["nvprof:gld_transactions_per_request"] == 8
    assert set(df.origin) == {"imported"} and set(df.variant) == {"tiled_tile32"} and set(df.M) == {320}
    assert df.kernel.iloc[0] == "void matrixMulCUDA<int=32>(float*, float*, float*, int, int)"
    assert (df.invocations == 301).all()
    occ = m["sm__warps_active.avg.pct_of_peak_sustained_active"]
    assert 0 < occ <= 100  # achieved_occupancy is a fraction in nvprof, a percentage in ncu


def test_gpu_trace_gives_each_launch_its_duration_in_nanoseconds():
    df = nvprof.import_file(FIX / "cuda_timeline_gtx950_gputrace.csv", "naive")
    d = df[df.metric == "gpu__time_duration.sum"]
    raw = pd.read_csv(FIX / "cuda_timeline_gtx950_gputrace.csv", skiprows=3, header=0).iloc[1:]
    kernels = raw[raw["Grid X"].notna()]
    assert len(d) == len(kernels)  # copies are left out
    assert d.value.tolist() == pytest.approx([float(x) * 1e3 for x in kernels.Duration])  # us -> ns
    assert not d.kernel.str.contains(r"\[\d+\]$").any()  # correlation ids dropped


def test_summary_average_time_per_kernel():
    df = nvprof.import_file(FIX / "gpgpu_project_base_model_ACET_summary.csv", "naive")
    row = df[df.kernel.str.startswith("hysteresis_kernel")].iloc[0]
    assert row.value == pytest.approx(93.993 * 1e3) and row.invocations == 13672  # Avg in us
    assert not df.kernel.str.startswith("[CUDA").any()


@pytest.mark.parametrize(
    "text, says",
    [
        ("just some text\n1,2,3\n", "no '==PID==' header lines"),
        ((Path(__file__).parents[1] / "fixtures" / "ncu_raw_naive_h200.csv").read_text(), "not nvprof output"),
        ((FIX / "ieee2017_j3d7pt_titan_gputrace_metrics_events.csv").read_text(), "no table of a layout"),
    ],
)
def test_other_files_get_a_one_line_error(tmp_path, text, says):
    f = tmp_path / "profile.csv"
    f.write_text(text)
    with pytest.raises(nvprof.NvprofError) as err:
        nvprof.import_file(f, "naive")
    msg = str(err.value)
    assert says in msg and str(f) in msg and "expected nvprof --csv output" in msg and "\n" not in msg


def test_the_command_imports_or_says_why_in_one_line(tmp_path, monkeypatch):
    env_root = tmp_path / "imported"
    monkeypatch.setattr(paths, "IMPORTED", env_root)
    from gpumm.cli import main

    assert (
        main(["import-profile", str(FIX / "magus_matrixMul_gtx1080ti_metrics.csv"), "--variant", "tiled_tile32"]) == 0
    )
    assert (env_root / "tiled_tile32" / "magus_matrixMul_gtx1080ti_metrics.csv").is_file()
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    out = subprocess.run(
        [sys.executable, "-m", "gpumm", "import-profile", str(bad), "--variant", "naive"],
        capture_output=True,
        text=True,
        cwd=paths.ROOT,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr and str(bad) in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_only_nvprofs_own_preamble_and_headers_are_read(tmp_path):
    """Issue 37: one '==1==' line and another tool's header is not nvprof's output, nor is nvprof's preamble with
    a header nvprof never writes."""
    f = tmp_path / "other.csv"
    f.write_text("==1== hello\nMetric Name,Value\nipc,1.5\n")
    with pytest.raises(nvprof.NvprofError, match="not nvprof's"):
        nvprof.import_file(f, "naive")
    f.write_text('==1== NVPROF is profiling process 1, command: ./a\n"Metric Name","Value"\n"ipc","1.5"\n')
    with pytest.raises(nvprof.NvprofError, match=r"no table of a layout this importer reads \(its header: Metric"):
        nvprof.import_file(f, "naive")


@pytest.mark.parametrize("bad", ["-1", "nan", "1e308", "inf", "101.000000%"])
def test_an_impossible_value_is_refused_with_its_row(tmp_path, bad):
    """A count or a percentage no profiler writes (-1, NaN, 1e308, infinity, 101% of a share) stops the import,
    naming the file, its row and the metric; an efficiency above 100% (nvprof's own ratio) passes."""
    text = (FIX / "magus_matrixMul_gtx1080ti_metrics.csv").read_text().splitlines()
    row = next(i for i, line in enumerate(text) if '"achieved_occupancy"' in line or '"sm_efficiency"' in line)
    name = "achieved_occupancy" if '"achieved_occupancy"' in text[row] else "sm_efficiency"
    fields = text[row].rsplit(",", 1)
    text[row] = f"{fields[0]},{bad}"
    f = tmp_path / "bad.csv"
    f.write_text("\n".join(text) + "\n")
    with pytest.raises(nvprof.NvprofValueError) as err:
        nvprof.import_file(f, "naive")
    msg = str(err.value)
    assert str(f) in msg and f"row {row + 1} ({name}" in msg and "\n" not in msg
    assert any(r.nvprof_metric == "shared_efficiency" and r.value > 100 for r in
               nvprof.import_file(FIX / "magus_matrixMul_gtx1080ti_metrics.csv", "naive").itertuples())  # fmt: skip

"""tools/model/trace.py (issue 40, an exploration's tool): the stamps it puts into the TMA weight stream land at
the lines of today's kernels/matmul_bf16/stream_tma.cu, and a kernel that lost one of them is refused by name."""

import importlib.util
import re
import shutil

import pytest

from gpumm.setup import paths


def _trace():
    path = paths.ROOT / "tools" / "model" / "trace.py"
    spec = importlib.util.spec_from_file_location("model_trace", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_trace_puts_every_stamp_into_todays_kernel_once():
    trace = _trace()
    src = trace.traced(trace.KERNEL.read_text())
    stamped = re.findall(r"st\[(\d+)\] = now\(\);", src)
    assert sorted(map(int, stamped)) == list(range(len(trace.STAMPS))), stamped
    assert src.count("atomicAdd(&trace_n") == 1 and "__device__ unsigned trace_n;" in src


def test_a_kernel_without_a_stamped_line_is_refused_by_name():
    trace = _trace()
    src = trace.KERNEL.read_text().replace("    store_rows(d, C, M, N, n0, tid);\n", "")
    with pytest.raises(trace.TraceError, match="store_rows"):
        trace.traced(src)


def test_the_traced_kernel_compiles(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: cannot compile the kernels here")
    from gpumm.build import nvcc

    trace = _trace()
    src = tmp_path / "trace.cu"
    src.write_text(trace.traced(trace.KERNEL.read_text()))
    flags = (f"-I{trace.KERNEL.parent}", "-DMAX_M=16", "-DSTAGES=5", "-DKSUB=4", "-DPDL=1", "-DPDL_L2=0")
    nvcc.compile_into(src, "sm_90a", tmp_path / "out", flags, "trace")
    assert (tmp_path / "out" / "kernel.cubin").stat().st_size > 0
    assert not list((tmp_path / "out").glob("*.tmp"))

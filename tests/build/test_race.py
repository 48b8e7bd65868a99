"""The race to cuBLAS is FP32 FFMA only: no rung may use a tensor core (issue 11).

Every matrix-multiply build is checked where it is compiled
(tests/build/test_project.py: PTX and SASS of each catalog variant; tests/run/test_gpu.py:
the SASS built on the GPU machine). These tests show the check can fail: a
kernel that does use a tensor core is caught.
"""

import shutil
import subprocess

import pytest

from gpumm.build import loops
from gpumm.build import nvcc as build

WMMA = r"""
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void tc(const half *a, const half *b, float *c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
"""


def ptx(source, out):
    cmd = build.command(source, "sm_90", out, "ptx")
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return out.read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH: cannot compile the control kernel")
def test_a_tensor_core_kernel_is_caught(tmp_path):
    src = tmp_path / "tc.cu"
    src.write_text(WMMA)
    found = loops.tensor_core_ops(ptx(src, tmp_path / "tc.ptx"), "")
    assert found["ptx_tensor_core"] >= 1
    assert found["sass_tensor_core"] is None  # no SASS given: unknown, not zero


def test_sass_tensor_core_and_ffma_counts():
    sass = """
        Function : k
        /*0010*/                   FFMA R4, R2, R3, R4 ;
        /*0020*/              @P0  FFMA R5, R2, R3, R5 ;
        /*0030*/                   HMMA.16816.F32 R8, R12, R16, R8 ;
        /*0040*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], R24 ;
        /*0050*/                   IADD3 R1, R1, 0x1, RZ ;
    """
    found = loops.tensor_core_ops("", sass)
    assert found == {"ptx_tensor_core": 0, "sass_tensor_core": 2, "sass_ffma": 2}

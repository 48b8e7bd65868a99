"""The race to cuBLAS is FP32 FFMA only: no rung may use a tensor core (issue 11).

The PTX of every matrix-multiply kernel is compiled here (nvcc runs without a
GPU); the GPU machine, which has cuobjdump, checks the SASS the build writes
(tests/test_gpu.py). A kernel that does use a tensor core is caught: that is
the first test.
"""

import subprocess

import pytest

from gpumm import build, catalog, loops

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
MATMULS = [v for v in catalog.expand({name: {} for name in catalog.load()}) if v.is_cuda and v.op == "matmul"]


def ptx(source, out, flags=()):
    cmd = build.command(source, "sm_90", out, "ptx", tuple(flags))
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return out.read_text()


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


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant", [v for v in MATMULS if v.id == v.family or v.id.endswith(("tile16", "tile32"))], ids=lambda v: v.id
)
def test_no_matmul_kernel_uses_a_tensor_core(variant, tmp_path):
    text = ptx(variant.source, tmp_path / "k.ptx", build.variant_flags(variant))
    assert f".entry {variant.entry}(" in text or f".entry {variant.entry} (" in text
    found = loops.tensor_core_ops(text, "")
    assert found["ptx_tensor_core"] == 0, variant.id
    assert "fma.rn.f32" in text  # FP32 fused multiply-adds, the race's only arithmetic

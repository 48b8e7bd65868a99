"""Loop counting on real compiler output, and the analyses on known numbers."""

import math
from pathlib import Path

import pandas as pd
import pytest

from conftest import HOPPER
from gpumm.analyse import rates, ratios, seed000
from gpumm.build import loops
from gpumm.setup import hardware

FIX = Path(__file__).parents[1] / "fixtures"
H100 = HOPPER


def read(name):
    return (FIX / name).read_text()


def test_unrolled_tiled_loop_has_sixteen_fmas_per_tile():
    ptx = loops.ptx_loop(read("tiled16_unroll1_sm90.ptx"), "matmul_tiled")
    sass = loops.sass_loop(read("tiled16_unroll1_sm90.sass"), "matmul_tiled")
    for loop in (ptx, sass):
        assert loop.fma == 16 and loop.global_loads == 2  # one tile step: 16 multiply-adds, A and B loaded once
    assert ptx.instructions == 76 and ptx.shared_loads == 32
    assert sass.instructions == 64  # seed 000 counted 63 on G80's PTX
    assert sass.fma_share == pytest.approx(0.25)


def test_naive_loop_is_the_unrolled_body_not_its_remainder():
    # the compiler unrolls naive's k loop (by 4 in PTX, by 16 in SASS) and leaves a remainder loop beside it
    ptx = loops.ptx_loop(read("naive_sm90.ptx"), "matmul_naive")
    sass = loops.sass_loop(read("naive_sm90.sass"), "matmul_naive")
    assert (ptx.fma, ptx.global_loads, ptx.instructions) == (4, 8, 21)
    assert (sass.fma, sass.global_loads, sass.instructions) == (16, 32, 88)
    no_sass = "# no SASS: cuobjdump not found\n"
    assert loops.analyse(read("naive_sm90.ptx"), no_sass, "matmul_naive")["status"] == "missing"


def test_rolled_tiled_loop_is_one_fma():
    for loop in (
        loops.ptx_loop(read("tiled16_unroll0_sm90.ptx"), "matmul_tiled"),
        loops.sass_loop(read("tiled16_unroll0_sm90.sass"), "matmul_tiled"),
    ):
        assert loop.fma == 1 and loop.instructions == 8 and loop.global_loads == 0 and loop.branches == 1


def test_no_fma_loop_and_unknown_entry_are_errors():
    with pytest.raises(loops.LoopError):
        loops.ptx_loop(read("tiled16_unroll1_sm90.ptx"), "matmul_naive")
    with pytest.raises(loops.LoopError):
        loops.sass_loop(read("tiled16_unroll1_sm90.sass"), "matmul_naive")
    with pytest.raises(loops.LoopError, match="no loop"):
        loops.ptx_loop(".visible .entry k(\n)\n{\n\tadd.f32 %f1, %f2, %f3;\n\tret;\n}\n", "k")


def test_seed_000s_estimate_is_reproduced_with_g80_figures():
    # G80: 128 scalar processors at 1.35 GHz; here as one 'SM' of 128 lanes
    g80 = {"compute_capability": "9.0", "sm_count": 1, "sm_clock_khz": 1350000}
    est = seed000.ptx_estimate(fma=16, instructions=63, global_loads=2, gpu=g80)
    assert est["peak_gflops"] == pytest.approx(345.6)
    assert est["potential_gflops"] == pytest.approx(87.77, abs=0.01)  # seed 000 Section 3.7
    assert est["required_gbs"] == pytest.approx(21.94, abs=0.01)


def test_peak_of_an_h100():
    assert hardware.fp32_peak(H100) == pytest.approx(66.9e12, rel=1e-3)
    assert math.isnan(hardware.fp32_peak({"compute_capability": "1.0", "sm_count": 16, "sm_clock_khz": 1}))


@pytest.mark.parametrize(
    "threads, regs, smem, blocks, occ, limiter",
    [
        (256, 32, 2048, 8, 1.0, "warps"),  # 16x16 tile: full occupancy
        (64, 80, 1024, 12, 0.375, "registers"),  # 80 registers: 2560 per warp, 25 warps' worth
        (16, 32, 128, 32, 0.5, "blocks"),  # 4x4 tiles: 32 blocks of half a warp
        (1024, 16, 200 * 1024, 1, 0.5, "shared memory"),  # two blocks by warps, one by shared memory
        (128, 32, 100 * 1024, 2, 0.125, "shared memory"),  # 2 x (100 KiB + 1 KiB) fit in 228 KiB
    ],
)
def test_occupancy(threads, regs, smem, blocks, occ, limiter):
    got = seed000.occupancy(threads, regs, smem, H100)
    assert (got["blocks_per_sm"], got["occupancy"], got["limited_by"]) == (blocks, occ, limiter)


def test_cgma():
    assert ratios.cgma(1, 2) == 1.0  # naive: a multiply-add per two loads
    assert ratios.cgma(16, 2) == 16.0


def summary(rows):
    base = dict(N=0, K=0, timed="kernel", status="ok", memory_mode="device")
    out = pd.DataFrame([{**base, **r} for r in rows])
    out["N"], out["K"] = out["M"], out["M"]
    return out


def test_ladder_and_claim():
    s = summary(
        [
            dict(family="naive", variant="naive", M=4096, gflops=100.0),
            dict(family="tiled", variant="tiled_tile8", M=4096, gflops=150.0),
            dict(family="tiled", variant="tiled_tile16", M=4096, gflops=300.0),
            dict(family="unrolled", variant="unrolled", M=4096, gflops=2000.0),
            dict(family="cublas", variant="cublas", M=4096, gflops=4000.0),
            dict(family="naive", variant="naive", M=8192, gflops=90.0),
            dict(family="unrolled", variant="unrolled", M=8192, gflops=1800.0),
            dict(family="cublas", variant="cublas", M=8192, gflops=3000.0),
            dict(family="cublas", variant="cublas", M=16384, gflops=3500.0),  # only cuBLAS this large
        ]
    )
    fams = [
        {"family": "naive"},
        {"family": "tiled", "rung_below": "naive"},
        {"family": "unrolled", "rung_below": "tiled"},
        {"family": "cublas", "rung_below": "unrolled"},
    ]
    lad = rates.ladder(s, fams, 4096).set_index("family")
    assert lad.loc["tiled", "best_variant"] == "tiled_tile16"
    assert lad.loc["tiled", "gain_over_rung_below"] == pytest.approx(3.0)
    assert lad.loc["unrolled", "share_of_cublas"] == pytest.approx(0.5)
    assert math.isnan(lad.loc["naive", "gain_over_rung_below"])

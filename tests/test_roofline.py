"""The roofline arithmetic, with values worked by hand."""

import math

import pandas as pd
import pytest

from gpumm import analysis, roofline

H100 = {"compute_capability": "9.0", "sm_count": 132, "sm_clock_khz": 1_980_000}


def test_fp32_peak_of_an_h100_is_sms_times_lanes_times_two_times_clock():
    # 132 SMs x 128 FP32 lanes x 2 flops x 1.98e9 Hz = 66,908.16 GFLOP/s
    assert analysis.fp32_peak(H100) == pytest.approx(66_908.16e9)


def test_attainable_is_the_lower_roof():
    peak, bw = 60e12, 3e12  # ridge at 20 flop/byte
    assert roofline.ridge(peak, bw) == pytest.approx(20.0)
    assert roofline.attainable(5.0, peak, bw) == pytest.approx(15e12)  # 5 x 3e12: memory-bound
    assert roofline.attainable(100.0, peak, bw) == pytest.approx(60e12)  # the compute roof
    assert math.isnan(roofline.attainable(0.0, peak, bw))


def test_points_place_each_kernel_under_its_roof():
    n = 1000  # 2e9 flops
    profiles = pd.DataFrame(
        [
            # variant a: 1e8 DRAM bytes (20 flop/byte, at the ridge), 4e8 L2 bytes
            ("a", "dram__bytes_read.sum", 8e7),
            ("a", "dram__bytes_write.sum", 2e7),
            ("a", "lts__t_bytes.sum", 4e8),
            # variant b: 1e9 DRAM bytes (2 flop/byte): memory-bound
            ("b", "dram__bytes_read.sum", 9e8),
            ("b", "dram__bytes_write.sum", 1e8),
        ],
        columns=["variant", "metric", "value"],
    ).assign(M=n, N=n, K=n, status="ok")
    summary = pd.DataFrame(
        {"variant": ["a", "b"], "M": n, "N": n, "K": n, "timed": "kernel", "memory_mode": "device", "status": "ok"}
        | {"gflops": [30_000.0, 3_000.0]}
    )
    p = roofline.points(summary, profiles, peak=60e12, bandwidth=3e12).set_index("variant")
    assert p.loc["a", "flop_per_dram_byte"] == pytest.approx(20.0)
    assert p.loc["a", "flop_per_l2_byte"] == pytest.approx(5.0)
    assert p.loc["a", "roof_gflops"] == pytest.approx(60_000.0)
    assert p.loc["a", "share_of_roof"] == pytest.approx(0.5)
    assert p.loc["a", "bound"] == "compute"  # at the ridge the compute roof binds
    assert p.loc["b", "flop_per_dram_byte"] == pytest.approx(2.0)
    assert p.loc["b", "roof_gflops"] == pytest.approx(6_000.0)  # 2 flop/byte x 3e12 byte/s
    assert p.loc["b", "share_of_roof"] == pytest.approx(0.5)
    assert p.loc["b", "bound"] == "memory"
    assert math.isnan(p.loc["b", "flop_per_l2_byte"])  # no L2 counter profiled


def test_ladder_gives_share_of_cublas_and_gain_over_the_rung_below():
    rows = [("naive", 5_000.0), ("warptile", 36_000.0), ("double_buffer", 45_000.0), ("cublas", 50_000.0)]
    summary = pd.DataFrame(
        [
            {"family": f, "variant": f, "gflops": g, "M": 4096, "N": 4096, "K": 4096}
            | {"timed": "kernel", "status": "ok", "memory_mode": "device"}
            for f, g in rows
        ]
    )
    fams = [
        {"family": "naive"},
        {"family": "warptile", "rung_below": "naive"},
        {"family": "double_buffer", "rung_below": "warptile"},
        {"family": "cublas", "rung_below": "double_buffer"},
    ]
    t = analysis.ladder(summary, fams, 4096).set_index("family")
    assert t.loc["double_buffer", "share_of_cublas"] == pytest.approx(0.9)
    assert t.loc["double_buffer", "gain_over_rung_below"] == pytest.approx(1.25)
    assert t.loc["warptile", "gain_over_rung_below"] == pytest.approx(7.2)

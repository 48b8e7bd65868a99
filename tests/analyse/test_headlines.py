"""The index's headline numbers (gpumm.analyse.headlines), from small tables made by hand."""

import pandas as pd
import pytest

from gpumm.analyse import headlines


def _row(variant, kind, n, mode, timed, ms):
    flops = 2 * n**3
    return {
        "variant": variant,
        "kind": kind,
        "M": n,
        "N": n,
        "K": n,
        "memory_mode": mode,
        "timed": timed,
        "status": "ok",
        "median_ms": ms,
        "gflops": flops / (ms * 1e-3) / 1e9,
    }


def _tables():
    rows = [
        _row("naive", "cuda", 4096, "device", "kernel", 25.0),
        _row("double_buffer", "cuda", 4096, "device", "kernel", 3.0),
        _row("cpu_blas", "cpu", 4096, "host", "kernel", 1.0),  # faster than all: not a GPU kernel, never the best
        _row("cublas", "cublas", 4096, "device", "kernel", 2.4),
        _row("cublas", "cublas", 2048, "device", "kernel", 0.5),
        _row("cublas", "cublas", 2048, "zero_copy", "kernel", 15.0),
        _row("cublas", "cublas", 1024, "zero_copy", "kernel", 20.0),  # the largest size both have is the one shown
        _row("cublas", "cublas", 1024, "device", "kernel", 0.1),
    ]
    return {
        "summary": pd.DataFrame(rows),
        "transpose_goal": pd.DataFrame(
            [
                {
                    "measured": True,
                    "best": "transpose_vec4",
                    "of_copy_kernel": 0.956,
                    "of_device_copy": 0.847,
                    "met": False,
                }
            ]
        ),
        "coalescing_ratio": pd.DataFrame(
            {"regime": ["dram", "dram", "l2"], "n": [1024, 2048, 1024], "ratio": [4.10, 4.17, 18.7]}
        ),
        "overhead": pd.DataFrame(
            [
                {"what": "empty kernel", "method": "graph", "median_us": 0.689},
                {"what": "empty kernel", "method": "events", "median_us": 9.0},
            ]
        ),
    }


def test_best_share_is_the_fastest_gpu_kernel_against_cublas():
    b = headlines.best_share(_tables()["summary"], 4096)
    assert b["variant"] == "double_buffer" and b["share"] == pytest.approx(2.4 / 3.0)
    assert headlines.best_share(_tables()["summary"], 8192) is None  # nothing measured there


def test_headlines_read_the_tables_and_link_their_sections():
    h = headlines.headlines(_tables()).set_index("key")
    assert list(h.columns) == [c for c in headlines.COLUMNS if c != "key"]
    assert h.at["best_share_4096", "value"].startswith("80.0% (double_buffer:")
    assert (h.at["best_share_4096", "page"], h.at["best_share_4096", "anchor"]) == ("ladder", "race")
    assert h.at["transpose_share", "value"] == "95.6% (transpose_vec4, own sets); 84.7% of the device-to-device copy"
    assert h.at["rows_over_cols", "value"] == "4.1× to 4.2× slower"  # the DRAM regime only, not the L2's 18.7
    assert h.at["zero_copy_cublas", "value"] == "30.0× slower at 2048³ (30.0× to 200.0× over 1024³ to 2048³)"
    assert h.at["launch_floor", "value"] == "0.69 µs per launch" and h.at["launch_floor", "number"] == 0.689
    assert (h.at["launch_floor", "page"], h.at["launch_floor", "anchor"]) == ("profiles", "launch-floor")
    assert "cold_managed_cublas" not in h.index and "best_share_8192" not in h.index  # not in the run: left out

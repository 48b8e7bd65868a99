"""The tuning search's choice (gpumm.analyse.race.tuning_search) and the race's chain, on tables made by hand."""

import math

import pandas as pd

from gpumm.analyse import race


def _row(variant, n, gflops, status="ok", clock=1980.0):
    return {
        "variant": variant,
        "defines": "X=1",
        "M": n,
        "N": n,
        "K": n,
        "timed": "kernel",
        "memory_mode": "device",
        "status": status,
        "gflops": gflops if status == "ok" else math.nan,
        "sm_clock_mhz": clock,
    }


def test_the_fastest_verified_candidate_is_chosen_and_a_failed_one_never():
    summary = pd.DataFrame(
        [
            _row("cublas", 4096, 50000.0),
            _row("cublas", 8192, 51000.0),
            _row("interior_a", 4096, 45000.0),
            _row("interior_a", 8192, 46000.0),
            _row("interior_b", 4096, 47000.0, status="failed"),  # fastest, but it failed its checks
            _row("interior_c", 4096, 46000.0, clock=1830.0),
            _row("interior_c", 8192, 44000.0),
            _row("other_x", 4096, 49000.0),  # not a candidate of this search
        ]
    )
    t = race.tuning_search(summary, {"interior": ["a", "b", "c", "d"]}, sizes=(4096, 8192))
    assert len(t) == 8 and set(t.variant) == {"interior_a", "interior_b", "interior_c", "interior_d"}
    chosen = t[t.chosen]
    assert set(chosen.candidate) == {"c"} and len(chosen) == 2  # both sizes of the winner are marked
    at = t[t["size"] == 4096].set_index("candidate")
    assert at.at["b", "status"] == "failed" and math.isnan(at.at["b", "gflops"])
    assert at.at["d", "status"] == "not timed"
    assert at.at["c", "share_of_cublas"] == 46000.0 / 50000.0 and at.at["c", "sm_clock_mhz"] == 1830.0
    # at 8192 candidate a is faster, but the choice is made at 4096 (the ladder's size)
    assert not t[(t.candidate == "a")].chosen.any()


def test_no_verified_candidate_means_no_choice():
    summary = pd.DataFrame([_row("cublas", 4096, 5e4), _row("interior_a", 4096, 4e4, status="failed")])
    t = race.tuning_search(summary, {"interior": ["a"]}, sizes=(4096,))
    assert not t.chosen.any() and t.status.tolist() == ["failed"]


def test_the_chain_follows_rung_below_from_cublas_down_to_unrolled():
    families = [
        {"family": "naive", "rung_below": None},
        {"family": "tiled", "rung_below": "naive"},
        {"family": "unrolled", "rung_below": "outer_product"},
        {"family": "blocktile_1d", "rung_below": "unrolled"},
        {"family": "double_buffer", "rung_below": "blocktile_1d"},
        {"family": "interior", "rung_below": "double_buffer"},
        {"family": "cublas", "rung_below": "interior"},
    ]
    assert race.chain(families) == ["naive", "unrolled", "blocktile_1d", "double_buffer", "interior", "cublas"]
    assert race.chain([f for f in families if f["family"] != "cublas"]) == []  # no cuBLAS: no race

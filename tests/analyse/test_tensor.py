"""The race on the tensor cores (issue 30): the BF16 ladder, its goal, its roofs and the headlines, on hand-made
tables."""

import math

import pandas as pd
import pytest

from conftest import HOPPER
from gpumm.analyse import headlines, tensor
from gpumm.setup import hardware

FAMS = [
    {"family": "bf16_wgmma", "rung_below": None},
    {"family": "bf16_persistent", "rung_below": "bf16_wgmma"},
    {"family": "cublas_bf16", "rung_below": "bf16_persistent"},
]


def _summary(rates: dict[tuple[str, int], float], op: str = "matmul_bf16") -> pd.DataFrame:
    rows = []
    for (variant, n), tflops in rates.items():
        kind = "cublas" if variant.startswith("cublas") else "cuda"
        rows.append(
            {"variant": variant, "family": variant, "kind": kind, "op": op, "M": n, "N": n, "K": n,
             "timed": "kernel", "memory_mode": "device", "status": "ok", "gflops": 1e3 * tflops, "iqr_pct": 0.5}
        )  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("share_4096, met", [(0.999, False), (1.0, True), (1.02, True)])
def test_the_goal_is_read_unrounded_at_both_sizes(share_4096, met):
    s = _summary(
        {
            ("bf16_wgmma", 4096): 600,
            ("bf16_persistent", 4096): 700 * share_4096,
            ("cublas_bf16", 4096): 700,
            ("bf16_wgmma", 8192): 600,
            ("bf16_persistent", 8192): 780,
            ("cublas_bf16", 8192): 750,
        }
    )
    lad = tensor.ladder(s, FAMS)
    assert set(lad.M) == {4096, 8192} and len(lad) == 6
    row = lad[(lad.M == 4096) & (lad.family == "bf16_persistent")].iloc[0]
    assert row.share_of_cublas == pytest.approx(share_4096) and row.gain_over_rung_below == pytest.approx(
        700 * share_4096 / 600
    )
    g = tensor.goal(lad)
    assert g["met"] is met and g["best"][4096] == ("bf16_persistent", pytest.approx(share_4096))
    assert g["best"][8192][1] == pytest.approx(780 / 750)


def test_a_size_not_measured_leaves_the_goal_unmet():
    lad = tensor.ladder(_summary({("bf16_persistent", 4096): 800, ("cublas_bf16", 4096): 700}), FAMS)
    g = tensor.goal(lad)
    assert g["best"][8192] is None and g["met"] is False


def test_no_bf16_rows_give_an_empty_ladder():
    assert tensor.ladder(_summary({("naive", 4096): 5}, op="matmul"), FAMS).empty
    assert tensor.ladder(_summary({}), []).empty


def test_the_two_roofs_and_their_ridge_points():
    peak = hardware.tensor_bf16_peak(HOPPER)
    assert peak == 132 * 4096 * 1.98e9  # 1,070 TFLOP/s at 1980 MHz
    r = tensor.roofs(HOPPER, 3000.0)
    assert r["tensor"] / r["fp32"] == pytest.approx(4096 / 256)  # sixteen times the FP32 peak, clock for clock
    assert r["tensor_ridge"] == pytest.approx(peak / 3e12) and r["fp32_ridge"] == pytest.approx(r["fp32"] / 3e12)
    assert math.isnan(hardware.tensor_bf16_peak({**HOPPER, "compute_capability": "8.0"}))
    assert math.isnan(tensor.roofs(HOPPER, float("nan"))["tensor_ridge"])


def test_bf16_rows_never_enter_the_fp32_headline():
    fp32 = _summary({("streamk", 4096): 46.0, ("cublas", 4096): 51.0}, op="matmul")
    both = pd.concat([fp32, _summary({("bf16_persistent", 4096): 750, ("cublas_bf16", 4096): 740})])
    b = headlines.best_share(both, 4096)
    assert b["variant"] == "streamk" and b["share"] == pytest.approx(46 / 51)
    t = headlines.best_share(both, 4096, "matmul_bf16")
    assert t["variant"] == "bf16_persistent" and t["share"] == pytest.approx(750 / 740)


def _profiles(values: dict[str, tuple[float, float, float]], n: int = 8192, missing: tuple = ()) -> pd.DataFrame:
    """Profile rows (variant, M, metric, value, status) of tensor pipe %, DRAM bytes read and L2 hit %."""
    rows = []
    for v, triple in values.items():
        for metric, value in zip((tensor.PIPE, tensor.DRAM_READ, tensor.L2_HIT), triple):
            rows.append({"variant": v, "M": n, "metric": metric, "value": value, "status": "ok"})
    for v in missing:
        rows.append({"variant": v, "M": n, "metric": None, "value": math.nan, "status": "missing"})
    return pd.DataFrame(rows)


def test_the_counters_follow_the_ladder_and_each_step_pairs_a_rung_with_the_one_below():
    order = [f["family"] for f in FAMS]
    prof = _profiles(
        {
            "cublas_bf16": (94.7, 1.27e9, 73.7),
            "bf16_persistent": (96.1, 1.31e9, 80.6),
            "bf16_wgmma": (77.2, 3.68e9, 64.2),
        }
    )
    cnt = tensor.counters(prof, order)
    assert list(cnt.family) == order and list(cnt.tensor_pipe_pct) == [77.2, 96.1, 94.7]
    lad = tensor.ladder(
        _summary({("bf16_wgmma", 8192): 630, ("bf16_persistent", 8192): 760, ("cublas_bf16", 8192): 760}), FAMS
    )
    st = tensor.steps(lad, cnt).set_index("family")
    assert list(st.index) == ["bf16_persistent", "cublas_bf16"]
    p = st.loc["bf16_persistent"]
    assert p.rung_below == "bf16_wgmma" and p.gain == pytest.approx(760 / 630)
    assert (p.busy_below, p.busy, p.dram_below, p.dram, p.hit_below, p.hit) == (77.2, 96.1, 3.68e9, 1.31e9, 64.2, 80.6)


def test_a_rung_without_a_profile_has_no_step_and_no_counters():
    order = [f["family"] for f in FAMS]
    prof = _profiles({"bf16_persistent": (96.1, 1.31e9, 80.6)}, missing=("bf16_wgmma",))
    cnt = tensor.counters(prof, order)
    assert list(cnt.family) == ["bf16_persistent"]
    lad = tensor.ladder(_summary({("bf16_wgmma", 8192): 630, ("bf16_persistent", 8192): 760}), FAMS)
    assert tensor.steps(lad, cnt).empty
    assert tensor.counters(prof.iloc[0:0], order).empty


def test_the_counter_table_keeps_the_metrics_asked_for_in_the_ladders_order():
    order = [f["family"] for f in FAMS]
    prof = _profiles({"cublas_bf16": (94.7, 1.27e9, 73.7), "bf16_wgmma": (77.2, 3.68e9, 64.2)})
    wide = tensor.counter_table(prof, order, [tensor.L2_HIT, "lts__t_bytes.sum", tensor.PIPE])
    assert list(wide.columns) == ["variant", "M", tensor.L2_HIT, "lts__t_bytes.sum", tensor.PIPE]
    assert list(wide.variant) == ["bf16_wgmma", "cublas_bf16"] and list(wide[tensor.PIPE]) == [77.2, 94.7]
    assert wide["lts__t_bytes.sum"].isna().all()  # asked for, not collected


def test_the_reading_of_the_counters_names_the_busiest_rung_and_the_fastest_one_it_trails():
    """At 8192³ in the archives the ping-pong keeps the tensor pipe busiest yet times slower than the persistent
    and cluster rungs: the page's sentence sets it beside the fastest of them, and says nothing of the kind where
    the busiest rung is also the fastest."""
    fams = [
        *FAMS[:2],
        {"family": "bf16_cluster", "rung_below": "bf16_persistent"},
        {"family": "bf16_pingpong", "rung_below": "bf16_persistent"},
        FAMS[2],
    ]
    order = [f["family"] for f in fams]
    prof = _profiles(
        {
            "bf16_wgmma": (78.0, 3.2e9, 66.2),
            "bf16_persistent": (96.4, 1.30e9, 76.0),
            "bf16_cluster": (96.1, 1.32e9, 76.8),
            "bf16_pingpong": (99.0, 1.74e9, 76.9),
            "cublas_bf16": (95.1, 1.27e9, 71.8),
        }
    )
    cnt = tensor.counters(prof, order)
    rates = {
        ("bf16_wgmma", 8192): 576,
        ("bf16_persistent", 8192): 778,
        ("bf16_cluster", 8192): 784,
        ("bf16_pingpong", 8192): 759,
    }
    lad = tensor.ladder(_summary(rates | {("cublas_bf16", 8192): 781}), fams)
    w = tensor.reading(lad, cnt, 8192)
    assert (w["first"], w["first_pct"], w["busiest"], w["busiest_pct"]) == ("bf16_wgmma", 78.0, "bf16_pingpong", 99.0)
    assert w["reference_pct"] == 95.1  # cuBLAS BF16 is never the busiest hand-written rung, only set beside it
    assert (w["least_dram"], w["most_dram"]) == ("bf16_persistent", "bf16_wgmma")
    assert w["ahead"] == "bf16_cluster" and w["ahead_pct"] == 96.1  # the fastest of the two faster rungs
    assert (w["busiest_gflops"], w["ahead_gflops"]) == (759e3, 784e3)

    lad = tensor.ladder(_summary(rates | {("bf16_pingpong", 8192): 800, ("cublas_bf16", 8192): 781}), fams)
    assert tensor.reading(lad, cnt, 8192)["ahead"] is None  # the busiest is the fastest: nothing to reconcile
    assert tensor.reading(lad, cnt, 4096) is None  # no counters at that size
    no_ref = tensor.reading(lad, tensor.counters(prof[prof.variant != "cublas_bf16"], order), 8192)
    assert math.isnan(no_ref["reference_pct"])
    no_dram = tensor.reading(lad, tensor.counters(prof[prof.metric != tensor.DRAM_READ], order), 8192)
    assert no_dram["least_dram"] is None and no_dram["most_dram"] is None and math.isnan(no_dram["most_dram_bytes"])
    assert no_dram["busiest"] == "bf16_pingpong"  # the rest of the reading stands without the DRAM counter

"""The races' verdicts from recorded streams: paired shares and their intervals, burst against sustained, energy,
the marks of unpaired comparisons in different power states, and what the pages and the index make of them."""

import math

import numpy as np
import pandas as pd
import pytest

from gpumm.analyse import compare, headlines, paired, power, tensor, transposes
from gpumm.report import races as R
from gpumm.report.method import power_note

N = 8192
WORK = 2.0 * N**3


def _round_times(rounds=40):
    """cuBLAS BF16 throttled from round 5 on (12% slower, with a wobble); rung a 2% faster, rung b 3% slower, in
    every round: the truth is a share of 1/0.98 and 1/1.03."""
    ref = [1.40 * (1.0 if r < 5 else 1.12) * (1 + 0.01 * math.sin(r)) for r in range(rounds)]
    return {"cublas_bf16": ref, "bf16_cluster": [0.98 * t for t in ref], "bf16_persistent": [1.03 * t for t in ref]}


def raw_group(times=None, order="forward", power_w=None, throttled=True, extra_checks=()):
    """The paired step's rows for one group at 8192³: checks, energy spans, sustained blocks."""
    times = times or _round_times()
    power_w = power_w or {"cublas_bf16": 700.0, "bf16_cluster": 650.0, "bf16_persistent": 700.0}
    fam = {
        "cublas_bf16": ("reference", "bf16_pingpong"),
        "bf16_cluster": ("rung", "bf16_persistent"),
        "bf16_persistent": ("rung", "bf16_warpspec"),
    }
    base = {"race": "bf16", "group": f"bf16 {N}", "op": "matmul_bf16", "M": N, "N": N, "K": N, "order": order}
    rows = []
    for v, (role, below) in fam.items():
        rows.append({**base, "variant": v, "family": v, "role": role, "rung_below": below, "phase": "check",
                     "status": "ok", "reason": "verified", "ms": times[v][0]})  # fmt: skip
    for v, ms, note in extra_checks:
        rows.append({**base, "variant": v, "family": v, "role": "rung", "rung_below": "", "phase": "check",
                     "status": "ok", "reason": note, "ms": ms})  # fmt: skip
    for v, (role, below) in fam.items():
        rows.append({**base, "variant": v, "family": v, "role": role, "rung_below": below, "phase": "energy",
                     "status": "ok", "ms": times[v][-1], "work": WORK, "power_mean_w": power_w[v],
                     "energy_j": 70.0, "window_s": 0.1, "window_work": WORK * 0.1 / (times[v][-1] * 1e-3),
                     "sm_clock_mhz": 1400.0, "power_capped_pct": 100.0, "throttled": True})  # fmt: skip
    for r in range(len(times["cublas_bf16"])):
        for pos, (v, (role, below)) in enumerate(fam.items()):
            rows.append({**base, "variant": v, "family": v, "role": role, "rung_below": below, "phase": "sustained",
                         "status": "ok", "round": r, "position": pos, "ms": times[v][r], "work": WORK,
                         "stop": "quiet", "sm_clock_mhz": 1350.0, "power_capped_pct": 100.0 if throttled else 0.0,
                         "power_mean_w": 700.0, "throttled": throttled})  # fmt: skip
    return pd.DataFrame(rows)


def summary_sets(rows):
    """Sets of a summary: (variant, M, median ms, burst median ms, throttled, power capped %)."""
    out = []
    for v, m, med, burst, thr, cap in rows:
        out.append({"variant": v, "M": m, "N": m, "K": m, "memory_mode": "device", "timed": "kernel", "status": "ok",
                    "median_ms": med, "burst_median_ms": burst, "burst_iqr_pct": 0.1, "throttled": thr,
                    "power_capped_pct": cap, "clock_reasons": "0x4" if thr else "0x0", "sm_clock_min_mhz": 1980.0,
                    "sm_clock_mhz": 1980.0, "gflops": 2.0 * m**3 / (med * 1e-3) / 1e9,
                    "op": "matmul_bf16", "kind": "cublas" if v.startswith("cublas") else "cuda"})  # fmt: skip
    return pd.DataFrame(out)


SETS = summary_sets(
    [
        ("cublas_bf16", N, 1.56, 1.40, True, 100.0),  # its set ran on into the cap: the whole set is slower
        ("bf16_cluster", N, 1.372, 1.372, False, 0.0),  # a short quiet set, at full clock throughout
        ("bf16_persistent", N, 1.442, 1.442, False, 0.0),
        ("cublas_bf16", 4096, 0.190, 0.190, False, 0.0),
        ("bf16_cluster", 4096, 0.186, 0.186, False, 0.0),
    ]
)


def test_a_throttled_reference_and_a_quiet_rung_give_the_share_of_matching_samples():
    t = paired.shares(raw_group(), SETS)
    a = t[(t.variant == "bf16_cluster") & (t.kind == "reference")].iloc[0]
    assert a.share == pytest.approx(1 / 0.98) and a.rounds == 40
    assert a.low <= 1 / 0.98 <= a.high and 100 * (a.high - a.low) < 0.01
    # the two kernels' own sets, timed apart: the throttled reference makes the rung look 13.7% faster
    assert a.set_share == pytest.approx(1.56 / 1.372) and a.burst_share == pytest.approx(1.40 / 1.372)
    assert not a.regimes_differ  # burst 1.40/1.372 = 102.0%, sustained 1/0.98 = 102.0%: one verdict
    gain = t[(t.variant == "bf16_cluster") & (t.kind == "rung_below")].iloc[0]
    assert gain.against == "bf16_persistent" and gain.share == pytest.approx(1.03 / 0.98)


def test_burst_and_sustained_differ_only_beyond_their_spread():
    sets = SETS.copy()
    sets.loc[(sets.variant == "bf16_cluster") & (sets.M == N), "burst_median_ms"] = 1.30  # faster on a cool card
    t = paired.shares(raw_group(), sets)
    a = t[(t.variant == "bf16_cluster") & (t.kind == "reference")].iloc[0]
    assert a.burst_share == pytest.approx(1.40 / 1.30) and a.regimes_differ
    sets.loc[(sets.variant == "bf16_cluster") & (sets.M == N), "burst_median_ms"] = 1.3715  # within the spread
    assert not paired.shares(raw_group(), sets).regimes_differ.iloc[0]


def test_correlated_rounds_widen_the_interval_by_batches():
    times = _round_times(100)
    drift = [1 + 0.02 * math.sin(r / 8) for r in range(100)]  # the rung's own speed drifts over many rounds
    times["bf16_cluster"] = [0.98 * t * d for t, d in zip(times["cublas_bf16"], drift)]
    t = paired.shares(raw_group(times), SETS)
    a = t[(t.variant == "bf16_cluster") & (t.kind == "reference")].iloc[0]
    from gpumm.run import pairing

    naive = pairing.ratio(times["cublas_bf16"], times["bf16_cluster"])
    assert a.high - a.low > 1.5 * (naive.high - naive.low)  # batch means see the drift the rounds hide


def test_members_carry_rate_power_and_work_per_joule():
    m = paired.members(raw_group(), SETS).set_index("variant")
    a = m.loc["bf16_cluster"]
    assert a.status == "paired" and a.rounds == 40 and a.power_w == 650.0
    rate = WORK / (_round_times()["bf16_cluster"][-1] * 1e-3)
    assert a.per_joule == pytest.approx(rate / 650.0 / 1e9) and a.per_joule_unit == "GFLOP/J"
    assert a.counter_per_joule == pytest.approx(rate * 0.1 / 70.0 / 1e9)
    assert m.loc["cublas_bf16"].throttled and m.loc["cublas_bf16"].sm_clock_mhz == 1350.0


def test_a_slow_rung_timed_for_its_energy_only_is_shown_from_its_own_sets_with_its_mark():
    raw = raw_group(extra_checks=[("bf16_wmma", 11.0, "verified; energy only: 13% < min_share 0.5, not paired")])
    sets = pd.concat([SETS, summary_sets([("bf16_wmma", N, 11.0, 11.0, False, 0.0)])], ignore_index=True)
    v = paired.verdicts(paired.shares(raw, sets), paired.members(raw, sets), sets)
    slow = v[v.variant == "bf16_wmma"].iloc[0]
    assert slow.status == "energy only" and slow.regime == paired.SET_REGIME
    assert slow.share == pytest.approx(1.56 / 11.0)
    assert "cublas_bf16 throttled" in slow.mark and "first five samples: 12.7%" in slow.mark
    a = v[v.variant == "bf16_cluster"].iloc[0]
    assert a.regime == paired.PAIRED_REGIME and a.mark == "" and a.gain_regime == paired.PAIRED_REGIME


def test_the_mark_appears_and_disappears_with_the_power_state():
    assert power.mark(SETS, "bf16_cluster", "cublas_bf16", (N, N, N)).startswith("unpaired; cublas_bf16 throttled")
    assert power.mark(SETS, "bf16_cluster", "bf16_persistent", (N, N, N)) == ""  # both at full clock
    assert power.mark(SETS, "bf16_cluster", "cublas_bf16", (4096, 4096, 4096)) == ""
    both = SETS.assign(throttled=True)
    assert power.mark(both, "bf16_cluster", "cublas_bf16", (N, N, N)) == ""  # one state (both throttled): no mark
    assert power.state(SETS.iloc[0]).startswith("throttled (power cap 100% of the set")
    assert power.state(SETS.iloc[1]) == "full clock"
    assert R.cell(1.137, "unpaired; x throttled") == "113.7 (unpaired; x throttled)"
    assert R.cell(1.02, low=1.01, high=1.03) == "102.0 ±1.0 (paired)" and R.cell(math.nan) == "—"
    long = pd.DataFrame([{"row": "bf16_cluster", "column": N, "value": 1.56 / 1.372, "variant": "bf16_cluster",
                          "against": "cublas_bf16", "M": N, "N": N, "K": N}])  # fmt: skip
    none = pd.DataFrame(columns=paired.VERDICT_COLUMNS)
    assert "throttled" in R.grid(long, none, SETS).loc["bf16_cluster", N]
    assert "throttled" not in R.grid(long, none, SETS.assign(throttled=False)).loc["bf16_cluster", N]


def test_a_set_whose_reasons_say_power_cap_is_counted_at_the_cap():
    c = power.cap_counts(SETS)
    assert c == {"sets": 5, "throttled": 1, "power_cap": 1, "at_cap": 1, "thermal": 0, "clock_only": 0}
    note = power_note({"summary": SETS, "verdicts": _verdicts()})
    assert "1 ran throttled: 1 by the power cap" in note and "paired (bf16 at 8192)" in note


def _verdicts():
    raw = raw_group()
    return paired.verdicts(paired.shares(raw, SETS), paired.members(raw, SETS), SETS)


def test_the_headline_uses_the_paired_share_and_says_so():
    v = _verdicts()
    b = headlines.best_share(SETS, N, "matmul_bf16", verdicts=v)
    assert (
        b["variant"] == "bf16_cluster" and b["share"] == pytest.approx(1 / 0.98) and b["regime"] == paired.PAIRED_REGIME
    )
    text = headlines.share_text(b, digits=0)
    assert text.startswith("102.0% (95% interval 102.0–102.0%; bf16_cluster") and "sustained, paired" in text
    # no paired step (an older archive): the sets, and the mark where their states differ
    b = headlines.best_share(SETS, N, "matmul_bf16")
    assert b["regime"] == paired.SET_REGIME and b["share"] == pytest.approx(1.56 / 1.372)
    assert "cublas_bf16 throttled" in headlines.share_text(b)
    e = headlines.efficiency(v, "bf16")
    rate = {v: WORK / (t[-1] * 1e-3) for v, t in _round_times().items()}
    assert e["variant"] == "bf16_cluster"
    assert e["ratio"] == pytest.approx((rate["bf16_cluster"] / 650.0) / (rate["cublas_bf16"] / 700.0))


def test_the_race_page_says_the_sustained_verdict_and_both_regimes():
    v = _verdicts()
    line = R.goal_sentence(v, "NVIDIA H100 80GB HBM3", "cuBLAS BF16", 1.0)
    assert "**bf16_cluster** reaches **102.0%** of cuBLAS BF16" in line and "is **met**" in line
    table = R.table(v, "cuBLAS BF16").set_index("kernel")
    assert (
        table.at["bf16_cluster", "regime"] == paired.PAIRED_REGIME
        and table.at["cublas_bf16", "% of cuBLAS BF16"] == "100"
    )
    assert "power policy held it down 100%" in R.state(v, 700.0)


def test_the_transpose_goal_takes_the_paired_share_where_every_size_was_paired():
    table = pd.DataFrame(
        [{"variant": "transpose_tile64", "op": "transpose", "status": "ok", "M": n, "N": n,
          "share_of_copy_kernel": 1.05, "share_of_device_copy": 0.97} for n in (8192, 16384)]
    )  # fmt: skip
    v = pd.DataFrame(
        [{"variant": "transpose_tile64", "op": "copy", "role": "rung", "M": n, "share": s,
          "regime": paired.PAIRED_REGIME} for n, s in ((8192, 1.031), (16384, 1.017))]
    ).reindex(columns=paired.VERDICT_COLUMNS)  # fmt: skip
    g = transposes.transpose_goal(table, verdicts=v)
    assert g["of_copy_kernel"] == pytest.approx(1.017) and g["regime"] == paired.PAIRED_REGIME
    g = transposes.transpose_goal(table, verdicts=v[v.M == 8192])  # one size unpaired: the sets, for both
    assert g["of_copy_kernel"] == pytest.approx(1.05) and g["regime"] == "own sets, unpaired"


def test_the_counters_and_the_timing_in_one_unit():
    profiles = pd.DataFrame(
        [
            {"variant": "bf16_cluster", "M": N, "status": "ok", "metric": tensor.PIPE, "value": 95.0},
            {"variant": "bf16_cluster", "M": N, "status": "ok", "metric": tensor.CYCLES, "value": 2.2e6},
            {"variant": "bf16_cluster", "M": N, "status": "ok", "metric": tensor.DURATION, "value": 1.4e6},  # ns
        ]
    )
    gpu = {"sm_count": 132, "sm_clock_khz": 1980000, "compute_capability": "9.0", "name": "NVIDIA H100"}
    pc = tensor.per_cycle(profiles, _verdicts(), SETS, N, gpu).set_index("variant").loc["bf16_cluster"]
    assert pc.profile_mhz == pytest.approx(2.2e6 / 1.4e6 * 1e3)
    peak = tensor.hardware.tensor_bf16_peak(gpu)
    assert pc.profile_of_peak_pct == pytest.approx(100 * WORK / 1.4e-3 / (peak / 1980 * pc.profile_mhz))
    assert pc.sustained_mhz == 1350.0 and pc.burst_mhz == 1980.0
    assert np.isfinite(pc.sustained_of_peak_pct) and pc.sustained_of_peak_pct > pc.burst_of_peak_pct


def test_the_comparison_page_takes_each_runs_paired_share(tmp_path):
    raw = tmp_path / "raw" / "paired"
    raw.mkdir(parents=True)
    g = raw_group()
    g.assign(M=4096, N=4096, K=4096).to_csv(raw / "samples.csv", index=False)
    rows = {r[0]: r for r in compare._paired(tmp_path / "raw")}
    assert rows["bf16_cluster paired share at 4096³"][1:] == (pytest.approx(1 / 0.98), "share", "", "paired")
    t = pd.DataFrame(
        [
            {"run": "x", "what": "bf16_cluster GFLOP/s at 4096³", "value": 700.0, "unit": "GFLOP/s",
             "hardware": "bf16_tflops"},
            {"run": "x", "what": "cublas_bf16 GFLOP/s at 4096³", "value": 600.0, "unit": "GFLOP/s",
             "hardware": "bf16_tflops"},
            {"run": "x", "what": "bf16_cluster paired share at 4096³", "value": 1.02, "unit": "share", "hardware": ""},
        ]
    )  # fmt: skip
    assert compare.shares_of_cublas(t).at["bf16_cluster", "x"] == 1.02  # the paired share, not 700/600


def test_a_claim_on_two_sets_in_different_power_states_says_so():
    from gpumm.analyse import claims

    rows = [("naive", 16384, 1800.0, 1800.0, True, 60.0), ("unrolled", 16384, 620.0, 620.0, False, 0.0),
            ("cublas", 16384, 164.0, 160.0, False, 0.0)]  # fmt: skip
    s = summary_sets(rows).assign(op="matmul", kind=["cuda", "cuda", "cublas"])
    a, b = claims.s1_c1(s)
    assert a["note"].startswith("unpaired; naive throttled") and b["note"] == ""
    v = claims.verdicts(pd.DataFrame([a, b]))
    assert "naive throttled" in v[v.part == "a"].detail.iloc[0] and "throttled" not in v[v.part == "b"].detail.iloc[0]

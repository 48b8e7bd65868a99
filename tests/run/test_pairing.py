"""Paired comparisons, the power fields of a set and the paired step's plan, on the CPU with recorded streams."""

import math
import time
from types import SimpleNamespace

import pandas as pd
import pytest

from gpumm.run import clocks, nvml_poll, pairing, races
from gpumm.setup import catalog

# ---------------------------------------------------------------- the paired ratio


def _throttled_stream(n=40):
    """A reference that runs at full clock for its first five rounds, then at the cap 12% slower, with a wobble."""
    return [1.40 * (1.0 if r < 5 else 1.12) * (1 + 0.01 * math.sin(r)) for r in range(n)]


def test_a_throttled_reference_and_a_quiet_rung_give_the_share_of_matching_samples():
    ref = _throttled_stream()
    rung = [0.99 * t for t in ref]  # 1% faster than the reference in every round: the truth is 1/0.99
    r = pairing.ratio(ref, rung)
    assert r.value == pytest.approx(1 / 0.99, rel=1e-12) and r.rounds == 40
    assert r.low <= 1 / 0.99 <= r.high and r.width_points < 1e-9
    # timed apart, the rung quiet at the reference's full clock: its own set and the reference's whole set disagree
    quiet = [0.99 * 1.40] * 20
    unpaired = pairing.ratio_of_medians(ref, quiet)
    assert unpaired > 1.10  # the 12% throttle read as the rung's merit
    assert pairing.ratio_of_medians(ref[:5], quiet[:5]) == pytest.approx(1 / 0.99, rel=2e-3)  # the burst matches


def test_the_interval_is_the_t_interval_of_the_log_ratios():
    num, den = [1.0, 1.0, 1.0, 1.0], [1.0, 0.98, 1.02, 1.0]
    logs = [math.log(a / b) for a, b in zip(num, den)]
    mean = sum(logs) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 3)
    r = pairing.ratio(num, den)
    assert r.value == pytest.approx(math.exp(mean))
    assert r.high == pytest.approx(math.exp(mean + 3.182 * sd / 2))  # t(3) = 3.182
    assert pairing.ratio([1.0], [2.0]).low != pairing.ratio([1.0], [2.0]).low  # one round: no interval (nan)
    assert pairing.ratio([math.nan, 1.0, 1.0], [1.0, 0.5, 0.5]).rounds == 2  # a missing time drops its round


def test_t95_follows_the_table_and_the_normal_beyond():
    assert pairing.t95(1) == 12.706 and pairing.t95(30) == 2.042
    assert pairing.t95(60) == pytest.approx(2.000, abs=0.002) and pairing.t95(1000) == pytest.approx(1.962, abs=0.002)
    assert math.isnan(pairing.t95(0))


def test_the_rule_stops_quiet_full_or_out_of_time():
    rule = pairing.Rule(min_rounds=4, max_rounds=10, ci_points=0.5, max_s=2.0)
    quiet = {"a": [1.0] * 4, "b": [1.01] * 4}
    assert rule.verdict({"a": [1.0] * 3, "b": [1.01] * 3}, [("a", "b")], 0.1) == ""  # below the minimum
    assert rule.verdict(quiet, [("a", "b")], 0.1) == "quiet"
    noisy = {"a": [1.0, 1.1, 0.9, 1.05] * 2, "b": [1.0] * 8}
    assert rule.verdict(noisy, [("a", "b")], 0.1) == ""
    assert rule.verdict(noisy, [("a", "b")], 2.5) == "timeout"
    assert rule.verdict({"a": [1.0, 1.1] * 5, "b": [1.0] * 10}, [("a", "b")], 0.1) == "max_rounds"
    with pytest.raises(ValueError):
        pairing.Rule(min_rounds=5, max_rounds=4)


def test_rounds_alternate_their_order():
    assert pairing.order([1, 2, 3], 0) == [1, 2, 3] and pairing.order([1, 2, 3], 1) == [3, 2, 1]


# ---------------------------------------------------------------- energy and power


def test_energy_counts_the_whole_counter_updates_inside_each_span():
    # the counter moves every 0.1 s by 70 J while a (700 W) runs, then by 40 J while b (400 W) runs
    readings, value, t = [(0.0, 0)], 0, 0.0
    for step in range(1, 9):
        t = 0.1 * step
        value += 70_000 if t <= 0.4 + 1e-9 else 40_000
        readings += [(t - 0.05, readings[-1][1]), (t, value)]
    spans = {"a": (0.0, 0.4), "b": (0.4, 0.8)}
    blocks = [("a", 0.0, 0.2, 2e12), ("a", 0.2, 0.4, 2e12), ("b", 0.4, 0.6, 1e12), ("b", 0.6, 0.8, 1e12)]
    e = pairing.energy_per_member(spans, blocks, readings, settle_s=0.05)
    # a's whole updates after settling: 0.1-0.2, 0.2-0.3, 0.3-0.4 (the one ending at 0.1 started before a did)
    assert e["a"].seconds == pytest.approx(0.3) and e["a"].joules == pytest.approx(210.0)
    assert e["a"].watts == pytest.approx(700.0) and e["a"].work == pytest.approx(3e12)  # half the first block
    assert e["b"].watts == pytest.approx(400.0) and e["b"].work_per_joule == pytest.approx(1e12 / 80.0)
    none = pairing.energy_per_member({"c": (0.0, 0.09)}, [], readings)
    assert math.isnan(none["c"].joules)


def test_power_is_the_mean_of_the_samples_inside_each_span_after_settling():
    samples = [(0.01, 900_000.0), (0.06, 700_000.0), (0.08, 720_000.0), (0.12, 400_000.0), (0.15, 410_000.0)]
    p = pairing.power_per_member({"a": (0.0, 0.1), "b": (0.1, 0.2)}, samples, settle_s=0.02)
    assert p["a"].mean_w == pytest.approx(710.0) and p["a"].peak_w == 720.0 and p["a"].samples == 2  # 0.01 settling
    assert p["b"].samples == 1 and p["b"].mean_w == pytest.approx(410.0)


class _LateBuffer:
    """NVML's power buffer as the paired step reads it: a sample every 20 ms, shown ``lag_s`` after its stamp."""

    def __init__(self, lag_s: float, every_s: float = 0.02):
        self.lag_s, self.every_s, self.t0, self.reads = lag_s, every_s, time.time(), 0

    def power_samples_mw_stamped(self, since_us):
        self.reads += 1
        shown = time.time() - self.lag_s
        n = int((shown - self.t0) / self.every_s)
        return [(int((self.t0 + i * self.every_s) * 1e6), 300e3) for i in range(max(n, 0) + 1)]


def test_the_energy_phase_reads_the_buffer_until_its_last_members_samples_are_shown():
    """A phase ending now misses the samples stamped in its last moments where NVML shows them later (an H200 run's
    GPU test once found its last member with none): the poll reads on until one is stamped after the end."""
    late = _LateBuffer(lag_s=0.08)
    poll = nvml_poll.Poll(SimpleNamespace(available=True, _nvml=late))
    end_us = int(time.time() * 1e6)
    poll.until_stamped(end_us, timeout_s=1.0)
    assert max(poll.power) > end_us and late.reads > 1
    never = _LateBuffer(lag_s=10.0)  # nothing shown in time: it gives up after the timeout
    poll = nvml_poll.Poll(SimpleNamespace(available=True, _nvml=never))
    t = time.perf_counter()
    poll.until_stamped(int(time.time() * 1e6), timeout_s=0.1)
    assert 0.1 <= time.perf_counter() - t < 0.5 and max(poll.power) < int(time.time() * 1e6)
    poll = nvml_poll.Poll(SimpleNamespace(available=False, _nvml=None))  # no NVML: nothing to wait for
    poll.until_stamped(int(time.time() * 1e6))
    assert poll.power == {}


def test_a_set_whose_reasons_say_power_cap_is_throttled_at_full_clock():
    full = [(1980, 2619, 60, 0x4), (1980, 2619, 61, 0x0)]
    s = clocks.summarise(full, 1980)
    assert s["sm_clock_min_mhz"] == 1980 and s["throttled"] and clocks.reason_words(s["clock_reasons"]) == "power cap"
    assert not clocks.summarise([(1980, 2619, 60, 0x0)], 1980)["throttled"]
    # no reason seen by the poll, but the violation counter moved during the set: the cap's fast modulation
    before = clocks.Counters(t=0.0, stamp_us=0, energy_mj=1_000, power_violation_ns=0, thermal_violation_ns=5)
    after = clocks.Counters(t=0.5, stamp_us=500_000, energy_mj=351_000, power_violation_ns=250_000_000,
                            thermal_violation_ns=5)  # fmt: skip
    s = clocks.summarise([(1980, 2619, 60, 0x0)], 1980, before, after, [700_000.0, 720_000.0])
    assert s["throttled"] and s["power_capped_pct"] == pytest.approx(50.0) and s["thermal_capped_pct"] == 0.0
    assert s["energy_j"] == pytest.approx(350.0) and s["window_s"] == 0.5
    assert s["power_mean_w"] == pytest.approx(710.0) and s["power_peak_w"] == 720.0
    thermal = clocks.summarise([(1900, 2619, 88, 0x20)], 1980)
    assert thermal["throttled"] and clocks.reason_words(thermal["clock_reasons"]) == "thermal (software)"
    assert clocks.reason_words("0x0") == "" and clocks.reason_words(None) == ""


# ---------------------------------------------------------------- the plan


def test_each_race_holds_the_rungs_below_its_reference_and_their_side_branches():
    fams = catalog.load()
    bf16 = races.race_families(fams, "cublas_bf16")
    assert bf16[-1] == "cublas_bf16" and {"bf16_wmma", "bf16_cluster", "bf16_pingpong"} <= set(bf16)
    fp32 = races.race_families(fams, "cublas", down_to="unrolled")
    assert fp32[0] == "unrolled" and "naive" not in fp32 and fp32[-2:] == ["streamk", "cublas"]
    moves = races.race_families(fams, "transpose_copy", rungs_of="transpose")
    assert moves[-1] == "transpose_copy" and "transpose_tile64" in moves and "cublas" not in moves
    assert races.race_families(fams, "no_such_family") == []


def test_the_plan_takes_the_runs_variants_and_leaves_out_a_race_without_its_reference():
    fams = catalog.load()
    variants = {v.id: v for v in catalog.expand({"cublas": {}, "streamk": {}, "interior": {}, "naive": {}})}
    config = {"paired": {"races": {"fp32": {"reference": "cublas", "sizes": [4096]},
                                   "bf16": {"reference": "cublas_bf16", "sizes": [4096]}}}}  # fmt: skip
    p = races.plan(config, variants, fams)
    assert [r["race"] for r in p["races"]] == ["fp32"]
    members = {m["family"]: m for m in p["races"][0]["members"]}
    assert set(members) == {"naive", "interior", "streamk", "cublas"}  # what this run has of the ladder
    assert len(members["interior"]["variants"]) == 4 and members["cublas"]["role"] == "reference"
    assert races.plan({"paired": {"enabled": False, "races": config["paired"]["races"]}}, variants, fams) == {
        "races": []
    }
    assert "interior_b256x128k8" in races.inputs_of(p)


def test_the_build_that_races_is_the_fastest_verified_one_at_the_shape():
    def s(ms, status="ok", M=4096):
        shape = {"M": [M] * 3, "N": [M] * 3, "K": [M] * 3, "memory_mode": ["device"] * 3, "timed": ["kernel"] * 3}
        return pd.DataFrame({**shape, "status": [status] * 3, "ms": ms, "reason": [""] * 3})

    samples = {"a": s([3.0, 3.1, 3.2]), "b": s([2.9, 3.0, 2.8]), "c": s([1.0, 1.0, 1.0], status="failed")}
    assert races.best_build(samples, ["a", "b", "c"], (4096, 4096, 4096))[:2] == ("b", 2.9)
    vid, ms, why = races.best_build(samples, ["c"], (4096, 4096, 4096))
    assert vid is None and "failed" in why
    assert races.best_build(samples, ["a"], (8192, 8192, 8192))[0] is None
    assert races.square("transpose", 8192) == (8192, 8192, 1) and races.square("matmul_bf16", 64) == (64, 64, 64)

"""The method text (gpumm.report.method) is written from the run's own records: it says what the run did."""

import pandas as pd

from gpumm.report import method

KEYS = {"M": 64, "N": 64, "K": 64, "memory_mode": "device", "status": "ok"}


def _samples(method_name, batches, stops, timed="kernel"):
    rows = []
    for i, (batch, stop) in enumerate(zip(batches, stops)):
        rows += [
            {
                "variant": f"v{i}",
                **KEYS,
                "timed": timed,
                "method": method_name,
                "batch": batch,
                "ms": 2.5 / batch if batch else 1.0,
                "stop": stop,
                "repeat": r,
            }
            for r in range(5)
        ]
    return pd.DataFrame(rows)


def test_timing_describes_graphs_the_floor_and_why_sets_stopped():
    t = {
        "samples": _samples("graph", [1, 1920, 40], ["quiet", "quiet", "max_samples"]),
        "overhead": pd.DataFrame([{"what": "empty kernel", "method": "graph", "median_us": 0.689}]),
        "source": {
            "config": {
                "timing": {
                    "min_samples": 5,
                    "max_samples": 20,
                    "max_noise_pct": 0.5,
                    "timeout_s": 2,
                    "warmups": 3,
                    "warmup_s": 0.05,
                }
            }
        },
    }
    text = method.timing(t)
    assert "CUDA graphs" in text and "1 to 1,920 launches a sample, the shortest sample 2.5 ms" in text
    assert "(5 of 15 samples a single launch)" in text and "0.69 µs" in text
    assert "at least 5 samples" in text and "0.5% of its median" in text and "kernel: 2 quiet, 1 max samples" in text


def test_timing_says_each_kind_of_set_as_timed():
    """Cold runs are single launches capped at cold_max_samples; a short warm sample is said, not hidden."""
    k = _samples("graph", [100], ["quiet"])
    warm = _samples("graph", [1], ["quiet"], timed="warm").assign(ms=0.06, variant="w")
    cold = _samples("single", [1], ["max_samples"], timed="cold").assign(variant="c")
    t = {"min_samples": 5, "max_samples": 20, "max_noise_pct": 0.5, "timeout_s": 2, "cold_max_samples": 10}
    text = method.timing({"samples": pd.concat([k, warm, cold]), "source": {"config": {"timing": t}}})
    assert "warm managed sets: back-to-back launches in CUDA graphs" in text and "the shortest sample 0.06 ms" in text
    assert "cold managed sets: one launch per sample, timed with one pair of events" in text
    assert "at 20 samples (10 for a cold set)" in text and "cold managed: 1 max samples" in text


def test_timing_of_an_old_run_says_one_launch_per_event_pair_and_a_fixed_count():
    s = _samples(None, [None, None], [None, None]).drop(columns=["method", "stop", "batch"])
    text = method.timing({"samples": s, "source": {}})
    assert "one launch per sample, timed with one pair of events" in text and "5 samples (a fixed count)" in text
    assert "graph" not in text


def test_checks_count_the_verification_table():
    v = pd.DataFrame(
        {
            "exact_check": ["ok", "ok", "n/a", ""],
            "status": ["ok", "ok", "failed", "skipped"],
            "max_rel_err": [1e-7, 4e-7, 0.5, None],
            "tolerance": [3.8e-6, 3.8e-6, 3.8e-6, None],
            "reason": ["", "", "NaN in C", "larger than this variant's max_size"],
        }
    )
    text = method.checks({"verification": v})
    assert "Of the 4 variant" in text and "3 were checked" in text and "2 by the exact check" in text
    assert "1 failed and was not timed" in text and "0.5" in text
    assert "1 were skipped, neither checked nor timed (1: larger than this variant's max_size)" in text
    assert method.checks({}) == ""


def test_profiles_clocks_and_the_copy_size_come_from_the_run():
    ps = pd.DataFrame({"variant": ["a", "b", "a", "t"], "size": [1024, 4096, 4096, 8192]})
    ps["regime"] = ["cached", "dram", "dram", "dram"]
    variants = pd.DataFrame({"variant": ["a", "b", "t"], "op": ["matmul", "matmul", "transpose"]})
    text = method.profiles({"profile_summary": ps, "variants": variants})
    assert (
        "at 1024 (cached regime): 1 product; at 4096 (dram regime): 2 products; at 8192 (dram regime): 1 transpose"
        in text
    )
    summary = pd.DataFrame(
        [
            {
                "variant": "cublas",
                "M": 16384,
                "N": 16384,
                "K": 16384,
                "memory_mode": "device",
                "timed": "kernel",
                "throttled": True,
                "sm_clock_min_mhz": 1755.0,
                "status": "ok",
            }
        ]
    )
    full = summary.assign(variant="naive", throttled=False, sm_clock_min_mhz=1980.0)
    cpu = summary.assign(variant="cpu_serial", throttled=False, sm_clock_min_mhz=None)
    text = method.clocks({"summary": pd.concat([summary, full, cpu])})
    assert "read during 2 of the 3 timed sets (not during 1: CPU baselines" in text
    assert "the maximum, 1980 MHz, in 1 of them, and lower in 1 (down to 1755 MHz)" in text
    assert "1 set ran throttled (what that means: the power note below): cublas at 16384" in text
    mild = pd.concat([full, full.assign(variant="x", sm_clock_min_mhz=1965.0)])
    assert method.clocks({"summary": mild}).endswith(
        "lower in 1 (down to 1965 MHz); no slowdown reason touched any set (none throttled)."
    )
    note = method.throttled_among({"summary": summary}, summary[["variant", "M", "N", "K"]])
    assert note == "Throttled sets in this table (a slowdown reason touched the set: run page, Power): cublas at 16384."
    assert method.copy_size({"source": {"config": {"bandwidth": {"bytes": 1 << 30}}}}) == "1 GiB"
    assert method.copy_size({"source": {"config": {"bandwidth": {"bytes": 3 << 19}}}}) == "1.5 MiB"
    assert method.copy_size({"source": {}}) == ""  # not recorded: nothing is typed in its place


def test_one_set_is_one_set_in_the_clock_sentence():
    """Issue 39: '1 sets' reads '1 set' (and one CPU baseline is one): an old set and a CPU baseline without a
    clock reading."""
    row = {"M": 64, "N": 64, "K": 64, "memory_mode": "device", "timed": "kernel", "status": "ok", "throttled": False}
    s = pd.DataFrame(
        [
            {**row, "variant": "naive", "kind": "cuda", "sm_clock_min_mhz": 1980.0},
            {**row, "variant": "old", "kind": "cuda", "sm_clock_min_mhz": None},
            {**row, "variant": "cpu_serial", "kind": "cpu", "sm_clock_min_mhz": None},
        ]
    )
    text = method.clocks({"summary": s})
    assert "(not during 1 CPU baseline, 1 set of runs that predate the record)" in text
    two = method.clocks({"summary": pd.concat([s, s.iloc[[1]].assign(variant="older")])})
    assert "2 sets of runs that predate the record" in two

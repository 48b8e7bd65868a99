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
    assert "CUDA graphs" in text and "1 to 1920 launches a sample" in text and "0.69 µs" in text
    assert "at least 5 samples" in text and "0.5% of its median" in text and "2 quiet, 1 max samples" in text


def test_timing_of_an_old_run_says_one_launch_per_event_pair_and_a_fixed_count():
    s = _samples(None, [None, None], [None, None]).drop(columns=["method", "stop", "batch"])
    text = method.timing({"samples": s, "source": {}})
    assert "one launch per event pair" in text and "5 samples (a fixed count)" in text and "graph" not in text


def test_checks_count_the_verification_table():
    v = pd.DataFrame(
        {
            "exact_check": ["ok", "ok", "n/a"],
            "status": ["ok", "ok", "failed"],
            "max_rel_err": [1e-7, 4e-7, 0.5],
            "tolerance": [3.8e-6, 3.8e-6, 3.8e-6],
        }
    )
    text = method.checks({"verification": v})
    assert "each of the 3 variant" in text and "2 by the exact check" in text
    assert "1 failed and were not timed" in text and "0.5" in text
    assert method.checks({}) == ""


def test_profiles_clocks_and_the_copy_size_come_from_the_run():
    ps = pd.DataFrame({"variant": ["a", "b", "a"], "size": [1024, 4096, 4096], "regime": ["cached", "dram", "dram"]})
    text = method.profiles({"profile_summary": ps})
    assert "1 variants at 1024³ (cached regime); 2 variants at 4096³ (dram regime)" in text
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
            }
        ]
    )
    assert "1 timed sets ran below 98%" in method.clocks({"summary": summary}) and "1755 MHz" in method.clocks(
        {"summary": summary}
    )
    assert method.clocks({"summary": summary.assign(throttled=False)}).startswith("Every timed set ran at the max")
    note = method.throttled_among({"summary": summary}, summary[["variant", "M", "N", "K"]])
    assert note == "Throttled (SM clock below 98% of its maximum during the set): cublas at 16384."
    assert method.copy_size({"source": {"config": {"bandwidth": {"bytes": 1 << 30}}}}) == "1 GiB"
    assert method.copy_size({"source": {"config": {"bandwidth": {"bytes": 3 << 19}}}}) == "1.5 MiB"
    assert method.copy_size({"source": {}}) == ""  # not recorded: nothing is typed in its place

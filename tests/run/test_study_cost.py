"""The whole study in one short run (issue 16), on the CPU: the stopping rule on synthetic series, sizes per
variant from the config, the GPU lock, the GPU worker's protocol, matching ncu's launches to the profiled items,
the run record, and a failing piped rule failing its job."""

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpumm.archive import runrecord
from gpumm.profile import session as profile
from gpumm.run import gpulock, measure, sampling, settings, timing, worker
from gpumm.setup import catalog, config

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- the stopping rule


class FakeClock:
    """A clock that advances by ``step`` seconds for every sample taken (a kernel of that duration)."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now


def series(values, clock: FakeClock):
    it = iter(values)

    def take(k):
        out = []
        for _ in range(k):
            out.append(next(it))
            clock.now += clock.step
        return out

    return take


def test_a_quiet_series_stops_at_its_minimum():
    clock = FakeClock(0.002)
    rule = sampling.Rule(min_samples=5, max_samples=50, max_noise_pct=0.5, timeout_s=1.0)
    got = sampling.collect(series([1.0, 1.001, 0.999, 1.0, 1.0002] + [1.0] * 100, clock), rule, clock)
    assert got.stop == "quiet" and len(got.samples) == 5


def test_a_noisy_series_runs_to_its_timeout_or_its_cap():
    noisy = [1.0, 1.2] * 500  # interquartile range 20% of the median: never quiet
    clock = FakeClock(0.1)
    rule = sampling.Rule(min_samples=5, max_samples=1000, max_noise_pct=0.5, timeout_s=2.0)
    got = sampling.collect(series(noisy, clock), rule, clock)
    assert got.stop == "timeout" and got.seconds >= 2.0 and 20 <= len(got.samples) < 40
    clock = FakeClock(0.001)
    capped = sampling.collect(series(noisy, clock), sampling.Rule(5, 20, 0.5, 60.0), clock)
    assert capped.stop == "max_samples" and len(capped.samples) == 20


def test_never_below_the_minimum_even_past_the_timeout():
    clock = FakeClock(10.0)  # every sample alone is past the timeout
    got = sampling.collect(series([1.0, 2.0, 3.0] * 10, clock), sampling.Rule(5, 20, 0.5, 1.0), clock)
    assert len(got.samples) == 5 and got.stop == "timeout"


def test_a_fixed_count_takes_exactly_that_many():
    clock = FakeClock(0.001)
    got = sampling.collect(series([1.0] * 100, clock), sampling.fixed(20), clock)
    assert len(got.samples) == 20 and got.stop == "max_samples"


def test_the_noise_is_the_interquartile_range_over_the_median_as_pandas_computes_it():
    import pandas as pd

    x = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6, 5.0]
    s = pd.Series(x)
    assert math.isclose(sampling.noise_pct(x), 100 * (s.quantile(0.75) - s.quantile(0.25)) / s.median())
    assert math.isnan(sampling.noise_pct([]))
    with pytest.raises(ValueError):
        sampling.Rule(min_samples=6, max_samples=5)


def test_a_set_of_long_samples_takes_the_lower_minimum_and_nothing_else_does():
    rule = measure.rule_from({"min_samples": 5, "long_sample_s": 0.5, "long_min_samples": 3})
    assert rule.for_sample(1776.0).min_samples == 3  # naive at 16384 on an H100: 1.78 s a launch
    assert rule.for_sample(499.0) is rule and rule.for_sample(2.0).min_samples == 5
    clock = FakeClock(1.78)
    quiet = [1776.0, 1776.1, 1775.9] + [1776.0] * 10
    got = sampling.collect(series(quiet, clock), rule.for_sample(1776.0), clock)
    assert len(got.samples) == 3 and got.stop == "quiet"
    # three long samples that are not quiet go on as any set: here to the timeout
    clock = FakeClock(0.62)
    noisy = [616.0, 626.0, 606.0] * 10
    got = sampling.collect(series(noisy, clock), rule.for_sample(616.0), clock)
    assert got.stop == "timeout" and len(got.samples) == 4
    assert "3 at least for samples of 0.5 s or more" in rule.describe()
    # a rule without the setting, and a fixed count, never lower their minimum
    assert measure.rule_from({"min_samples": 5}).for_sample(1e9).min_samples == 5
    assert sampling.fixed(20).for_sample(1e9).min_samples == 20
    # the config's default lowers it at 0.5 s; the timers lower it from the predicted sample (the checks' launch)
    assert measure.rule_from(_default_config()["timing"]).for_sample(600.0).min_samples == 3
    loud = sampling.Rule(5, 20, math.inf, 60.0, long_ms=500.0)  # any noise is quiet: stops at its minimum
    assert len(timing.time_host(lambda: None, timing.Warmup(0, 0.0), loud, 600.0).samples) == 3
    assert len(timing.time_host(lambda: None, timing.Warmup(0, 0.0), loud, 400.0).samples) == 5


def test_warm_ups_count_the_checks_launches():
    w = timing.Warmup(count=3, seconds=0.05)
    assert w.count_for(2.0, 0.0) == 3  # short samples: the full count
    assert w.count_for(1760.0, 3.5) == 0  # the checks ran a 1.76 s kernel twice: warm
    assert w.count_for(20.0, 0.02) == 2  # 30 ms left, 20 ms samples
    assert timing.Warmup(count=3, seconds=math.inf).count_for(5.0, 100.0) == 3  # a fixed count stays fixed


def test_the_budget_counts_the_checks_and_the_minimum():
    plan = measure.Plan(shapes=[], modes=["device"], seed=0, cpu_max_mnk=0, rule=sampling.Rule(5, 20, 0.5, 2.0))
    assert measure.predicted_s(1.76, plan) == pytest.approx(1.76 * 7)
    assert measure.predicted_s(1.0, plan, cold=True) == pytest.approx(12.0)


# ---------------------------------------------------------------- sizes per variant


def _default_config():
    cfg = catalog.read_yaml((ROOT / "config.yaml").read_text())
    cfg["timing"] = config.timing_settings(cfg.get("timing"))
    return cfg


def _largest(cfg):
    by_id = {v.id: v for v in config.check(cfg)}
    largest = {
        vid: max(s[0] for s in settings.shapes_for(v, cfg) if s[0] == s[1] == s[2])
        for vid, v in by_id.items()
        if v.op == "matmul"
    }
    return by_id, largest


SEED001_SIX = ("naive", "tiled_tile16", "no_bank_conflict_tile16", "outer_product", "unrolled", "cublas")


def test_each_variant_is_timed_up_to_its_max_size():
    cfg = _default_config()
    by_id, largest = _largest(cfg)
    for six in SEED001_SIX:  # 8192 by default (the study within 300 s); workflow/configs/full.yaml: 16384
        assert largest[six] == 8192, six
    assert (
        largest["double_buffer"] == 8192 and largest["tiled_tile4"] == 4096 and largest["tiled_nounroll_tile8"] == 4096
    )
    extra = {tuple(s) for s in cfg["shapes"]}
    assert extra <= set(settings.shapes_for(by_id["tiled_tile4"], cfg))  # the extra shapes run for every variant
    assert max(s[0] for s in settings.shapes_for(by_id["transpose_naive"], cfg)) == 16384  # transposes: their own


def test_the_full_config_takes_seed_001_and_the_race_s_top_rungs_to_16384_with_the_tuning_search():
    """workflow/configs/full.yaml over config.yaml, merged key by key as Snakemake merges a --configfile."""
    cfg = _default_config()
    full = catalog.read_yaml((ROOT / "workflow" / "configs" / "full.yaml").read_text())
    assert set(full) == {"tune", "max_size"}
    cfg["tune"] = full["tune"]
    cfg["max_size"] = {**cfg["max_size"], **full["max_size"]}
    assert config.explain(cfg) is None
    by_id, largest = _largest(cfg)
    for vid in (*SEED001_SIX, "streamk"):
        assert largest[vid] == 16384, vid
    tuned = [vid for vid in by_id if by_id[vid].family == "interior"]
    assert len(tuned) == 4 and all(largest[vid] == 16384 for vid in tuned)
    assert largest["double_buffer"] == 8192 and largest["tiled_tile4"] == 4096


def test_the_other_memory_modes_stop_at_their_own_size():
    plan = measure.Plan(
        shapes=measure.shapes_from([1024, 2048, 4096, 16384], []),
        modes=["device", "zero_copy", "managed"],
        seed=0,
        cpu_max_mnk=0,
        mode_max_size={"zero_copy": 2048, "managed": 4096},
    )
    work = measure.work_list(catalog.from_id("naive"), plan)
    sizes = {m: [s[0] for mm, s in work if mm == m] for m in plan.modes}
    assert sizes == {"device": [1024, 2048, 4096, 16384], "zero_copy": [1024, 2048], "managed": [1024, 2048, 4096]}


def test_end_to_end_and_profiles_follow_their_variant_lists():
    cfg = _default_config()
    assert settings.timing_for(catalog.from_id("tiled_tile4"), cfg)["end_to_end_max_size"] == 0
    assert settings.timing_for(catalog.from_id("tiled_tile16"), cfg)["end_to_end_max_size"] == 2048
    # both races' chains in one ncu session: every rung with the race's counters has the tensor cores' too
    assert config.metric_sets_for(catalog.from_id("warptile"), cfg) == ["memory", "race", "tensor"]
    assert config.metric_sets_for(catalog.from_id("bf16_persistent"), cfg) == ["memory", "race", "tensor"]
    assert config.metric_sets_for(catalog.from_id("tiled_tile4"), cfg) == ["memory"]


@pytest.mark.parametrize(
    "edit, says",
    [
        ({"max_size": {"default": 4096, "nosuch": 16}}, "max_size.nosuch: not a variant family"),
        ({"end_to_end_variants": ["nosuch"]}, "end_to_end_variants: nosuch is not a variant"),
        ({"profile": {"extra_metric_sets": {"nosuch": ["naive"]}}}, "extra_metric_sets.nosuch: no such metric set"),
        ({"timing": {"min_samples": 30, "max_samples": 20}}, "timing.min_samples = 30 is not allowed"),
    ],
)
def test_bad_study_settings_are_named(edit, says):
    cfg = _default_config()
    for k, v in edit.items():
        cfg[k] = {**cfg[k], **v} if isinstance(v, dict) and isinstance(cfg.get(k), dict) else v
    with pytest.raises(config.ConfigError, match=says.replace(".", r"\.").replace("(", r"\(")):
        config.check(cfg)


# ---------------------------------------------------------------- the GPU lock


def _hold_in_child(lock_dir: Path, key: str, seconds: float) -> subprocess.Popen:
    code = (
        "import sys, time; sys.path.insert(0, {!r}); from gpumm.run import gpulock\n"
        "with gpulock.hold({!r}, 'the first'):\n    print('held', flush=True); time.sleep({!r})\n"
    ).format(str(ROOT / "src"), key, seconds)
    env = {**os.environ, "GPUMM_LOCK_DIR": str(lock_dir)}
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_second_process_waits_for_the_gpu_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUMM_LOCK_DIR", str(tmp_path))
    first = _hold_in_child(tmp_path, "GPU-test", 1.0)
    said = []
    t0 = time.monotonic()
    with gpulock.hold("GPU-test", "the second", say=said.append):
        waited = time.monotonic() - t0
    first.wait()
    assert waited >= 0.5 and len(said) == 1 and "in use by pid" in said[0] and "the first" in said[0]


def test_with_a_deadline_the_second_stops_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUMM_LOCK_DIR", str(tmp_path))
    first = _hold_in_child(tmp_path, "GPU-test", 3.0)
    with pytest.raises(gpulock.Busy, match="stayed in use by pid .* for 0.5 s; nothing was run"):
        with gpulock.hold("GPU-test", "the second", wait_s=0.5, say=lambda _: None):
            pass
    first.kill()
    first.wait()
    with gpulock.hold("GPU-test", "after a kill", wait_s=0.5):  # a killed holder leaves the GPU free
        with gpulock.hold("GPU-test", "nested"):  # re-entrant within a process
            pass


def test_one_lock_per_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUMM_LOCK_DIR", str(tmp_path))
    first = _hold_in_child(tmp_path, "GPU-a", 2.0)
    with gpulock.hold("GPU-b", "another GPU", wait_s=0.2):  # not blocked by GPU-a
        pass
    first.kill()
    first.wait()


# ---------------------------------------------------------------- the GPU worker


def _env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMM_")}
    env.update(
        GPUMM_WORKER="1",
        GPUMM_WORKER_DIR=str(tmp_path / "w"),
        GPUMM_WORKER_LOG=str(tmp_path / "worker.log"),
        GPUMM_WORKER_IDLE_S="20",
        PYTHONPATH=str(ROOT / "src"),
    )
    return env


def test_steps_through_the_worker_share_one_process_and_relay_their_output(tmp_path):
    """Two steps (a CPU baseline needs no GPU) through one worker: their outputs, logs and exit status are the
    step's own; a user error in a step is one line; the worker exits when asked."""
    env = _env(tmp_path)
    cmd = [sys.executable, "-m", "gpumm", "measure", "--variant", "cpu_blas", "--sizes", "16,32"]
    for out in ("a", "b"):
        r = subprocess.run([*cmd, "--out-dir", str(tmp_path / out)], capture_output=True, text=True, env=env)
        assert r.returncode == 0 and "cpu_blas: ok 2" in r.stdout, r.stderr
        assert (tmp_path / out / "samples.csv").is_file() and (tmp_path / out / "meta.json").is_file()
    bad = subprocess.run(
        [*cmd[:5], "nosuch", "--out-dir", str(tmp_path / "c")], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and bad.stderr.strip() == "gpumm measure: unknown variant 'nosuch'"
    stop = subprocess.run([sys.executable, "-m", "gpumm", "worker", "--stop"], capture_output=True, text=True, env=env)
    assert "stopped the GPU worker" in stop.stdout
    log = (tmp_path / "worker.log").read_text()
    assert log.count("serving") == 1 and log.count("exit 0") == 2 and "asked to stop" in log
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["sampling"]["max_samples"] == 20 and meta["set_seconds"][0][:4] == ["host", 16, 16, 16]


def test_the_worker_does_not_keep_the_first_jobs_blas_thread_limit(tmp_path):
    """Snakemake gives a one-thread job OPENBLAS_NUM_THREADS=1 (and its kin); a worker started by that job must
    not run a later job's every-core BLAS on one thread. Each BLAS set records the threads it ran on."""
    import pandas as pd

    from gpumm.run import blas

    env = _env(tmp_path)
    cmd = [sys.executable, "-m", "gpumm", "measure", "--sizes", "64"]
    one = {**env, **dict.fromkeys(blas.THREAD_VARIABLES, "1")}  # the first job: threads=1, it starts the worker
    every = {**env, **dict.fromkeys(blas.THREAD_VARIABLES, str(blas.cores()))}
    try:
        for variant, job_env in (("cpu_blas1", one), ("cpu_blas", every)):
            r = subprocess.run(
                [*cmd, "--variant", variant, "--out-dir", str(tmp_path / variant)],
                capture_output=True,
                text=True,
                env=job_env,
            )
            assert r.returncode == 0, r.stderr
    finally:
        subprocess.run([sys.executable, "-m", "gpumm", "worker", "--stop"], capture_output=True, env=env)
    assert (tmp_path / "worker.log").read_text().count("serving") == 1  # both served by the worker the first started
    ran = {v: set(pd.read_csv(tmp_path / v / "samples.csv").library) for v in ("cpu_blas1", "cpu_blas")}
    n = blas.cores()
    assert len(ran["cpu_blas1"]) == 1 and next(iter(ran["cpu_blas1"])).endswith(f", 1 of {n} cores"), ran
    assert len(ran["cpu_blas"]) == 1 and next(iter(ran["cpu_blas"])).endswith(f", {n} of {n} cores"), ran


def test_blas_thread_variables_are_dropped_and_the_library_named():
    from gpumm.run import blas

    env = {"PATH": "/bin", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "3"}
    assert blas.without_thread_limits(env) == {"PATH": "/bin"}
    name, threads = blas.in_use()
    assert name and threads >= 1  # NumPy's wheels bring OpenBLAS, which threadpoolctl finds
    assert blas.describe() == f"NumPy BLAS: {name}, {threads} of {blas.cores()} cores"


def test_a_worker_that_dies_fails_its_step_with_one_line(tmp_path):
    """A client whose worker exits mid-step fails, naming the worker's log (a fake worker that hangs up)."""
    import socket

    path = tmp_path / "w" / "fake.sock"
    path.parent.mkdir()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def hang_up():
        conn, _ = srv.accept()
        conn.makefile("rb").readline()
        conn.sendall(b'{"err": "half a step\\n"}\n')
        conn.close()

    t = threading.Thread(target=hang_up)
    t.start()
    out, err = [], []

    class W:
        def __init__(self, sink):
            self.sink = sink

        def write(self, s):
            self.sink.append(s)

        def flush(self):
            pass

    os.environ["GPUMM_WORKER_DIR"] = str(tmp_path / "w")
    try:
        orig = worker.socket_path
        worker.socket_path = lambda k=None: path
        rc = worker.request(["measure", "--variant", "naive"], W(out), W(err))
    finally:
        worker.socket_path = orig
        os.environ.pop("GPUMM_WORKER_DIR")
    t.join()
    srv.close()
    assert rc == 1 and "half a step" in "".join(err) and "the GPU worker stopped during this step" in "".join(err)


def test_the_worker_serves_only_gpu_steps_and_only_when_asked(monkeypatch):
    monkeypatch.setenv("GPUMM_WORKER", "1")
    monkeypatch.delenv("GPUMM_IN_WORKER", raising=False)
    assert worker.wanted(["measure", "--variant", "naive"]) and worker.wanted(["provenance", "--variants", "x"])
    assert not worker.wanted(["build", "--variant", "naive"]) and not worker.wanted(["measure", "--help"])
    monkeypatch.setenv("GPUMM_IN_WORKER", "1")
    assert not worker.wanted(["measure", "--variant", "naive"])  # inside the worker: run in process
    monkeypatch.delenv("GPUMM_WORKER")
    monkeypatch.delenv("GPUMM_IN_WORKER")
    assert not worker.wanted(["measure", "--variant", "naive"])  # by hand: in process


# ---------------------------------------------------------------- one profile session


def test_ncu_launches_are_matched_to_the_items_in_order():
    launched = [
        {"name": "naive", "kind": "kernel", "kernel": "matmul_naive", "size": 1024},
        {"name": "naive", "kind": "kernel", "kernel": "matmul_naive", "size": 4096},
        {"name": "cublas", "kind": "library", "kernel": "", "size": 1024},
        {"name": "", "kind": "marker"},
        {"name": "cublas", "kind": "library", "kernel": "", "size": 4096},
        {"name": "", "kind": "marker"},
        {"name": "access_patterns", "kind": "kernel", "kernel": "read_rows"},
    ]
    kernels = ["matmul_naive", "matmul_naive", "sm80_gemm_a", "empty_kernel", "sm80_gemm_b", "splitk_reduce"]
    kernels += ["empty_kernel", "read_rows"]
    assert profile.assign(kernels, launched) == [0, 1, 2, None, 4, 4, None, 6]
    with pytest.raises(profile.Mismatch, match="expected matmul_naive, found matmul_tiled"):
        profile.assign(["matmul_tiled", *kernels[1:]], launched)
    with pytest.raises(profile.Mismatch, match="1 launches more"):
        profile.assign([*kernels, "read_rows"], launched)
    with pytest.raises(profile.Mismatch, match="expected a library kernel"):
        profile.assign(["matmul_naive", "matmul_naive", "empty_kernel"], launched[:4])


def test_the_profiled_variants_share_their_inputs_made_once_per_operation_and_size():
    from gpumm.run import memo, operations, verify

    memo.STORE.clear()
    mm, tr = operations.get("matmul"), operations.get("transpose")
    first = mm.profile_inputs(7, 64)
    assert mm.profile_inputs(7, 64) is first  # the second variant at this size: the kept arrays
    assert all((a == b).all() for a, b in zip(first, verify.random_inputs(7, 64, 64, 64), strict=True))
    assert mm.profile_inputs(7, 32)[0].shape == (32, 32) and mm.profile_inputs(8, 64)[0] is not first[0]
    assert tr.profile_inputs(7, 64)[0] is not first[0] and len(tr.profile_inputs(7, 64)) == 1
    memo.STORE.clear()


def test_the_kernel_filter_names_whole_entry_points():
    import re

    f = profile.kernel_regex({"matmul_tiled", "read_rows"}, library=True).removeprefix("regex:")
    assert re.search(f, "matmul_tiled") and re.search(f, "empty_kernel") and re.search(f, "sm80_xmma_gemm_f32")
    assert re.search(f, "nvjet_sm90_tss_256x128_64x4_2x1_v_bz_TNT")  # cuBLAS BF16's Hopper kernels (issue 30)
    assert not re.search(f, "matmul_tiled_other") and not re.search(f, "transpose_b")
    assert "gemm" not in profile.kernel_regex({"matmul_naive"}, library=False)


def test_a_profile_session_without_ncu_writes_every_output_saying_why(tmp_path, monkeypatch):
    monkeypatch.setattr(profile, "find_ncu", lambda: None)
    monkeypatch.setattr(gpulock, "device_key", lambda: "GPU-test")
    monkeypatch.setenv("GPUMM_LOCK_DIR", str(tmp_path / "locks"))
    plan = {
        "variants": {
            "naive": {"binary": None, "sizes": [1024, 4096]},
            "cpu_blas": {"binary": None, "sizes": [4096]},
        },
        "coalescing": {"cubin": "absent.cubin", "plan": {"sizes": [1024]}},
    }
    status = profile.session(plan, ["gpu__time_duration.sum"], 1, tmp_path)
    assert status == {"cpu_blas": "missing", "naive": "missing", "access_patterns": "missing"}
    import pandas as pd

    naive = pd.read_csv(tmp_path / "raw" / "naive" / "profile.csv")
    assert "not found" in naive.reason.iloc[0] and (tmp_path / "raw" / "coalescing" / "profile.csv").is_file()
    assert not (tmp_path / "cache" / "profile" / "naive").exists()  # a failed profile is not kept for reuse


# ---------------------------------------------------------------- the run record


def test_run_json_sums_up_one_run(tmp_path, monkeypatch):
    log = tmp_path / "steps.jsonl"
    monkeypatch.setenv("GPUMM_RUN_ID", "r1")
    runrecord.append(log, ["build", "--variant", "naive"], 100.0, 102.0, 0)
    runrecord.append(log, ["measure", "--variant", "naive"], 102.0, 110.0, 0, gpu=True)
    runrecord.append(log, ["profile", "--plan", "x"], 110.0, 130.0, 0)
    runrecord.append(log, ["index", "--tables", "t"], 135.0, 136.0, 0)
    monkeypatch.setenv("GPUMM_RUN_ID", "r2")  # another run's line is not this run's
    runrecord.append(log, ["measure", "--variant", "naive"], 500.0, 600.0, 0)
    log.open("a").write("not json\n")
    r = runrecord.write(log, "r1", tmp_path / "run.json", {"mode": "measure"})
    assert r["wall_s"] == 36.0 and r["gpu_busy_s"] == 28.0 and r["gpu_busy_share"] == pytest.approx(28 / 36, abs=1e-3)
    assert r["steps"] == 4 and r["seconds_by_step"]["profile"] == 20.0 and r["jobs"][1]["target"] == "naive"
    assert json.loads((tmp_path / "run.json").read_text())["mode"] == "measure"
    assert runrecord.write(log, "nosuch", tmp_path / "none.json", {}) is None and not (tmp_path / "none.json").exists()


# ---------------------------------------------------------------- a failing piped rule


def test_a_failing_piped_step_fails_its_rule_with_its_own_message(tree, tmp_path):
    """The measure rule pipes its step through `tee`. The workflow's shell prefix keeps `set -euo pipefail`, so
    a step that fails (here: a measurement on a pretend GPU, with no CuPy) fails its rule with the step's own
    status and message, not with Snakemake's "missing output files" once `tee` succeeded."""
    import shutil

    copy = tmp_path / "t"
    shutil.copytree(tree, copy, symlinks=True)
    env = {**os.environ, "GPUMM_FAKE_GPU": json.dumps({"ok": True, "reason": "", "name": "fake", "arch": "sm_90"})}
    cmd = [sys.executable, "-m", "snakemake", "results/raw/naive/samples.csv", "--cores", "1"]
    cmd += ["--config", "mode=measure", "only=[naive]", "sizes=[16]", "shapes=[]", "gpu_worker=false"]
    r = subprocess.run(cmd, cwd=copy, capture_output=True, text=True, env=env)
    assert r.returncode != 0, r.stderr[-2000:]
    log = (copy / "results" / "logs" / "measure" / "naive.log").read_text()
    assert "gpumm measure:" in log and "CuPy" in log and "Traceback" not in log, log
    assert "Error in rule measure" in r.stderr and "MissingOutputException" not in r.stderr


# ---------------------------------------------------------------- several GPUs (gpumm.run.devices)


def test_a_run_uses_the_devices_of_one_kind():
    from gpumm.run import devices

    gpus = [
        {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-a"},
        {"index": 1, "name": "NVIDIA A100", "uuid": "GPU-b"},
        {"index": 2, "name": "NVIDIA H200", "uuid": "GPU-c"},
    ]
    chosen, notes = devices.choose(gpus, "auto")
    assert [d["uuid"] for d in chosen] == ["GPU-a", "GPU-c"]
    assert notes == ["GPU 1 (NVIDIA A100) left out: a run measures on one kind of GPU (NVIDIA H200)"]
    assert [d["uuid"] for d in devices.choose(gpus, 1)[0]] == ["GPU-a"]
    with pytest.raises(devices.DeviceError, match=r"config: gpus = 3 is not allowed: .* 2 usable GPU\(s\)"):
        devices.choose(gpus, 3)
    assert devices.choose([], "auto") == ([], [])


_CLAIMING_JOB = """
import json, os, time
from gpumm.run import devices
with devices.for_step("measure") as d:
    t0 = time.time()
    time.sleep(0.4)
    print(json.dumps({"uuid": d["uuid"], "visible": os.environ["CUDA_VISIBLE_DEVICES"],
                      "mine": json.loads(os.environ["GPUMM_DEVICE"])["uuid"], "t0": t0, "t1": time.time()}))
"""


def test_gpu_jobs_on_several_devices_each_claim_one_of_their_own(tmp_path):
    """Fake devices, fake jobs: 3 devices and 7 jobs started at once. Each job claims a device, sees it alone
    (CUDA_VISIBLE_DEVICES is its UUID), and no device is held by two jobs at once; every job runs, every device
    is used, and those that found all three taken waited for one."""
    fake = [{"index": i, "name": "fake GPU", "uuid": f"GPU-fake-{i}"} for i in range(3)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMM_") and k != "CUDA_VISIBLE_DEVICES"}
    env.update(GPUMM_LOCK_DIR=str(tmp_path / "locks"), GPUMM_DEVICES=json.dumps(fake), PYTHONPATH=str(ROOT / "src"))
    jobs = [
        subprocess.Popen([sys.executable, "-c", _CLAIMING_JOB], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(7)
    ]
    outs = [job.communicate(timeout=60) for job in jobs]
    assert all(job.returncode == 0 for job in jobs), [e.decode() for _, e in outs]
    ran = [json.loads(o) for o, _ in outs]
    assert {r["uuid"] for r in ran} == {d["uuid"] for d in fake}
    assert all(r["visible"] == r["uuid"] == r["mine"] for r in ran)
    for uuid in {r["uuid"] for r in ran}:
        spans = sorted((r["t0"], r["t1"]) for r in ran if r["uuid"] == uuid)
        assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:])), (uuid, spans)
    assert sum("every one of the run's 3 GPUs is taken; waiting" in e.decode() for _, e in outs) >= 4


def test_with_one_device_a_step_is_left_as_it_was(monkeypatch):
    from gpumm.run import devices

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    monkeypatch.setenv(devices.ENV, json.dumps([{"index": 0, "name": "one", "uuid": "GPU-one"}]))
    with devices.for_step("measure") as d:
        assert d is None and os.environ["CUDA_VISIBLE_DEVICES"] == "7"
    monkeypatch.setenv(devices.ENV, json.dumps([{"uuid": "GPU-a"}, {"uuid": "GPU-b"}]))
    with devices.for_step("collect") as d:  # not a GPU step
        assert d is None and os.environ["CUDA_VISIBLE_DEVICES"] == "7"


def test_a_table_never_mixes_two_kinds_of_gpu():
    from gpumm.analyse import tables

    h200 = {"device": {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-a"}}
    tables.one_kind({"naive": h200, "cublas": {"device": {**h200["device"], "uuid": "GPU-b"}}, "cpu_blas": {}})
    with pytest.raises(tables.MixedRun, match=r"2 kinds of GPU \(NVIDIA A100: 1 variants \(e\.g\. tiled_tile16\); "):
        tables.one_kind({"naive": h200, "tiled_tile16": {"device": {"name": "NVIDIA A100"}}})


def _accelerators(env_value):
    """CUPY_ACCELERATORS as a process that imports gpumm sees it (None: unset before)."""
    env = {k: v for k, v in os.environ.items() if k != "CUPY_ACCELERATORS"}
    if env_value is not None:
        env["CUPY_ACCELERATORS"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", "import os, gpumm; print(repr(os.environ['CUPY_ACCELERATORS']))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_cupy_runs_without_cub_unless_the_user_asks_for_it():
    # CUB's block reductions cost 4-5 s of NVRTC per size class at first use (issue 16, tools/cupy_startup.py)
    assert _accelerators(None) == "''"
    assert _accelerators("cub") == "'cub'"


# ---------------------------------------------------------------- cold managed runs


def test_a_cold_set_takes_at_most_cold_max_samples():
    rule = measure.cold_rule_from({"min_samples": 5, "max_samples": 20, "cold_max_samples": 10})
    assert (rule.min_samples, rule.max_samples) == (5, 10)
    rule = measure.cold_rule_from({"min_samples": 5, "cold_max_samples": 3})
    assert (rule.min_samples, rule.max_samples) == (3, 3)  # never a minimum above the maximum
    plan = measure.Plan.from_config(config.timing_settings({}), shapes=[], modes=[], seed=0, cpu_max_mnk=0)
    assert plan.cold_rule.max_samples == 10 and plan.rule.max_samples == 20  # the defaults, from the schema


def _fake_cupy(monkeypatch, refuse: bool):
    """cupy's current stream, and memory.prefetch_to_host recording its calls (refusing them when told to)."""
    import types

    from gpumm.run import memory

    calls, synced = [], []
    state = types.SimpleNamespace(refuse=refuse, calls=calls)

    def prefetch(ptr, nbytes, stream):
        if state.refuse:
            raise memory.PrefetchRefused("cuMemPrefetchAsync to the CPU returned CUresult 101")
        calls.append((ptr, nbytes, stream))

    stream = types.SimpleNamespace(ptr=77, synchronize=lambda: synced.append(True))
    cuda = types.SimpleNamespace(get_current_stream=lambda: stream)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(memory, "prefetch_to_host", prefetch)
    monkeypatch.setattr(memory.ManagedMemory, "evict_refused", "")
    return state, synced


def _array(ptr, nbytes):
    import types

    return types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr), nbytes=nbytes)


def test_a_cold_run_moves_the_managed_inputs_to_the_host_by_prefetch(monkeypatch):
    from gpumm.run import memory

    runtime, synced = _fake_cupy(monkeypatch, refuse=False)
    written = []
    monkeypatch.setattr(memory.ManagedMemory, "write_on_host", lambda self, a, h: written.append(a))
    mode = memory.ManagedPrefetchMemory()
    arrays = [_array(1000, 64), _array(2000, 128)]
    mode.make_cold(arrays, lambda: pytest.fail("the host copies are not needed"))
    assert runtime.calls == [(1000, 64, 77), (2000, 128, 77)]
    assert synced == [True] and written == []  # waited for, and nothing written by the host


def test_a_refused_prefetch_falls_back_to_host_writes_and_says_so_once(monkeypatch, capsys):
    from gpumm.run import memory

    runtime, _ = _fake_cupy(monkeypatch, refuse=True)
    written = []
    monkeypatch.setattr(memory.ManagedMemory, "write_on_host", lambda self, a, h: written.append((a, h)))
    mode = memory.ManagedMemory()
    arrays = [_array(1000, 64), _array(2000, 128)]
    mode.make_cold(arrays, lambda: ["A", "B"])
    mode.make_cold(arrays, lambda: ["A", "B"])
    assert written == [(arrays[0], "A"), (arrays[1], "B")] * 2
    assert "CUresult 101" in memory.ManagedMemory.evict_refused
    assert capsys.readouterr().err.count("prefetch to the CPU refused") == 1
    runtime.refuse = False
    mode.make_cold(arrays, lambda: ["A", "B"])
    assert runtime.calls == []  # refused once: not tried again in this process


def test_device_memory_has_no_cold_runs_to_prepare():
    from gpumm.run import memory

    assert "cold" not in memory.get("device").info.timed and "cold" in memory.get("managed").info.timed


def test_without_a_driver_the_prefetch_is_refused_not_crashed(monkeypatch):
    import ctypes

    from gpumm.run import memory

    def no_driver(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", no_driver)
    memory._driver_prefetch.cache_clear()  # looked up once per process: look again under the missing driver
    with pytest.raises(memory.PrefetchRefused, match="libcuda.so.1"):
        memory.prefetch_to_host(1000, 64, 0)


def test_the_driver_s_prefetch_is_looked_up_once(monkeypatch):
    import ctypes
    import types

    from gpumm.run import memory

    opened, calls = [], []

    def driver(name):
        opened.append(name)
        return types.SimpleNamespace(cuMemPrefetchAsync=lambda *args: calls.append(args) or 0)

    monkeypatch.setattr(ctypes, "CDLL", driver)
    memory._driver_prefetch.cache_clear()
    try:
        for ptr in (1000, 2000, 3000):
            memory.prefetch_to_host(ptr, 64, 77)
    finally:
        memory._driver_prefetch.cache_clear()
    assert opened == ["libcuda.so.1"]
    assert calls == [(p, 64, memory.CPU_DEVICE_ID, 77) for p in (1000, 2000, 3000)]

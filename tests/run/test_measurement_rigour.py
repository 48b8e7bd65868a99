"""Measurement rigour on the CPU: the exact and rounding checks catch what they must, batch timing's
arithmetic, clock bookkeeping, digests, the GPU resource of every GPU job, profile sizes and regimes."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from gpumm.analyse import access_patterns, claims, counters, floor, rates
from gpumm.archive import replay
from gpumm.profile import session as profile
from gpumm.run import clocks, coalescing, gpu, timing, verify
from gpumm.setup import catalog, config, paths

# ---------------------------------------------------------------- verification


def _checks(C, A, B):
    """(exact check, rounding check) of C = A·B, A and B given as the inputs the checks use."""
    ref, abs_ref, where = verify.reference(A, B, 1 << 40)
    return verify.compare_exact(C, ref, where), verify.compare(C, ref, abs_ref, A.shape[1], where)


def _wrong_products(A, B):
    """Products a buggy kernel could make: one k skipped, one K-tile (16) skipped, one row, one column wrong."""
    a, b = A.astype(np.float32), B.astype(np.float32)
    K = A.shape[1]
    keep = np.ones(K, bool)
    keep[K // 2] = False
    out = {"one k skipped": (a[:, keep] @ b[keep, :])}
    keep = np.ones(K, bool)
    keep[32:48] = False
    out["one K-tile skipped"] = a[:, keep] @ b[keep, :]
    good = a @ b
    row = good.copy()
    row[3, :] = a[3, :-1] @ b[:-1, :]  # the last term of one row lost
    out["one row wrong"] = row
    col = good.copy()
    col[:, 5] = np.nan  # one column never written
    out["one column not written"] = col
    return out


@pytest.mark.parametrize("K", [64, 8192, 16384])
def test_exact_check_catches_every_wrong_product(K):
    A, B = verify.exact_inputs(7, 24, 20, K)
    assert set(np.unique(A)) <= {-4, -3, -2, -1, 1, 2, 3, 4} and np.count_nonzero(A) == A.size
    exact, rounding = _checks((A.astype(np.float64) @ B).astype(np.float32), A, B)
    assert exact.ok and rounding.ok
    for what, C in _wrong_products(A, B).items():
        exact, _ = _checks(C.astype(np.float32), A, B)
        assert not exact.ok, what


@pytest.mark.parametrize("K", [64, 8192, 16384])
def test_rounding_check_passes_float32_and_catches_every_wrong_product(K):
    A, B = verify.random_inputs(7, 24, 20, K)
    good = A @ B  # float32 products and sums (NumPy's BLAS)
    _, rounding = _checks(good, A, B)
    assert rounding.ok and rounding.max_rel_err < 8 * verify.UNIT_ROUNDOFF
    for what, C in _wrong_products(A, B).items():
        _, rounding = _checks(C.astype(np.float32), A, B)
        assert not rounding.ok, (what, rounding.max_rel_err)


def test_recursive_float32_sum_stays_within_the_rounding_tolerance():
    """The slowest-converging order: one running float32 sum, element by element, at K = 16384."""
    A, B = verify.random_inputs(3, 4, 3, 16384)
    C = np.zeros((4, 3), np.float32)
    for k in range(A.shape[1]):
        C += A[:, k : k + 1] * B[k : k + 1, :]
    _, rounding = _checks(C, A, B)
    assert rounding.ok, rounding.max_rel_err


def test_exact_inputs_refuse_k_beyond_exactness():
    with pytest.raises(ValueError, match="no longer summed exactly"):
        verify.exact_inputs(1, 1, 1, verify.EXACT_MAX_K + 1)


# ---------------------------------------------------------------- batch timing and clocks


def test_batch_size_makes_samples_of_at_least_the_target():
    assert timing.batch_size(0.001, target_ms=2.0) == 2000  # 1 µs kernel: 2000 launches per sample
    assert timing.batch_size(0.003, target_ms=2.0) == 667
    assert timing.batch_size(5.0, target_ms=2.0) == 1  # long kernels: one launch per sample
    assert timing.batch_size(1e-6, target_ms=2.0, max_batch=4096) == 4096
    assert timing.per_launch([10.0, 20.0], 4) == [2.5, 5.0]


def test_clock_summary_marks_a_fall_below_the_maximum_as_throttled():
    steady = [(1980, 2619, 50, 0x0), (1980, 2619, 52, 0x1)]
    s = clocks.summarise(steady, 1980)
    assert s["sm_clock_mhz"] == 1980 and s["temperature_c"] == 52 and not s["throttled"]
    assert s["clock_reasons"] == "0x0"  # idle is not a slowdown
    dipped = [*steady, (1755, 2619, 60, 0x4)]  # a power cap
    s = clocks.summarise(dipped, 1980)
    assert s["throttled"] and s["sm_clock_min_mhz"] == 1755 and s["clock_reasons"] == "0x4"
    assert clocks.summarise([], 1980)["sm_clock_mhz"] is None


class _FakeNvml:
    """The NVML calls clocks.Cap makes, answering what a test sets (``broken``: every read raises)."""

    def __init__(self):
        self.reason, self.violation_ns, self.power, self.broken = 0x0, 0, 600.0, False

    def power_limit_w(self):
        return 700.0

    def power_w(self):
        return self.power

    def reasons(self):
        if self.broken:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return self.reason

    def counters(self, energy=True):
        return clocks.Counters(t=0.0, stamp_us=0, power_violation_ns=self.violation_ns, thermal_violation_ns=0)


def _cap(nv):
    """A clocks.Cap on the fake, made as the model step makes it just before the heat (its counters read then)."""
    cap = clocks.Cap.__new__(clocks.Cap)
    cap._nvml, cap._limit = nv, nv.power_limit_w()
    cap._held = cap._counters()
    return cap


def test_the_cap_probe_says_held_from_a_slowdown_reason_or_a_violation_counter_that_moved_else_below_or_near():
    nv = _FakeNvml()
    cap = _cap(nv)
    assert cap() == "below"  # 600 W of 700: under 90% of the limit
    nv.power = 650.0
    assert cap() == ""  # near the cap, not held: the counter has not moved since the call before
    nv.violation_ns += 5_000_000
    assert cap() == "cap"  # the power policy held the clock for 5 ms since
    assert cap() == ""  # and not since
    nv.reason = 0x4  # the software power cap now
    assert cap() == "cap"
    nv.reason = 0x1  # idle is not a slowdown
    assert cap() == ""
    fresh = _cap(nv)
    nv.violation_ns += 1
    assert fresh() == "cap"  # the first call counts what the policy did since the probe was made (the heat's)


def test_the_cap_probe_that_cannot_read_nvml_ends_the_heat_at_its_seconds():
    nv = _FakeNvml()
    cap = _cap(nv)
    nv.broken = True
    assert cap() == "time"
    none = clocks.Cap.__new__(clocks.Cap)
    none._nvml, none._limit, none._held = None, None, None
    assert not none.available and none() == "time"


def test_the_board_s_power_is_nvml_s_instantaneous_field_where_the_driver_has_it():
    import types

    class Nv:
        NVML_FI_DEV_POWER_INSTANT = 186

        def __init__(self, ok):
            self.ok = ok

        def nvmlDeviceGetFieldValues(self, handle, fields):
            value = types.SimpleNamespace(uiVal=690_000)
            return [types.SimpleNamespace(nvmlReturn=0 if self.ok else 3, value=value)]

        def nvmlDeviceGetPowerUsage(self, handle):
            return 610_000  # averaged over the last second

    nvml = clocks._Nvml.__new__(clocks._Nvml)
    nvml.handle = None
    nvml.nv = Nv(True)
    assert nvml.power_w() == 690.0
    nvml.nv = Nv(False)
    assert nvml.power_w() == 610.0


# ---------------------------------------------------------------- digests and configs


def test_digest_covers_the_catalog_entry_and_the_methods_version(monkeypatch):
    import dataclasses

    from gpumm.setup import digest

    v = catalog.from_id("tiled_tile16")
    base = v.digest()
    assert dataclasses.replace(v, block=("16", "8")).digest() != base
    assert dataclasses.replace(v, grid=("cdiv(N, 16)", "cdiv(M, 8)")).digest() != base
    assert dataclasses.replace(v, nvcc_flags=("-G",)).digest() != base
    assert dataclasses.replace(v, arch="sm_90a").digest() != base
    bt = catalog.from_id("coalesced_bt_tile16")
    assert dataclasses.replace(bt, prepare=("transpose_b", ("16", "8"), bt.prepare[2])).digest() != bt.digest()
    blas = catalog.from_id("cpu_blas")
    assert dataclasses.replace(blas, threads=1).digest() != blas.digest()
    monkeypatch.setattr(digest, "METHOD_VERSION", digest.METHOD_VERSION + 1)
    assert v.digest() != base  # the method's version is part of every digest


def test_replay_names_the_settings_the_archive_did_not_use():
    archived = {"mode": "auto", "sizes": [16, 32], "timing": {"repeats": 20, "warmups": 3}, "seed": 1}
    same = {**archived, "mode": "replay"}
    assert replay.config_differences(archived, same) == []
    other = {**archived, "sizes": [16], "timing": {"repeats": 50, "warmups": 3}}
    lines = replay.config_differences(archived, other)
    assert lines == [
        "sizes: [16, 32] (archived) → [16] (this config)",
        "timing.repeats: 20 (archived) → 50 (this config)",
    ]
    long_a = {"metrics": [f"smsp__metric_number_{i}.sum" for i in range(6)]}
    long_c = {"metrics": long_a["metrics"][1:] + [f"smsp__new_metric_{i}.ratio" for i in range(4)]}
    assert replay.config_differences(long_a, long_c) == [
        'metrics: this config adds "smsp__new_metric_0.ratio", "smsp__new_metric_1.ratio", "smsp__new_metric_2.ratio"'
        ' and 1 more; drops "smsp__metric_number_0.sum" (6 archived, 9 here)'
    ]
    assert replay.config_differences(None, other, "aaa", "bbb") == [
        "configuration digest aaa (archived) differs from bbb (this run's)"
    ]
    assert config.digest({**archived, "mode": "measure"}) == config.digest(same)


# ---------------------------------------------------------------- the GPU resource


def test_parallel_gpu_jobs_never_outnumber_the_devices():
    assert gpu.parallel_problem("replay", {}, 8) is None
    assert gpu.parallel_problem("measure", {}, 8) is None  # no limit given: the workflow sets it to the devices
    assert gpu.parallel_problem("measure", {"gpu": 1}, 8) is None
    assert "gpu=2" in gpu.parallel_problem("measure", {"gpu": 2}, 8)  # one device: two jobs would share it
    assert gpu.parallel_problem("measure", {"gpu": 2}, 8, devices=2) is None
    assert gpu.parallel_problem("measure", {"gpu": 1}, 8, devices=2) is None  # fewer at once is allowed
    assert "Use gpu=2 or fewer" in gpu.parallel_problem("measure", {"gpu": 3}, 8, devices=2)


GPU_COMMANDS = {
    "measure",
    "paired",
    "profile",
    "provenance",
    "coalescing",
    "bandwidth",
    "overhead",
    "hierarchy",
    "layers",
}
# steps that never touch the GPU themselves (the *-target steps run under ncu, inside a GPU step)
CPU_COMMANDS = {"build", "build-micro", "replay", "replay-provenance", "replay-study", "collect", "index", "archive"}
CPU_COMMANDS |= {
    "import-profile",
    "profile-target",
    "pages",
    "pages-check",
    "worker",
    "pack-archive",
    "docs",
    "check-config",
    "certify",
    "model-rule",
}


def test_every_step_of_the_command_line_is_classified():
    """A new step must be put in one of the two sets, and so under the resource test below."""
    from gpumm.cli import parser

    sub = next(a for a in parser()._actions if a.dest == "cmd")
    assert set(sub.choices) == GPU_COMMANDS | CPU_COMMANDS and not GPU_COMMANDS & CPU_COMMANDS


def _jobs(text):
    """(rule, resources line, gpumm step) of each job in a dry run's output (``snakemake -n -p``)."""
    jobs = []
    for block in re.split(r"\n\[[^\]]+\]\n", text):
        rule = re.search(r"^(?:local)?rule (\w+):", block, re.M)
        step = re.search(r"python -m gpumm (?:--seal '[^']*' )?(?:--seal-also \S+ )?([\w-]+)", block)
        if rule and step:
            res = re.search(r"^\s*resources: (.*)$", block, re.M)
            jobs.append((rule.group(1), res.group(1) if res else "", step.group(1)))
    return jobs


def _measure_plan(tree, cores: int, *more: str) -> str:
    """Snakemake's dry run (with the shell commands) of a measure-mode run in ``tree``, on a pretend GPU."""
    env = {
        **os.environ,
        gpu.FAKE_ENV: json.dumps({"ok": True, "reason": "", "name": "pretend", "arch": "sm_90", "l2_bytes": 50 << 20}),
    }
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-p", "--cores", str(cores), *more, "--config", "mode=measure"],
        cwd=tree,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    return text


def test_every_gpu_job_declares_the_gpu_resource(tree):
    """Plan a measure-mode run (a pretend GPU), the model's layers on, and read each job's resources from
    Snakemake's dry run."""
    text = _measure_plan(tree, 8, "--configfile", "workflow/configs/model.yaml")
    jobs = _jobs(text)
    steps = {step for _, _, step in jobs}
    assert GPU_COMMANDS <= steps, steps  # the dry run shows every GPU step
    for rule, res, step in jobs:
        assert ("gpu=1" in res) == (step in GPU_COMMANDS), (rule, res)
    assert '"sizes": [1024, 4096]' in text  # the profile's sizes: cached and DRAM regime (50 MiB L2)


@pytest.mark.parametrize("config_file", ["config.yaml", "tools/parallel-check.yaml"])
def test_every_command_a_measure_run_plans_is_one_the_command_line_accepts(tree, tmp_path, config_file):
    """Plan a measure-mode run (a pretend GPU) with the default configuration and with the parallel check's
    (profiling disabled, no metric sets: an empty parameter once left ``--metrics`` without its value), and
    parse every planned ``python -m gpumm`` command with the command line's own parser."""
    import shlex
    import shutil

    from gpumm.cli import parser

    copy = tmp_path / "tree"
    shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    shutil.copy2(paths.ROOT / config_file, copy / "config.yaml")
    text = _measure_plan(copy, 1)
    commands = re.findall(r"python -m gpumm (?:--seal '[^']*' )?(?:--seal-also \S+ )?(.*?)(?: >| 2>| \||$)", text, re.M)
    steps = set()
    for command in commands:
        args = shlex.split(command)
        try:
            parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"the workflow plans a command the command line refuses: python -m gpumm {command}")
        steps.add(args[0])
    assert {"build", "measure", "profile", "coalescing", "collect", "pages"} <= steps, steps
    if config_file != "config.yaml":  # profiling disabled: the profile step is told so
        assert all("--disabled" in c for c in commands if c.startswith("profile "))


@pytest.mark.parametrize("gpus, limit", [(1, 1), (2, 2)])
def test_the_run_s_gpu_limit_is_its_number_of_gpus(tree, tmp_path, gpus, limit):
    """The default profile sets no gpu limit; the workflow sets it to the GPUs the run uses (one job per device).
    A real job (one build, on a pretend machine of one or two H200s) shows the limit Snakemake was given."""
    import shutil

    import yaml

    prof = yaml.safe_load((paths.ROOT / "workflow" / "profiles" / "default" / "config.yaml").read_text())
    assert "gpu" not in (prof.get("resources") or {})
    assert (paths.ROOT / "profiles").resolve() == paths.ROOT / "workflow" / "profiles"
    if not shutil.which("nvcc"):
        pytest.fail("nvcc is not on PATH: this test builds one kernel (the README's set-up installs it)")
    copy = tmp_path / "tree"
    shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    fake = [{"index": i, "name": "NVIDIA H200", "uuid": f"GPU-{i}", "arch": "sm_90"} for i in range(gpus)]
    probe = {"ok": True, "reason": "", "name": "NVIDIA H200", "arch": "sm_90", "l2_bytes": 50 << 20, "gpus": fake}
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "results/build/naive/kernel.cubin", "--cores", "8"]
        + ["--config", "mode=measure"],
        cwd=copy,
        capture_output=True,
        text=True,
        env={**os.environ, gpu.FAKE_ENV: json.dumps(probe)},
        check=False,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-2000:]
    assert f'Provided resources: gpu=Resource("gpu", {limit})' in text


# ---------------------------------------------------------------- profile sizes and regimes


def test_profile_size_leaves_the_l2_behind():
    assert profile.dram_size(50 << 20) == 4096  # H100: 3 x 64 MiB = 3.8 x the L2
    assert profile.dram_size(60 << 20) == 4096  # H200: 3.2 x
    assert profile.dram_size(128 << 20) == 8192
    assert profile.sizes("auto", 1024, 50 << 20) == [1024, 4096]
    assert profile.sizes(2048, 0, 50 << 20) == [2048]
    assert profile.regime(1024, 50 << 20) == "cached" and profile.regime(4096, 50 << 20) == "dram"
    assert profile.regime(2048, 50 << 20) == "mixed"


def test_profile_summary_derives_the_cited_counters():
    rows = []
    for n, rd in ((1024, 8.4e6), (4096, 3.0e9)):
        for metric, value in (
            ("dram__bytes_read.sum", rd),
            ("dram__bytes_write.sum", 4 * n * n),
            ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 100.0),
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 400.0),
        ):
            rows.append(
                {
                    "variant": "naive",
                    "M": n,
                    "N": n,
                    "K": n,
                    "kernel": "matmul_naive",
                    "metric": metric,
                    "value": value,
                    "status": "ok",
                }
            )
    s = counters.profile_summary(pd.DataFrame(rows), 50 << 20).set_index("size")
    assert s.loc[1024, "regime"] == "cached" and s.loc[4096, "regime"] == "dram"
    assert s.loc[4096, "dram_over_minimum"] == pytest.approx((3.0e9 + 4 * 4096**2) / (12 * 4096**2))
    assert s.loc[4096, "flop_per_dram_byte"] == pytest.approx(2 * 4096**3 / (3.0e9 + 4 * 4096**2))
    assert s.loc[1024, "sectors_per_request"] == 4


# ---------------------------------------------------------------- the coalescing plan fills the GPU


def test_coalescing_plan_fills_the_gpu_and_outgrows_the_l2():
    h100 = coalescing.Device(sm_count=132, max_threads_per_sm=2048, l2_bytes=50 << 20, free_bytes=80 << 30)
    plan = coalescing.Plan(sizes=[1024, 4096], count=1 << 25, strides=[1, 32], offsets=[0, 1], seed=1)
    cfgs = coalescing.configurations(plan, h100)
    rc = [c for c in cfgs if c["pattern"] in ("rows", "cols")]
    for c in rc:
        assert coalescing.threads(c) >= h100.slots  # every thread slot of every SM
        if c["regime"] == "dram":
            assert c["working_set_bytes"] >= 3 * h100.l2_bytes and c["matrix_stride"] == c["n"] ** 2
        else:
            assert c["matrix_stride"] == 0 and c["working_set_bytes"] <= h100.l2_bytes // 2
    assert {(c["n"], c["regime"]) for c in rc} == {(1024, "dram"), (1024, "l2"), (4096, "dram")}  # 64 MiB: no l2
    copy = next(c for c in cfgs if c["pattern"] == "strided" and c["stride"] == 1 and c["offset"] == 0)
    assert copy["working_set_bytes"] == 8 << 25 and copy["working_set_bytes"] >= 3 * h100.l2_bytes
    assert cfgs[-1]["pattern"] == "copy4" and coalescing.useful_bytes(cfgs[-1]) == 8 << 25


def test_rows_over_cols_is_per_matrix_and_per_regime():
    s = pd.DataFrame(
        [
            {"pattern": "rows", "regime": "dram", "n": 1024, "ms_per_matrix": 0.6, "status": "ok"},
            {"pattern": "cols", "regime": "dram", "n": 1024, "ms_per_matrix": 0.1, "status": "ok"},
            {"pattern": "rows", "regime": "l2", "n": 1024, "ms_per_matrix": 0.2, "status": "ok"},
            {"pattern": "cols", "regime": "l2", "n": 1024, "ms_per_matrix": 0.1, "status": "ok"},
        ]
    )
    r = access_patterns.rows_over_cols(s).set_index("regime")
    assert r.loc["dram", "ratio"] == pytest.approx(6) and r.loc["l2", "ratio"] == pytest.approx(2)


# ---------------------------------------------------------------- overhead floor and the CPU crossover


def test_overhead_summary_and_floor():
    s = pd.DataFrame(
        [
            {"what": "empty kernel", "method": m, "batch": b, "repeat": i, "ms": v * (1 + i / 100)}
            for m, b, v in (("single", 1, 0.006), ("graph", 1000, 0.0008))
            for i in range(5)
        ]
    )
    o = floor.overhead_summary(s)
    assert list(o.method) == ["single", "graph"]
    assert floor.launch_floor_ms(o) == pytest.approx(0.0008 * 1.02)


def test_cpu_crossover_is_the_size_from_which_the_gpu_always_wins():
    rows = []
    for n, g, c in ((16, 0.05, 0.001), (64, 0.06, 0.05), (256, 0.1, 3.0), (1024, 1.0, 200.0)):
        rows += [
            {
                "variant": "cublas",
                "M": n,
                "N": n,
                "K": n,
                "timed": "end_to_end",
                "memory_mode": "device",
                "status": "ok",
                "median_ms": g,
            },
            {
                "variant": "cpu_serial",
                "M": n,
                "N": n,
                "K": n,
                "timed": "end_to_end",
                "memory_mode": "host",
                "status": "ok",
                "median_ms": c,
            },
        ]
    x = rates.cpu_crossover(pd.DataFrame(rows), ["cublas"], ["cpu_serial"])
    assert x.gpu_faster_from.tolist() == [256] and x.sizes_compared.tolist() == ["16–1024"]


def _blas_rows(every_ms, one_ms, library=""):
    def row(v, n, ms, lib):
        return {"variant": v, "M": n, "N": n, "K": n, "status": "ok", "median_ms": ms, "library": lib}

    rows = [row("cpu_blas", n, ms, library) for n, ms in every_ms.items()]
    return pd.DataFrame(rows + [row("cpu_blas1", n, ms, "") for n, ms in one_ms.items()])


def test_a_blas_baseline_on_one_thread_is_told_by_its_record_or_its_speed():
    # recorded: what the library said wins over any speed
    rec = rates.blas_threads(_blas_rows({2048: 100.0}, {2048: 100.0}, "NumPy BLAS: openblas 0.3.27, 16 of 16 cores"))
    assert rec["recorded"].endswith("16 of 16 cores") and not rec["one_thread"]
    rec = rates.blas_threads(_blas_rows({2048: 10.0}, {2048: 100.0}, "NumPy BLAS: openblas 0.3.27, 1 of 16 cores"))
    assert rec["one_thread"]
    # not recorded (older archives): the speed against one thread at the largest common size of 1024 or more
    slow = rates.blas_threads(_blas_rows({512: 1.0, 1024: 14.4, 2048: 110.0, 4096: 890.0}, {1024: 18.9, 2048: 114.0}))
    assert slow["one_thread"] and slow["size"] == 2048 and slow["gain"] == pytest.approx(114.0 / 110.0)
    fast = rates.blas_threads(_blas_rows({1024: 1.6, 2048: 11.7}, {1024: 13.9, 2048: 106.1}))
    assert not fast["one_thread"] and fast["gain"] == pytest.approx(106.1 / 11.7)
    small = rates.blas_threads(_blas_rows({256: 1.0}, {256: 1.0}))  # nothing at 1024 or more: no verdict
    assert not small["one_thread"] and small["size"] is None
    assert rates.blas_threads(_blas_rows({}, {1024: 1.0})) is None


# ---------------------------------------------------------------- every selection filters by memory mode


def test_device_tables_never_mix_in_other_memory_modes():
    """Zero-copy rows ten times faster than the device ones must not leak into any device-mode table."""
    rows = []
    for v, fam, g in (("naive", "naive", 1.0), ("unrolled", "unrolled", 3.0), ("cublas", "cublas", 10.0)):
        for n in (1024, 4096):
            for mode, speed in (("device", 1.0), ("zero_copy", 10.0)):
                ms = 2 * n**3 / (g * speed * 1e12) * 1e3
                rows.append(
                    {
                        "variant": v,
                        "family": fam,
                        "M": n,
                        "N": n,
                        "K": n,
                        "memory_mode": mode,
                        "timed": "kernel",
                        "status": "ok",
                        "median_ms": ms,
                        "gflops": 2 * n**3 / (ms * 1e-3) / 1e9,
                    }
                )
        for n in (16, 64):  # end to end, against a CPU baseline
            rows.append(
                {
                    "variant": v,
                    "family": fam,
                    "M": n,
                    "N": n,
                    "K": n,
                    "memory_mode": "zero_copy",
                    "timed": "end_to_end",
                    "status": "ok",
                    "median_ms": 1e-6,
                    "gflops": 1.0,
                }
            )
            rows.append(
                {
                    "variant": v,
                    "family": fam,
                    "M": n,
                    "N": n,
                    "K": n,
                    "memory_mode": "device",
                    "timed": "end_to_end",
                    "status": "ok",
                    "median_ms": 1.0,
                    "gflops": 1.0,
                }
            )
    for n in (16, 64):
        rows.append(
            {
                "variant": "cpu_serial",
                "family": "cpu_serial",
                "M": n,
                "N": n,
                "K": n,
                "memory_mode": "host",
                "timed": "end_to_end",
                "status": "ok",
                "median_ms": 0.5,
                "gflops": 1.0,
            }
        )
    s = pd.DataFrame(rows)
    best = rates.best_per_family(s, 4096)
    assert best.loc["cublas", "gflops"] == pytest.approx(10_000)  # device, not zero-copy's 100,000
    lad = rates.ladder(
        s,
        [
            {"family": "naive"},
            {"family": "unrolled", "rung_below": "naive"},
            {"family": "cublas", "rung_below": "unrolled"},
        ],
        4096,
    ).set_index("family")
    assert lad.loc["unrolled", "share_of_cublas"] == pytest.approx(0.3)
    c = claims.cases(s, pd.DataFrame(columns=["variant", "smem_bytes"])).set_index("part")
    assert c.at["a", "size"] == 4096 and c.at["a", "value"] == pytest.approx(3.0)
    x = rates.cpu_crossover(s, ["cublas"], ["cpu_serial"])
    assert x.gpu_faster_from.isna().all()  # device end to end (1 ms) never beats the CPU's 0.5 ms


def test_a_job_inside_a_cluster_allocation_is_not_refused():
    assert gpu.parallel_problem("measure", {"gpu": 2}, 8, cluster=True) is None


def test_a_measure_plan_on_several_gpus_runs_one_job_per_device(tree):
    """A pretend machine of two H200s and an A100: the plan uses the two H200s side by side and says the A100 is
    left out; asking for more GPUs than that, by config or by --resources, stops before any job."""
    gpus = [
        {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-aaaa", "arch": "sm_90"},
        {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-bbbb", "arch": "sm_90"},
        {"index": 2, "name": "NVIDIA A100", "uuid": "GPU-cccc", "arch": "sm_80"},
    ]
    fake = {"ok": True, "reason": "", "name": "NVIDIA H200", "arch": "sm_90", "l2_bytes": 50 << 20, "gpus": gpus}
    env = {**os.environ, gpu.FAKE_ENV: json.dumps(fake)}

    def plan(*extra, config=()):
        cmd = [sys.executable, "-m", "snakemake", "-n", "--cores", "8", *extra, "--config", "mode=measure", *config]
        out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=env, check=False)
        return out.returncode, out.stdout + out.stderr

    rc, text = plan()
    assert rc == 0, text[-2000:]
    assert "gpumm: GPU 2 (NVIDIA A100) left out: a run measures on one kind of GPU (NVIDIA H200)" in text
    assert "2 GPUs side by side (0, 1)" in text
    rc, text = plan("--resources", "gpu=3")
    assert rc != 0 and "--resources gpu=3: this run uses 2 GPU(s)" in text and "Nothing was run." in text
    rc, text = plan(config=["gpus=3"])
    assert rc != 0 and "config: gpus = 3 is not allowed" in text and "Traceback" not in text

"""On the GPU: every catalog variant correct at square and odd shapes; modes allocate what they say.

Run on the GPU machine with ``pytest -m gpu``; elsewhere these skip with the reason.
"""

import dataclasses

import numpy as np
import pytest

from gpumm.build import loops
from gpumm.build import nvcc as build
from gpumm.run import measure, memory, sampling, timing, verify
from gpumm.run.launch import Launcher
from gpumm.setup import catalog

pytestmark = pytest.mark.gpu

SHAPES = [
    (128, 128, 128),
    (256, 256, 256),
    (1024, 1024, 1024),
    (1000, 1000, 1000),
    (1023, 1023, 1023),
    (333, 517, 129),
    (1, 4096, 7),
    (17, 1, 33),
    (4096, 3, 5),
    (4097, 33, 4095),
    (1023, 1025, 1024),
]
# every family; each param at its defaults, its min, its max and one value between (TILE 18: not a power of two)
SELECTION = {
    name: {
        p: sorted({*sp["default"], sp["min"], sp["max"], (sp["min"] + sp["max"]) // 2})
        for p, sp in fam.get("params", {}).items()
    }
    for name, fam in catalog.load().items()
}
VARIANTS = catalog.expand(SELECTION)
MATMULS = [v for v in VARIANTS if v.op == "matmul"]
MOVERS = [v for v in VARIANTS if v.op in ("transpose", "copy")]  # the transposes and their copy
BF16 = [v for v in VARIANTS if v.op == "matmul_bf16" and "MAX_M" not in dict(v.defines)]  # the race on the tensor cores
# K a multiple of 8 (the TMA rungs' rule, the config's bf16 shapes); odd M and N test the edges, N % 4 != 0 the
# direct stores of C where the TMA cannot store it
BF16_SHAPES = [(128, 128, 128), (256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096), (1023, 1025, 1024)]
BF16_SHAPES += [(4097, 33, 4096), (333, 517, 136), (1000, 1028, 1032), (7, 9, 8), (129, 131, 64), (2048, 8, 2056)]
MOVER_SHAPES = [(16, 16), (1000, 1000), (1023, 1023), (1024, 1024), (4097, 4097), (8192, 8192), (16384, 16384)]
MOVER_SHAPES += [(1, 4097), (4097, 1), (1023, 1025), (16384, 32), (32, 16384)]


@pytest.fixture(scope="session")
def arch():
    import cupy

    p = cupy.cuda.runtime.getDeviceProperties(0)
    return f"sm_{p['major']}{p['minor']}"


class _Launchers(dict):
    """Each variant built and loaded the first time a test asks for it (a -k selection builds only its own)."""

    def __init__(self, tmp_path_factory, arch):
        super().__init__()
        self.tmp, self.arch = tmp_path_factory, arch
        self.by_id = {v.id: v for v in VARIANTS}

    def __missing__(self, vid):
        v, binary = self.by_id[vid], None
        if v.is_built:
            d = self.tmp.mktemp(v.id)
            if v.is_cuda:
                build.build(v, self.arch, d)
            else:
                build.build_host(v, d)
            binary = d / v.binary_name
        self[vid] = Launcher(v, binary)
        return self[vid]


@pytest.fixture(scope="session")
def launchers(tmp_path_factory, arch):
    return _Launchers(tmp_path_factory, arch)


def run_once(launcher, M, N, K, seed, exact=False):
    import cupy

    mode = memory.get("device" if launcher.variant.on_gpu else "host")
    A_h, B_h = verify.exact_inputs(seed, M, N, K) if exact else measure.inputs(seed, M, N, K)
    assert np.count_nonzero(A_h) > 0.99 * A_h.size  # never zeros
    A, B, C = mode.place(A_h), mode.place(B_h), mode.empty((M, N))
    C.fill(np.nan)
    launcher.bind(A, B, C)()  # the whole product: the transpose of B first where there is one
    cupy.cuda.Device().synchronize()
    ref, abs_ref, where = verify.reference(A_h, B_h, 1 << 27, absolute=not exact)
    out = mode.fetch(C) if where == "cpu_f64" else C
    return verify.compare_exact(out, ref, where) if exact else verify.compare(out, ref, abs_ref, K, where)


@pytest.mark.parametrize("vid", [v.id for v in MATMULS if v.is_cuda])
def test_no_matmul_build_uses_a_tensor_core(launchers, vid):
    """The race to cuBLAS is FP32 FFMA only: the SASS of every build (cuobjdump, here) has no MMA instruction."""
    sass = launchers[vid].binary.with_name("kernel.sass").read_text()
    found = loops.tensor_core_ops("", sass)
    assert found["sass_tensor_core"] == 0, (vid, found)
    assert found["sass_ffma"] > 0, vid


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("vid", [v.id for v in MATMULS])
def test_variant_matches_float64_reference(launchers, vid, shape):
    seed = hash((vid, shape)) & 0xFFFF
    check = run_once(launchers[vid], *shape, seed=seed, exact=True)
    assert check.ok, check.reason
    check = run_once(launchers[vid], *shape, seed=seed)
    assert check.ok, check.reason


# N = 2 tiles and 4 columns (folded), 128 and 3 (folded), 128 and 5 (a tile of its own), 8 and 2 (folded); N within
# the fold (one tile); K that leaves a cluster's blocks unequal stages and a part of a stage, and K of one stage
# (the cluster's second block with no k of its own)
FOLD_SHAPES = [(130, 260, 67), (200, 131, 129), (65, 133, 40), (129, 1026, 1000), (3, 4, 9), (257, 1028, 17)]
FOLD_SHAPES += [(130, 260, 5)]


@pytest.mark.parametrize("shape", FOLD_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("vid", [v.id for v in MATMULS if int(dict(v.defines).get("FOLD", 0))])
def test_a_build_that_folds_its_last_column_of_tiles_matches_float64_at_every_width(launchers, vid, shape):
    seed = hash((vid, shape)) & 0xFFFF
    for exact in (True, False):
        check = run_once(launchers[vid], *shape, seed=seed, exact=exact)
        assert check.ok, check.reason


def test_an_unwritten_element_fails_verification(launchers):
    """A grid one block short leaves poisoned NaNs, which verification must catch."""
    good = launchers["naive"]
    short = dataclasses.replace(good.variant, grid=("cdiv(N, 16) - 1", "cdiv(M, 16)"))
    bad = Launcher(short, good.binary)
    check = run_once(bad, 64, 64, 64, seed=1)
    assert not check.ok and "NaN" in check.reason


@pytest.mark.parametrize("shape", [(1023, 1025, 1024), (333, 517, 129), (3000, 2000, 777)], ids=str)
def test_a_persistent_kernel_gives_the_same_bits_launch_after_launch(launchers, shape):
    """streamk keeps a workspace and per-tile counters in its module from launch to launch: each completing block
    resets its tile's counter and sums the partial tiles in k order, so later launches give the first's bits."""
    import cupy

    launcher = launchers["streamk"]
    M, N, K = shape
    d = dict(launcher.variant.defines)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    tiles = -(-M // d["BM"]) * -(-N // d["BN"])
    assert 0 < tiles % sms and (tiles % sms) * 100 <= sms * (100 - d["SK_IDLE_PCT"])  # the last wave is split
    mode = memory.get("device")
    A_h, B_h = measure.inputs(7, M, N, K)
    A, B = mode.place(A_h), mode.place(B_h)
    outs = []
    for _ in range(3):
        C = mode.empty((M, N))
        C.fill(np.nan)
        launcher.bind(A, B, C)()
        cupy.cuda.Device().synchronize()
        outs.append(cupy.asnumpy(C))
    assert np.isfinite(outs[0]).all()
    for out in outs[1:]:
        assert np.array_equal(out, outs[0])


@pytest.mark.parametrize("mode, kind", [("device", 2), ("zero_copy", 1), ("managed", 3), ("managed_prefetch", 3)])
def test_each_mode_allocates_what_it_says(mode, kind):
    """cudaPointerGetAttributes: 2 device, 1 host (mapped: the device sees the same address), 3 managed."""
    import cupy

    host = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    m = memory.get(mode)
    a = m.place(host)
    attrs = cupy.cuda.runtime.pointerGetAttributes(a.data.ptr)
    assert attrs.type == kind
    if mode == "zero_copy":
        assert attrs.devicePointer == attrs.hostPointer == a.data.ptr
    assert np.array_equal(cupy.asnumpy(a * 2), host * 2)  # a kernel reads it
    m.before_run([a])  # the prefetch, where there is one
    assert np.array_equal(m.fetch(a), host)


SIX = ["naive", "tiled_tile16", "no_bank_conflict_tile16", "outer_product", "unrolled", "cublas"]


@pytest.mark.parametrize("shape", MOVER_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("vid", [v.id for v in MOVERS])
def test_transposes_and_copy_are_exact(launchers, vid, shape):
    """Bit for bit, output poisoned first, at every listed shape (odd, tall, wide)."""
    from gpumm.run import operations

    v = launchers[vid].variant
    checked = operations.get(v.op).check(launchers[vid], memory.get("device"), 11, 0, (*shape, 1))
    assert checked.exact.ok, checked.exact.reason


def test_memory_hierarchy_chase_and_reads_verify(tmp_path, arch):
    from gpumm.run import hierarchy

    m = catalog.microbenchmarks()["memory_hierarchy"]
    build.build_file(catalog.paths.KERNELS / m["file"], m["entries"], arch, tmp_path)
    plan = hierarchy.Plan(min_bytes=4096, l2_multiple=1, per_octave=1, steps=2000, repeats=2, warmups=1)
    df = hierarchy.run(tmp_path / "kernel.cubin", plan, progress=False)
    assert (df.status == "ok").all(), df[df.status != "ok"].reason.tolist()
    lat = df[df.kind == "latency"].groupby("bytes").ns_per_step.median()
    assert lat.iloc[-1] > 2 * lat.iloc[0]  # a buffer the size of the L2 is slower to chase than 4 KiB
    assert set(df[df.kind == "bandwidth"].level) == {"shared", "L2", "DRAM"}


@pytest.mark.parametrize("vid", [v.id for v in MATMULS if v.on_gpu])
def test_variants_verify_under_every_memory_mode(launchers, vid):
    plan = measure.Plan(
        shapes=[(64, 64, 64), (333, 517, 129), (1000, 1000, 1000)],
        warmup=timing.Warmup(1),
        rule=sampling.Rule(min_samples=2, max_samples=3, timeout_s=0.1),
        budget_s=60,
        seed=5,
        cpu_max_mnk=1 << 30,
        modes=["device", "zero_copy", "managed", "managed_prefetch"],
    )
    df = measure.run(launchers[vid].variant, launchers[vid].binary, plan, progress=False)
    assert (df.status == "ok").all(), df[df.status != "ok"][["memory_mode", "M", "reason"]].to_string()
    assert df.verified.all()
    timed = df.groupby("memory_mode").timed.apply(set).to_dict()
    assert timed["zero_copy"] >= {"kernel"} and timed["managed"] >= {"cold", "warm"}
    assert timed["managed_prefetch"] >= {"cold", "warm"} and timed["device"] >= {"kernel", "end_to_end"}
    assert (df.exact_check == "ok").all()
    if launchers[vid].variant.prepare:
        assert "prepare" in set(df.timed)


@pytest.mark.parametrize("mode, kind", [("zero_copy", 1), ("managed", 3), ("device", 2)])
def test_the_transposed_operand_lives_in_the_mode(launchers, mode, kind):
    """B^T of the variants that transpose B first is allocated by the memory mode under test."""
    import cupy

    m = memory.get(mode)
    made = []

    def scratch(shape):
        made.append(m.empty(shape))
        return made[-1]

    A_h, B_h = measure.inputs(3, 64, 48, 80)
    A, B, C = m.place(A_h), m.place(B_h), m.empty((64, 48))
    launchers["no_bank_conflict_tile16"].bind(A, B, C, scratch=scratch)()
    cupy.cuda.Device().synchronize()
    assert len(made) == 1 and made[0].shape == (48, 80)
    assert cupy.cuda.runtime.pointerGetAttributes(made[0].data.ptr).type == kind
    assert np.allclose(m.fetch(C), A_h @ B_h, atol=1e-4)


def test_batched_timing_captures_kernels_and_cublas_in_graphs(launchers):
    """Short kernels and cuBLAS are timed as CUDA graphs of back-to-back launches, and still compute C."""
    import cupy

    with cupy.cuda.Stream(non_blocking=True):
        for vid in ("tiled_tile16", "cublas", "coalesced_bt_tile16"):
            A_h, B_h = verify.exact_inputs(1, 96, 80, 64)
            A, B, C = cupy.asarray(A_h), cupy.asarray(B_h), cupy.full((96, 80), cupy.nan, dtype=cupy.float32)
            product = launchers[vid].bind(A, B, C)
            t = timing.time_batched(product, 1, 3, 50)
            assert t.method == "graph" and t.batch == 50 and len(t.samples) == 3 and min(t.samples) > 0, vid
            assert np.array_equal(cupy.asnumpy(C), A_h.astype(np.float64) @ B_h.astype(np.float64)), vid
        assert "cublasSgemm" in launchers["cublas"].bind(A, B, C).library


def _fixed(shapes, samples: int, cpu_max_mnk: int) -> measure.Plan:
    """A device-memory plan of one warm-up and a fixed count of samples per set."""
    return measure.Plan(
        shapes=shapes,
        modes=["device"],
        warmup=timing.Warmup(1),
        rule=sampling.fixed(samples),
        budget_s=30,
        seed=3,
        cpu_max_mnk=cpu_max_mnk,
    )


def test_clocks_are_recorded_during_a_measurement(launchers):
    plan = _fixed([(512, 512, 512)], 3, 1 << 30)
    df = measure.run(launchers["naive"].variant, launchers["naive"].binary, plan, progress=False)
    k = df[df.timed == "kernel"]
    assert k.sm_clock_mhz.notna().all() and (k.sm_clock_mhz > 100).all() and k.throttled.notna().all()
    assert set(k.method) == {"graph"} and (k.batch >= 1).all()


def test_overhead_floor_is_measured(tmp_path, arch):
    from gpumm.run import overhead

    m = catalog.microbenchmarks()["launch_overhead"]
    build.build_file(catalog.paths.KERNELS / m["file"], m["entries"], arch, tmp_path)
    df = overhead.run(tmp_path / "kernel.cubin", 1, 3)
    med = df.groupby(["what", "method"]).ms.median()
    assert med[("empty kernel", "graph")] < med[("empty kernel", "single")]
    assert set(df.method) >= {"single", "stream", "graph"}


def test_coalescing_patterns_verify_and_time(tmp_path, arch):
    from gpumm.run import bandwidth, coalescing

    m = catalog.microbenchmarks()["access_patterns"]
    build.build_file(catalog.paths.KERNELS / m["file"], m["entries"], arch, tmp_path)
    plan = coalescing.Plan(
        sizes=[256, 1000],
        count=100_003,
        strides=[1, 4, 32],
        offsets=[0, 3, 31],
        seed=2,
        warmup=timing.Warmup(1),
        rule=sampling.fixed(3),
    )
    df = coalescing.run(tmp_path / "kernel.cubin", plan, progress=False)
    assert (df.status == "ok").all() and df.verified.all() and (df.gbs > 0).all()
    dev = coalescing.device()
    keys = ["pattern", "regime", "n", "copies", "stride", "offset"]
    assert len(df.drop_duplicates(keys)) == len(coalescing.configurations(plan, dev))
    assert {"dram", "l2"} <= set(df.regime) and "copy4" in set(df.pattern)
    assert (df[df.pattern == "rows"].threads >= dev.slots).all()  # the reads fill the GPU
    bw = bandwidth.run(1 << 24, 1, 3)
    assert (
        set(bw.transfer)
        == {
            "host_to_device_pageable",
            "host_to_device_pinned",
            "device_to_host_pageable",
            "device_to_host_pinned",
            "device_to_device",
        }
        and (bw.gbs > 0).all()
    )


def test_measure_records_samples_failures_and_skips(launchers):
    plan = _fixed([(64, 64, 64), (333, 517, 129)], 5, 1 << 27)
    df = measure.run(launchers["tiled_tile16"].variant, launchers["tiled_tile16"].binary, plan, progress=False)
    assert (df.status == "ok").all() and len(df) == 20  # kernel and end-to-end samples
    assert df.verified.all() and (df.gflops > 0).all()
    df = measure.run(
        launchers["coalesced_bt_tile16"].variant, launchers["coalesced_bt_tile16"].binary, plan, progress=False
    )
    assert set(df.timed) == {"kernel", "prepare", "end_to_end"} and (df.status == "ok").all()
    # the product's time includes its preparation
    med = df.groupby(["M", "timed"]).ms.median()
    assert med[(333, "kernel")] > med[(333, "prepare")]
    cpu = dataclasses.replace(plan, shapes=[(64, 64, 64), (333, 500, 129)])  # within the serial loop's max_size 512
    df = measure.run(launchers["cpu_serial"].variant, launchers["cpu_serial"].binary, cpu, progress=False)
    assert (df.status == "ok").all() and set(df.method) == {"host"} and df.verified.all()
    df = measure.run(launchers["cpu_serial"].variant, launchers["cpu_serial"].binary, plan, progress=False)
    assert df.set_index("N").status.to_dict() == {64: "ok", 517: "skipped"}  # 517 > 512: a recorded skip
    tight = dataclasses.replace(plan, shapes=[(64, 64, 64), (2048, 2048, 2048)], budget_s=1e-6)
    df = measure.run(launchers["naive"].variant, launchers["naive"].binary, tight, progress=False)
    assert set(df.status) == {"skipped"} and df.reason.str.contains("budget").all()


def test_the_stopping_rule_on_real_kernels(launchers):
    """A quiet long kernel stops at its minimum; every set records why it stopped; checks count as warm-up."""
    plan = measure.Plan(
        shapes=[(64, 64, 64), (4096, 4096, 4096)],
        modes=["device"],
        rule=sampling.Rule(min_samples=5, max_samples=40, max_noise_pct=2.0, timeout_s=5),
        budget_s=60,
        seed=4,
        cpu_max_mnk=1 << 27,
        end_to_end_max_size=0,
    )
    df = measure.run(launchers["naive"].variant, launchers["naive"].binary, plan, progress=False)
    assert (df.status == "ok").all() and set(df.stop) <= set(sampling.STOPS)
    big = df[df.M == 4096]
    assert len(big) >= 5 and big.stop.iloc[0] in ("quiet", "timeout")
    assert big.warmups.iloc[0] <= 1  # the two checks of a ~25 ms kernel (H100) already ran about warmup_s


def test_the_gpu_lock_keeps_a_second_timing_off_the_gpu(launchers, tmp_path):
    """While this process holds the GPU's lock, a measurement started beside it waits; with a deadline it stops
    with one line and writes nothing."""
    import os
    import subprocess
    import sys

    from gpumm.run import gpulock

    lock_dir = tmp_path / "locks"
    env = {**os.environ, "GPUMM_LOCK_DIR": str(lock_dir), "GPUMM_GPU_WAIT_S": "2"}
    env.pop("GPUMM_WORKER", None)
    os.environ["GPUMM_LOCK_DIR"] = str(lock_dir)
    try:
        with gpulock.hold_current("the test"):
            cmd = [sys.executable, "-m", "gpumm", "measure", "--variant", "naive", "--sizes", "64"]
            cmd += ["--binary", str(launchers["naive"].binary), "--out-dir", str(tmp_path / "out")]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    finally:
        os.environ.pop("GPUMM_LOCK_DIR", None)
    assert r.returncode == 2 and "stayed in use by pid" in r.stderr and "the test" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out" / "samples.csv").exists()


def test_a_step_through_the_gpu_worker_is_the_step(launchers, tmp_path):
    """The same measurement in process and through the worker: same rows, the worker's log says it served it,
    and a second step reuses the worker (one CUDA context)."""
    import os
    import subprocess
    import sys

    import pandas as pd

    env = {**os.environ, "GPUMM_WORKER": "1", "GPUMM_WORKER_DIR": str(tmp_path / "w")}
    env["GPUMM_WORKER_LOG"] = str(tmp_path / "worker.log")
    base = [sys.executable, "-m", "gpumm", "measure", "--variant", "tiled_tile16", "--sizes", "128,256"]
    base += ["--binary", str(launchers["tiled_tile16"].binary)]
    for out in ("a", "b"):
        r = subprocess.run([*base, "--out-dir", str(tmp_path / out)], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
    subprocess.run([sys.executable, "-m", "gpumm", "worker", "--stop"], env=env, check=True)
    log = (tmp_path / "worker.log").read_text()
    assert log.count("CUDA context ready") == 1 and log.count("exit 0") == 2, log
    a, b = (pd.read_csv(tmp_path / x / "samples.csv") for x in "ab")
    assert (a.status == "ok").all() and a[["M", "timed"]].drop_duplicates().equals(b[["M", "timed"]].drop_duplicates())


@pytest.mark.parametrize("shape", BF16_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("vid", [v.id for v in BF16])
def test_bf16_variant_matches_float64_reference(launchers, arch, vid, shape):
    """Issue 30: every BF16 rung (and cuBLAS BF16) through the operation's own checks, as a run makes them: the
    output poisoned with NaN, bit for bit on small integers, then within the rounding tolerance of the float64
    product of the BF16 inputs, at square and odd shapes."""
    from gpumm.run import operations

    v = launchers.by_id[vid]
    if not catalog.runs_on(v, arch):
        pytest.skip(f"{vid} needs {v.arch}; this GPU is {arch}")
    seed = hash((vid, shape)) & 0xFFFF
    checked = operations.get("matmul_bf16").check(launchers[vid], memory.get("device"), seed, 1 << 27, shape)
    assert checked.exact.ok, checked.exact.reason
    assert checked.rounding.ok, checked.rounding.reason


@pytest.mark.parametrize("vid", [v.id for v in BF16 if v.is_cuda])
def test_each_bf16_rung_uses_the_tensor_core_instruction_it_is_about(launchers, arch, vid):
    """WMMA and mma.sync compile to HMMA; from the wgmma rung on, the products are HGMMA (the Hopper path), with
    no HMMA; no rung spills to local memory."""
    v = launchers.by_id[vid]
    if not catalog.runs_on(v, arch):
        pytest.skip(f"{vid} needs {v.arch}; this GPU is {arch}")
    sass = launchers[vid].binary.with_name("kernel.sass").read_text()
    ops = loops.opcodes(sass)
    hgmma, hmma = sum(o.startswith("HGMMA") for o in ops), sum(o.startswith("HMMA") for o in ops)
    if v.arch == "sm_90a":
        assert hgmma > 0 and hmma == 0, (vid, hgmma, hmma)
    else:
        assert hmma > 0 and hgmma == 0, (vid, hgmma, hmma)
    assert not any(o.startswith(("LDL", "STL")) for o in ops), vid

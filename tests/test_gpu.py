"""On the GPU: every catalog variant correct at square and odd shapes; modes allocate what they say.

Run on the GPU machine with ``pytest -m gpu``; elsewhere these skip with the reason.
"""

import dataclasses

import numpy as np
import pytest

from gpumm import build, catalog, measure, memory, verify
from gpumm.launch import Launcher

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


@pytest.fixture(scope="session")
def arch():
    import cupy

    p = cupy.cuda.runtime.getDeviceProperties(0)
    return f"sm_{p['major']}{p['minor']}"


@pytest.fixture(scope="session")
def launchers(tmp_path_factory, arch):
    out = {}
    for v in VARIANTS:
        cubin = None
        if v.is_cuda:
            d = tmp_path_factory.mktemp(v.id)
            build.build(v, arch, d)
            cubin = d / "kernel.cubin"
        out[v.id] = Launcher(v, cubin)
    return out


def run_once(launcher, M, N, K, seed):
    import cupy

    mode = memory.get("device" if launcher.variant.on_gpu else "host")
    A_h, B_h = measure.inputs(seed, M, N, K)
    assert np.count_nonzero(A_h) > 0.99 * A_h.size  # random, never zeros
    A, B, C = mode.place(A_h), mode.place(B_h), mode.empty((M, N))
    C.fill(np.nan)
    launcher.bind(A, B, C)()  # the whole product: the transpose of B first where there is one
    cupy.cuda.Device().synchronize()
    ref, abs_ref, where = verify.reference(A_h, B_h, 1 << 27)
    out = mode.fetch(C) if where == "cpu_f64" else C
    return verify.compare(out, ref, abs_ref, K, where)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("vid", [v.id for v in VARIANTS])
def test_variant_matches_float64_reference(launchers, vid, shape):
    check = run_once(launchers[vid], *shape, seed=hash((vid, shape)) & 0xFFFF)
    assert check.ok, check.reason


def test_an_unwritten_element_fails_verification(launchers):
    """A grid one block short leaves poisoned NaNs, which verification must catch."""
    good = launchers["naive"]
    short = dataclasses.replace(good.variant, grid=("cdiv(N, 16) - 1", "cdiv(M, 16)"))
    bad = Launcher(short, good.cubin)
    check = run_once(bad, 64, 64, 64, seed=1)
    assert not check.ok and "NaN" in check.reason


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


@pytest.mark.parametrize("vid", [v.id for v in VARIANTS if v.on_gpu])
def test_variants_verify_under_every_memory_mode(launchers, vid):
    plan = measure.Plan(
        shapes=[(64, 64, 64), (333, 517, 129), (1000, 1000, 1000)],
        warmups=1,
        repeats=2,
        budget_s=60,
        seed=5,
        cpu_max_mnk=1 << 30,
        cold_repeats=2,
        modes=["device", "zero_copy", "managed", "managed_prefetch"],
    )
    df = measure.run(launchers[vid].variant, launchers[vid].cubin, plan, progress=False)
    assert (df.status == "ok").all(), df[df.status != "ok"][["memory_mode", "M", "reason"]].to_string()
    assert df.verified.all()
    timed = df.groupby("memory_mode").timed.apply(set).to_dict()
    assert timed["zero_copy"] >= {"kernel"} and timed["managed"] >= {"cold", "warm"}
    assert timed["managed_prefetch"] >= {"cold", "warm"} and timed["device"] >= {"kernel", "end_to_end"}


def test_coalescing_patterns_verify_and_time(tmp_path, arch):
    from gpumm import bandwidth, coalescing

    m = catalog.microbenchmarks()["access_patterns"]
    build.build_file(catalog.paths.KERNELS / m["file"], m["entries"], arch, tmp_path)
    plan = coalescing.Plan(
        sizes=[256, 1000], count=100_003, strides=[1, 4, 32], offsets=[0, 3, 31], warmups=1, repeats=3, seed=2
    )
    df = coalescing.run(tmp_path / "kernel.cubin", plan, progress=False)
    assert (df.status == "ok").all() and df.verified.all() and (df.gbs > 0).all()
    assert len(df.drop_duplicates(["pattern", "n", "stride", "offset"])) == len(coalescing.configurations(plan))
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
    plan = measure.Plan(
        shapes=[(64, 64, 64), (333, 517, 129)],
        modes=["device"],
        warmups=1,
        repeats=5,
        budget_s=30,
        seed=3,
        cpu_max_mnk=1 << 27,
    )
    df = measure.run(launchers["tiled_tile16"].variant, launchers["tiled_tile16"].cubin, plan, progress=False)
    assert (df.status == "ok").all() and len(df) == 20  # kernel and end-to-end samples
    assert df.verified.all() and (df.gflops > 0).all()
    df = measure.run(
        launchers["coalesced_bt_tile16"].variant, launchers["coalesced_bt_tile16"].cubin, plan, progress=False
    )
    assert set(df.timed) == {"kernel", "prepare", "end_to_end"} and (df.status == "ok").all()
    tight = dataclasses.replace(plan, shapes=[(64, 64, 64), (2048, 2048, 2048)], budget_s=1e-6)
    df = measure.run(launchers["naive"].variant, launchers["naive"].cubin, tight, progress=False)
    assert set(df.status) == {"skipped"} and df.reason.str.contains("budget").all()

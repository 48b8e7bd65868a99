"""Memory studies on the CPU: address arithmetic, mode bookkeeping (claim S1-C2: tests/analyse/test_claims.py)."""

import json

import pandas as pd
import pytest

from gpumm.analyse import access_patterns
from gpumm.run import coalescing, memory, settings


def test_strided_addresses():
    assert coalescing.strided_index(4, 1, 0) == (0, 3)
    assert coalescing.strided_index(4, 32, 0) == (0, 96)  # thread 3 reads element 96
    assert coalescing.strided_index(4, 1, 31) == (31, 34)
    assert coalescing.strided_index(1, 64, 5) == (5, 5)


def test_configurations_and_useful_bytes():
    plan = coalescing.Plan(sizes=[8, 16], count=1024, strides=[1, 2, 32], offsets=[0, 1, 31], seed=0)
    dev = coalescing.Device(sm_count=2, max_threads_per_sm=64, l2_bytes=4096, free_bytes=1 << 30)
    cfgs = coalescing.configurations(plan, dev)
    assert [(c["pattern"], c["regime"]) for c in cfgs[:4]] == [
        ("rows", "dram"),
        ("cols", "dram"),
        ("rows", "l2"),
        ("cols", "l2"),
    ]
    strided = [(c["stride"], c["offset"]) for c in cfgs if c["pattern"] == "strided"]
    assert strided == [(1, 0), (2, 0), (32, 0), (1, 1), (1, 31)]  # offset 0 at stride 1 is measured once
    # 8 x 8 matrices, 128 thread slots: 16 copies fill them; 3 x the 4 KiB L2 needs 48 distinct matrices
    assert cfgs[0]["copies"] == 48 and cfgs[2]["copies"] == 16 and cfgs[2]["matrix_stride"] == 0
    assert coalescing.useful_bytes(cfgs[0]) == 4 * 8 * 8 * 48  # n^2 floats read per matrix
    assert coalescing.input_length(cfgs[2]) == 64  # the L2 regime reads one matrix
    assert coalescing.useful_bytes({"pattern": "strided", "n": 1024}) == 8 * 1024  # read and written
    assert cfgs[-1]["pattern"] == "copy4" and coalescing.threads(cfgs[-1]) == 1024 // 32


def test_modes_for_variants():
    cfg = {"memory_modes": ["device", "zero_copy", "managed"], "memory_study_variants": ["naive", "cublas"]}
    assert settings.modes_for("naive", cfg) == ["device", "zero_copy", "managed"]
    assert settings.modes_for("tiled_tile8", cfg) == ["device"]
    assert settings.modes_for("tiled_tile8", {**cfg, "memory_study_variants": "all"}) == [
        "device",
        "zero_copy",
        "managed",
    ]
    assert settings.modes_for("naive", {"memory_modes": ["managed"], "memory_study_variants": "all"}) == [
        "device",
        "managed",
    ]  # device is always measured: the other modes are compared with it


def test_mode_bookkeeping():
    assert set(memory.MODES) == {"device", "zero_copy", "managed", "managed_prefetch", "host"}
    assert memory.get("device").info.timed == ("kernel", "end_to_end")
    assert memory.get("zero_copy").info.timed == ("kernel",)
    for m in ("managed", "managed_prefetch"):
        assert memory.get(m).info.timed == ("cold", "warm")
    assert memory.get("managed_prefetch").before_run is not memory.MemoryMode.before_run


def test_managed_allocation_is_refused_beyond_free_memory():
    gib = 1 << 30
    memory.check_managed(4 * gib, free=10 * gib, headroom=2 * gib)
    with pytest.raises(
        memory.Refused, match="refused to allocate 9.00 GiB of managed memory: the device has 10.00 GiB"
    ):
        memory.check_managed(9 * gib, free=10 * gib, headroom=2 * gib)


def summary_rows(spec):
    rows = []
    for variant, mode, timed, n, ms in spec:
        rows.append(dict(variant=variant, memory_mode=mode, timed=timed, M=n, N=n, K=n, median_ms=ms, status="ok"))
    return pd.DataFrame(rows)


def test_coalescing_summary_and_sectors():
    common = dict(regime="dram", n=1024, copies=1, offset=0, repeat=0, bytes=8192, threads=128, batch=1)
    s = pd.DataFrame(
        [
            dict(common, pattern="strided", stride=1, ms=1.0, gbs=100.0, working_set_bytes=16384, status="ok"),
            dict(common, pattern="strided", stride=32, ms=8.0, gbs=12.5, working_set_bytes=135168, status="ok"),
            dict(common, pattern="rows", n=8, stride=0, status="failed", reason="NaN in the output"),
        ]
    )
    out = access_patterns.coalescing_summary(s, copy_gbs=200.0, l2_bytes=4096).set_index(["pattern", "stride"])
    assert out.loc[("strided", 1), "working_set_over_l2"] == 4
    assert out.loc[("strided", 32), "share_of_copy_kernel"] == pytest.approx(0.125)
    assert out.loc[("strided", 1), "share_of_device_copy"] == pytest.approx(0.5)
    assert out.loc[("rows", 0), "status"] == "failed"
    prof = pd.DataFrame(
        [
            dict(launch=0, pattern="strided", regime="dram", n=1024, copies=1, stride=32, offset=0, metric=m, value=v)
            for m, v in (
                ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 32.0),
                ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1024.0),
            )
        ]
    )
    assert access_patterns.sectors_per_request(prof).sectors_per_request.iloc[0] == 32.0


def test_disabled_profiling_writes_the_access_patterns_profile_saying_so(tmp_path):
    from gpumm.cli import main
    from gpumm.profile import session as profile

    plan = {
        "variants": {"naive": {"binary": None, "sizes": [1024, 4096]}},
        "coalescing": {
            "cubin": "absent.cubin",
            "plan": {"sizes": [1024], "count": 1024, "strides": [1], "offsets": [0]},
        },
    }
    args = ["profile", "--plan", json.dumps(plan), "--metrics=", "--disabled", "--results", str(tmp_path)]
    assert main(args) == 0
    df = pd.read_csv(tmp_path / "raw" / "coalescing" / "profile.csv")
    assert df[["variant", "status", "reason"]].values.tolist() == [["access_patterns", "missing", profile.DISABLED]]
    naive = pd.read_csv(tmp_path / "raw" / "naive" / "profile.csv")
    assert naive[["variant", "M", "status", "reason"]].values.tolist() == [["naive", 4096, "missing", profile.DISABLED]]

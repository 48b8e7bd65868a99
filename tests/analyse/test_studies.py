"""The transpose, device-memory, hierarchy and CGMA analyses on the CPU, with expected values worked by hand."""

import numpy as np
import pandas as pd
import pytest

from gpumm.analyse import memory_levels, ratios, transposes
from gpumm.run import hierarchy, operations, verify
from gpumm.setup import catalog

# ---------------------------------------------------------------- the transposes


def test_the_catalog_holds_other_operations_as_plain_entries():
    ops = {v.id: v.op for v in catalog.expand({n: {} for n in catalog.load()})}
    assert ops["transpose_naive"] == "transpose" and ops["transpose_copy"] == "copy" and ops["naive"] == "matmul"
    t = operations.get("transpose")
    assert t.output_shape(3, 5, 1) == (5, 3) and operations.get("copy").output_shape(3, 5, 1) == (3, 5)
    cfg = {"transpose": {"sizes": [16, 4097], "shapes": [[1, 4097], [32, 16384]]}}
    assert t.shapes(cfg) == [(16, 16, 1), (1, 4097, 1), (32, 16384, 1), (4097, 4097, 1)]
    with pytest.raises(ValueError, match="allowed: matmul, matmul_bf16, transpose, copy"):
        operations.get("convolve")


def test_exact_equality_catches_a_wrong_or_missing_element():
    a = operations.Transpose._input(3, 37, 41)
    assert np.count_nonzero(a) == a.size and (np.abs(a) >= 0.5).all()
    good = operations.get("transpose").expected(a)
    assert good.shape == (41, 37) and verify.compare_equal(good, good.copy()).ok
    swapped = good.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    assert "differ" in verify.compare_equal(swapped, good).reason
    hole = good.copy()
    hole[5, 7] = np.nan
    assert "1 elements NaN" in verify.compare_equal(hole, good).reason
    assert not verify.compare_equal(a, good).ok  # not transposed: the wrong shape


def _tr_summary():
    rows = []
    # n, copy GB/s, naive ms, padded ms at 8192 and 16384 (bytes 8n², so GB/s = 8n²/ms/1e6)
    for n, copy_gbs, naive_ms, padded_ms in ((8192, 3000.0, 2.0, 0.2), (16384, 3000.0, 8.0, 0.8)):
        nbytes = 8 * n * n
        for v, ms in (
            ("transpose_copy", nbytes / (copy_gbs * 1e6)),
            ("transpose_naive", naive_ms),
            ("transpose_padded", padded_ms),
        ):
            rows.append(
                {
                    "variant": v,
                    "M": n,
                    "N": n,
                    "K": 1,
                    "memory_mode": "device",
                    "timed": "kernel",
                    "status": "ok",
                    "reason": "",
                    "median_ms": ms,
                    "iqr_pct": 1.0,
                    "gbs": nbytes / ms / 1e6,
                    "batch": 1,
                }
            )
    variants = pd.DataFrame(
        {"variant": ["transpose_copy", "transpose_naive", "transpose_padded"], "op": ["copy", "transpose", "transpose"]}
    )
    return transposes.transpose_summary(pd.DataFrame(rows), variants, device_copy_gbs=3200.0)


def test_transpose_shares_and_speedup_by_hand():
    t = _tr_summary().set_index(["variant", "M"])
    # padded at 8192: 8·8192² bytes in 0.2 ms = 2684.4 GB/s; the copy 3000 GB/s
    assert t.loc[("transpose_padded", 8192), "gbs"] == pytest.approx(8 * 8192**2 / 0.2e-3 / 1e9)
    assert t.loc[("transpose_padded", 8192), "share_of_copy_kernel"] == pytest.approx(2684.354560 / 3000)
    assert t.loc[("transpose_padded", 8192), "share_of_device_copy"] == pytest.approx(2684.354560 / 3200)
    assert t.loc[("transpose_padded", 16384), "speedup_over_naive"] == pytest.approx(10.0)


def test_the_transpose_goal_reads_the_lowest_share_at_8192_and_above():
    g = transposes.transpose_goal(_tr_summary())
    assert g["best"] == "transpose_padded" and g["sizes"] == [8192, 16384]
    assert g["of_copy_kernel"] == pytest.approx(2684.354560 / 3000)  # 89.5%: under 95%
    assert g["met"] is False
    assert transposes.transpose_goal(_tr_summary().iloc[0:0]) == {"measured": False}


# ---------------------------------------------------------------- S3-MEM


def test_device_memory_table_puts_the_run_beside_the_lecture():
    pub = pd.read_csv(catalog.paths.PUBLISHED)
    gpu = {
        "name": "NVIDIA H100 80GB HBM3",
        "regs_per_block": 65536,
        "smem_per_block": 49152,
        "constant_bytes": 65536,
        "memory_bytes": 85 * 2**30,
        "l2_bytes": 50 * 2**20,
    }
    t = memory_levels.device_memory_table(pub, gpu).set_index("quantity")
    assert t.loc["L2 cache", "Tesla P100"] == 4194304 and np.isnan(t.loc["L2 cache", "GeForce 9400M"])
    assert t.loc["global memory", "NVIDIA H100 80GB HBM3"] == 85 * 1024  # MB, the lecture's unit
    assert t.loc["32-bit registers per block", "GeForce 9400M"] == 8192
    missing = memory_levels.device_memory_table(pub, {"name": "old", "l2_bytes": 1}).set_index("quantity")
    assert np.isnan(missing.loc["constant memory", "old"])  # not recorded: empty, never typed


# ---------------------------------------------------------------- the latency sweep


def test_latency_plateaus_by_hand():
    kib = 1024
    sizes = [4 * kib * 2**i for i in range(14)]  # 4 KiB .. 32 MiB
    lat = [20, 21, 20, 21, 22, 60, 200, 205, 210, 208, 300, 600, 610, 605]
    p = memory_levels.latency_plateaus(sizes, lat).set_index("level")
    assert list(p.index) == ["L1", "L2", "DRAM"]
    assert p.loc["L1", "from_bytes"] == 4 * kib and p.loc["L1", "to_bytes"] == 64 * kib and p.loc["L1", "latency"] == 21
    assert p.loc["L2", "points"] == 4 and p.loc["L2", "latency"] == pytest.approx(206.5)
    assert p.loc["DRAM", "latency"] == 605  # 60 and 300 are transitions: runs of one point, left out


def test_latency_plateaus_named_by_the_capacity_that_holds_them():
    kib, mib = 1024, 1024 * 1024
    # the H200's sweep: two plateaus inside the L1's capacity, the L2, one straddling the L2's size, DRAM
    sizes = [
        4 * kib,
        64 * kib,
        92 * kib,
        128 * kib,
        180 * kib,
        260 * kib,
        370 * kib,
        4 * mib,
        32 * mib,
        40 * mib,
        46 * mib,
        64 * mib,
        80 * mib,
        200 * mib,
        240 * mib,
    ]
    lat = [21, 22, 21, 29, 29, 80, 146, 147, 146, 190, 234, 236, 270, 306, 306]
    p = memory_levels.latency_plateaus(sizes, lat, l1_bytes=228 * kib, l2_bytes=60 * mib)
    assert list(p.level) == ["L1", "L1 (2)", "L2", "L2 and DRAM", "DRAM"]
    assert p.set_index("level").loc["L2", "from_bytes"] == 370 * kib
    assert p.set_index("level").loc["L2 and DRAM", "to_bytes"] == 64 * mib
    unnamed = memory_levels.latency_plateaus(sizes, lat)  # an old run without the capacities: by position
    assert list(unnamed.level) == ["L1", "L2", "L2 (2)", "L2 (3)", "DRAM"]


def test_device_memory_in_mib():
    pub = pd.DataFrame(
        [{"study_id": "S3-MEM", "quantity": "global memory", "unit": "MB", "gpu": "Tesla P100", "value": 16276.0}]
    )
    t = memory_levels.device_memory_table(pub, {"name": "H", "memory_bytes": 2**34}).set_index("quantity")
    assert t.loc["global memory", "unit"] == "MiB" and t.loc["global memory", "H"] == 16384


def test_the_chain_visits_every_node_and_the_host_predicts_its_end():
    nxt, order = hierarchy.chain(64 * hierarchy.LINE, seed=3)
    assert nxt.size == 64 * hierarchy.NODE and sorted(order) == list(range(64))
    j, seen = 0, set()
    for _ in range(64):
        seen.add(j // hierarchy.NODE)
        j = int(nxt[j])
    assert len(seen) == 64 and j == 0  # one cycle through all nodes
    j = 0
    for _ in range(100):
        j = int(nxt[j])
    assert hierarchy.after(order, 0, 100) == j
    sizes = hierarchy.sweep(hierarchy.Plan(min_bytes=4096, l2_multiple=4, per_octave=2), 50 << 20)
    assert sizes[0] == 4096 and sizes[-1] == 200 << 20  # up to l2_multiple x the L2
    assert all(s % hierarchy.LINE == 0 for s in sizes) and len(sizes) == 33


# ---------------------------------------------------------------- S3-CGMA


def test_cgma_model_loop_and_measured_by_hand():
    estimate = pd.DataFrame(
        [
            {"variant": "naive", "family": "naive", "level": "ptx", "cgma": 1.0},
            {"variant": "naive", "family": "naive", "level": "sass", "cgma": 1.0},
            {"variant": "tiled_tile16", "family": "tiled", "level": "ptx", "cgma": 16.0},
            {"variant": "tiled_tile16", "family": "tiled", "level": "sass", "cgma": 16.0},
        ]
    )
    n = 4096
    prof = []
    for v, req, _dram in (
        ("naive", 2 * n**3 / 32, 40 * 12 * n * n),
        ("tiled_tile16", 2 * n**3 / 16 / 32, 4 * 12 * n * n),
    ):
        for metric, value in (
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", n**3),
            ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", req),
        ):
            prof.append({"variant": v, "M": n, "metric": metric, "value": value, "status": "ok"})
    ps = pd.DataFrame(
        [
            {"variant": "naive", "size": n, "regime": "dram", "dram_bytes": 40 * 12 * n * n},
            {"variant": "tiled_tile16", "size": n, "regime": "dram", "dram_bytes": 4 * 12 * n * n},
        ]
    )
    c = ratios.cgma_table(estimate, ps, pd.DataFrame(prof)).set_index("variant")
    assert c.loc["naive", "model"] == 1 and c.loc["tiled_tile16", "model"] == 16
    assert c.loc["naive", "measured_per_access"] == pytest.approx(1.0)  # 2n³ flops over 2n³ accesses
    assert c.loc["tiled_tile16", "measured_per_access"] == pytest.approx(16.0)
    # per DRAM access: 2n³ / (40·12n²/4) = n/60
    assert c.loc["naive", "measured_per_dram_access"] == pytest.approx(n / 60)
    gpu = {"compute_capability": "9.0", "sm_count": 132, "sm_clock_khz": 1980000}
    # 66.9 TFLOP/s over 4 TB/s / 4 bytes = 66.9 flops per access
    assert ratios.cgma_to_peak(gpu, 4000.0) == pytest.approx(132 * 128 * 2 * 1.98e9 / 1e12)

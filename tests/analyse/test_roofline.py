"""The roofline arithmetic, with values worked by hand."""

import json
import math

import pandas as pd
import pytest

from gpumm.analyse import rates, roofline
from gpumm.setup import hardware

H100 = {"compute_capability": "9.0", "sm_count": 132, "sm_clock_khz": 1_980_000}


def test_fp32_peak_of_an_h100_is_sms_times_lanes_times_two_times_clock():
    # 132 SMs x 128 FP32 lanes x 2 flops x 1.98e9 Hz = 66,908.16 GFLOP/s
    assert hardware.fp32_peak(H100) == pytest.approx(66_908.16e9)


def test_attainable_is_the_lower_roof():
    peak, bw = 60e12, 3e12  # ridge at 20 flop/byte
    assert roofline.ridge(peak, bw) == pytest.approx(20.0)
    assert roofline.attainable(5.0, peak, bw) == pytest.approx(15e12)  # 5 x 3e12: memory-bound
    assert roofline.attainable(100.0, peak, bw) == pytest.approx(60e12)  # the compute roof
    assert math.isnan(roofline.attainable(0.0, peak, bw))


def test_points_place_each_kernel_under_its_roofs_and_read_its_bound():
    """Peak 60 TFLOP/s, DRAM 3 TB/s (ridge 20 flop/byte), L2 10 TB/s. n = 1000: 2e9 flops."""
    n = 1000
    stall = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
    issue = "smsp__issue_active.avg.pct_of_peak_sustained_active"
    rows = [
        # a: 1e8 DRAM bytes (20 flop/byte: compute roof 60 TFLOP/s), 4e8 L2 bytes (5 flop/byte: L2 roof 50)
        ("a", "dram__bytes_read.sum", 8e7),
        ("a", "dram__bytes_write.sum", 2e7),
        ("a", "lts__t_bytes.sum", 4e8),
        # b: 1e9 DRAM bytes (2 flop/byte): DRAM roof 6 TFLOP/s
        ("b", "dram__bytes_read.sum", 9e8),
        ("b", "dram__bytes_write.sum", 1e8),
        # c: far under its compute roof, waiting on global loads
        ("c", "dram__bytes_read.sum", 1e7),
        ("c", stall, 4.0),
        ("c", issue, 20.0),
        # d: far under, the issue slots busy
        ("d", "dram__bytes_read.sum", 1e7),
        ("d", issue, 85.0),
        # e: just under 60% of its roof, no counters
        ("e", "dram__bytes_read.sum", 1e7),
    ]
    profiles = pd.DataFrame(rows, columns=["variant", "metric", "value"]).assign(M=n, N=n, K=n, status="ok")
    rates = {"a": 45_000.0, "b": 4_800.0, "c": 4_800.0, "d": 18_000.0, "e": 35_990.0}
    summary = pd.DataFrame(
        {"variant": list(rates), "M": n, "N": n, "K": n, "timed": "kernel", "memory_mode": "device", "status": "ok"}
        | {"gflops": list(rates.values())}
    )
    p = roofline.points(summary, profiles, peak=60e12, bandwidth=3e12, l2_bandwidth=10e12).set_index("variant")
    assert p.loc["a", "flop_per_dram_byte"] == pytest.approx(20.0)
    assert p.loc["a", "flop_per_l2_byte"] == pytest.approx(5.0)
    assert p.loc["a", "l2_roof_gflops"] == pytest.approx(50_000.0) and p.loc["a", "lowest_roof"] == "L2"
    assert p.loc["a", "share_of_roof"] == pytest.approx(0.9) and p.loc["a", "bound"] == "L2-bound"
    assert p.loc["b", "roof_gflops"] == pytest.approx(6_000.0) and p.loc["b", "bound"] == "DRAM-bound"
    assert math.isnan(p.loc["b", "flop_per_l2_byte"])  # no L2 counter profiled: no L2 roof
    assert p.loc["c", "share_of_roof"] == pytest.approx(0.08)
    assert p.loc["c", "bound"] == "latency-bound (waits most on long scoreboard, under every roof)"
    assert p.loc["c", "top_stall"] == "long scoreboard (4.00 per issue)"
    assert p.loc["d", "bound"] == "issue-bound (85% of issue slots used, under every roof)"
    assert p.loc["e", "share_of_roof"] == pytest.approx(0.5998333)
    assert p.loc["e", "bound"].startswith("under every roof")  # 59.98%: not near enough to be bound by it
    assert roofline.bound(0.6, "compute", math.nan, "") == "compute-bound"  # 60%: bound by the roof


def test_ladder_gives_share_of_cublas_and_gain_over_the_rung_below():
    rows = [("naive", 5_000.0), ("warptile", 36_000.0), ("double_buffer", 45_000.0), ("cublas", 50_000.0)]
    summary = pd.DataFrame(
        [
            {"family": f, "variant": f, "gflops": g, "M": 4096, "N": 4096, "K": 4096}
            | {"timed": "kernel", "status": "ok", "memory_mode": "device"}
            for f, g in rows
        ]
    )
    fams = [
        {"family": "naive"},
        {"family": "warptile", "rung_below": "naive"},
        {"family": "double_buffer", "rung_below": "warptile"},
        {"family": "cublas", "rung_below": "double_buffer"},
    ]
    t = rates.ladder(summary, fams, 4096).set_index("family")
    assert t.loc["double_buffer", "share_of_cublas"] == pytest.approx(0.9)
    assert t.loc["double_buffer", "gain_over_rung_below"] == pytest.approx(1.25)
    assert t.loc["warptile", "gain_over_rung_below"] == pytest.approx(7.2)


def _profile_rows(variant, n, **metrics):
    return [
        {"variant": variant, "M": n, "N": n, "K": n, "kernel": f"k_{variant}", "metric": m, "value": v, "status": "ok"}
        for m, v in metrics.items()
    ]


def test_rung_counters_and_the_sentence_naming_what_moved():
    from gpumm.analyse import race

    n = 100  # 2e6 flops: 1e6 FFMAs by threads, 31,250 FFMA instructions by warps
    common = {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e6, "launch__registers_per_thread": 64}
    rows = _profile_rows(
        "low",
        n,
        **common,
        **{
            "dram__bytes_read.sum": 4e6,
            "dram__bytes_write.sum": 0.0,
            "smsp__sass_inst_executed_op_shared_ld.sum": 31250,
        },
    )
    rows += _profile_rows(
        "high",
        n,
        **common,
        **{
            "dram__bytes_read.sum": 1e6,
            "dram__bytes_write.sum": 0.0,
            "smsp__sass_inst_executed_op_shared_ld.sum": 31250,
        },
    )
    rows += [
        {**rows[0], "metric": "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "value": 1.5},
        {**rows[0], "metric": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "value": 3.0},
    ]
    profiles = pd.DataFrame(rows)
    variants = pd.DataFrame({"variant": ["low", "high"], "family": ["low", "high"]})
    c = race.rung_counters(profiles, variants, n).set_index("family")
    assert c.loc["low", "dram_bytes_per_flop"] == pytest.approx(2.0)  # 4e6 bytes / 2e6 flops
    assert c.loc["high", "dram_bytes_per_flop"] == pytest.approx(0.5)
    assert c.loc["low", "shared_loads_per_ffma"] == pytest.approx(1.0)  # 31,250 / (1e6 / 32)
    assert c.loc["low", "top_stalls"] == "long scoreboard 3.00, barrier 1.50"
    summary = pd.DataFrame(
        [
            {"variant": v, "family": v, "M": n, "N": n, "K": n, "gflops": g, "iqr_pct": 0.1}
            | {"timed": "kernel", "memory_mode": "device", "status": "ok"}
            for v, g in (("low", 100.0), ("high", 300.0), ("cublas", 400.0))
        ]
    )
    fams = [{"family": "low"}, {"family": "high", "rung_below": "low"}, {"family": "cublas", "rung_below": "high"}]
    rates = race.rung_rates(summary, fams, [(n, n, n)]).set_index("family")
    assert rates.loc["high", "share_of_cublas"] == pytest.approx(0.75)
    assert rates.loc["high", "gain_over_rung_below"] == pytest.approx(3.0)
    said = race.what_moved(c.reset_index(), rates.reset_index(), fams, n)
    assert said == [
        "**high** over low — most moved besides: DRAM bytes per FLOP 2 → 0.5 (better, ×0.25). GFLOP/s ×3.00."
    ]
    # only counters that changed are named: here the DRAM bytes alone


def test_tables_show_booleans_as_yes_no_and_numbers_as_numbers():
    from gpumm.report import labels

    df = pd.DataFrame({"throttled": [True, False], "batch": [1, 0], "flag": ["True", "False"], "x": [0, 2048]})
    shown = labels.for_reader(df)
    assert shown.iloc[:, 0].tolist() == ["yes", "no"]
    assert shown.iloc[:, 2].tolist() == ["yes", "no"]
    assert shown.iloc[:, 1].tolist() == ["1", "0"]  # 1 == True in Python, yet a count is not a boolean
    assert shown.iloc[:, 3].tolist() == ["0", "2,048"]


def _archive(root, name, gpu_name, mem_khz, ms_naive, d2d_gbs):
    import json

    raw = root / name / "raw"
    (raw / "naive").mkdir(parents=True)
    (raw / "bandwidth").mkdir()
    gpu = {"name": gpu_name, "compute_capability": "9.0", "sm_count": 132, "sm_clock_khz": 1_980_000}
    gpu |= {"memory_clock_khz": mem_khz, "memory_bus_bits": 5120, "l2_bytes": 50 << 20}
    (raw / "provenance.json").write_text(json.dumps({"gpu": gpu}))
    n = 4096
    pd.DataFrame(
        {"M": n, "N": n, "K": n, "timed": "kernel", "memory_mode": "device", "status": "ok", "ms": ms_naive}
    ).to_csv(raw / "naive" / "samples.csv", index=False)
    pd.DataFrame({"transfer": "device_to_device", "gbs": [d2d_gbs]}).to_csv(raw / "bandwidth" / "samples.csv")
    return root / name


def test_the_comparison_reads_each_archive_and_sets_differences_beside_the_hardware(tmp_path):
    from gpumm.analyse import compare

    # a: 2 x 2.5e6 kHz x 5120 bits / 8 = 3,200 GB/s; b: memory clock 1.5x, so 4,800 GB/s
    a = _archive(tmp_path, "a", "GPU A", 2_500_000, [27.48779069, 27.48779069], 3000.0)
    b = _archive(tmp_path, "b", "GPU B", 3_750_000, [27.48779069], 4500.0)
    t = compare.table({"a": a, "b": b, "missing": tmp_path / "none"})
    assert set(t.run) == {"a", "b"}
    v = t.set_index(["run", "what"]).value
    assert v["a", "naive GFLOP/s at 4096³"] == pytest.approx(5000.0, rel=1e-6)  # 2·4096³ flop in 27.488 ms
    assert v["a", "specified DRAM bandwidth"] == pytest.approx(3200.0)
    assert v["b", "specified DRAM bandwidth"] == pytest.approx(4800.0)
    assert math.isnan(v["a", "cublas GFLOP/s at 4096³"])  # not in the archive: an empty cell, not a zero
    said = compare.sentences(t, "a", "b")
    copy = next(s for s in said if s.startswith("copy device to device"))
    assert "(×1.50)" in copy and "differs by ×1.50" in copy and "follows it" in copy
    naive = next(s for s in said if s.startswith("naive"))
    assert "(×1.00)" in naive and "FP32 peak differs by ×1.00" in naive


def test_the_comparison_keeps_a_run_that_has_no_rates(tmp_path):
    """A measured subset without 4096³ (here: 'this run') has no rates; its column stays, empty, so that the page
    can still set the archives beside it (the pivot once dropped it and the page failed)."""
    from gpumm.analyse import compare

    a = _archive(tmp_path, "a", "GPU A", 2_500_000, [27.48779069], 3000.0)
    t = compare.table({"this run": tmp_path / "none", "a": a})
    small = t[t.run == "a"].assign(run="this run", value=lambda d: d.value.where(d.unit != "GFLOP/s"))
    t = pd.concat([small, t], ignore_index=True)
    rates = compare.wide(t, "GFLOP/s", "fp32_tflops")
    assert list(rates.columns) == ["this run", "a"] and rates["this run"].isna().all()
    assert list(rates.index) == [f"{v.rstrip('*')} GFLOP/s at 4096³" for v in compare.RATE_VARIANTS]
    bf16 = compare.wide(t, "GFLOP/s", "bf16_tflops")  # an archive without the BF16 race: its rows, empty
    assert list(bf16.index) == [f"{v} GFLOP/s at 4096³" for v in compare.bf16_variants()] and bf16.isna().all().all()
    assert rates.at["naive GFLOP/s at 4096³", "a"] == pytest.approx(5000.0, rel=1e-6)
    everything = compare.wide(t)
    assert list(everything.columns) == ["this run", "a"] and everything.index[0] == rates.index[0]


def test_the_comparison_sets_a_host_copy_beside_no_memory_number_and_names_each_runs_timing(tmp_path):
    from gpumm.analyse import compare

    a = _archive(tmp_path, "a", "GPU A", 2_500_000, [27.48779069], 3000.0)
    b = _archive(tmp_path, "b", "GPU B", 3_750_000, [27.48779069], 4500.0)
    for run, gbs in ((a, 50.0), (b, 55.0)):
        pd.DataFrame({"transfer": ["device_to_device", "host_to_device_pinned"], "gbs": [3000.0, gbs]}).to_csv(
            run / "raw" / "bandwidth" / "samples.csv"
        )
    s = pd.read_csv(b / "raw" / "naive" / "samples.csv").assign(method="graph")
    s.to_csv(b / "raw" / "naive" / "samples.csv", index=False)
    t = compare.table({"a": a, "b": b})
    said = compare.sentences(t, "a", "b")
    h2d = next(x for x in said if x.startswith("copy host to device pinned"))
    assert "(×1.10)" in h2d and "PCIe" in h2d and "DRAM" not in h2d  # never read against the memory's bandwidth
    assert compare.methods(t) == {"a": "", "b": "graph"}  # a run that predates the record says nothing


def test_shares_of_cublas_per_run():
    from gpumm.analyse import compare

    rows = [
        {"run": r, "gpu": r, "what": f"{v} GFLOP/s at 4096³", "value": x, "unit": "GFLOP/s", "hardware": "fp32_tflops"}
        for r, values in (("a", (10.0, 40.0, 50.0)), ("b", (20.0, 45.0, 60.0)))
        for v, x in zip(("naive", "double_buffer", "cublas"), values)
    ]
    shares = compare.shares_of_cublas(pd.DataFrame(rows))
    assert list(shares.index) == ["naive", "double_buffer"] and list(shares.columns) == ["a", "b"]
    assert shares.at["double_buffer", "a"] == pytest.approx(0.8) and shares.at["naive", "b"] == pytest.approx(1 / 3)


def test_the_bf16_rungs_are_shares_of_cublas_bf16_and_read_against_the_tensor_core_peak(tmp_path):
    """The race on the tensor cores compares like the FP32 one, but against its own library and peak: a BF16
    rung's share divides by cuBLAS BF16's rate, never by cuBLAS SGEMM's."""
    from gpumm.analyse import compare

    runs = {}
    for name, ms_bf16 in (("a", 0.2), ("b", 0.19)):
        run = _archive(tmp_path, name, f"GPU {name}", 2_500_000, [27.48779069], 3000.0)
        for variant, ms in (("cublas", 2.5), ("bf16_persistent", ms_bf16), ("cublas_bf16", 0.18)):
            (run / "raw" / variant).mkdir()
            pd.DataFrame(
                {
                    "M": 4096,
                    "N": 4096,
                    "K": 4096,
                    "timed": "kernel",
                    "memory_mode": "device",
                    "status": "ok",
                    "ms": [ms],
                }
            ).to_csv(run / "raw" / variant / "samples.csv", index=False)
        runs[name] = run
    t = compare.table(runs)
    v = t.set_index(["run", "what"])
    assert v.at[("a", "bf16_persistent GFLOP/s at 4096³"), "hardware"] == "bf16_tflops"
    assert v.at[("a", "BF16 tensor-core peak"), "value"] == pytest.approx(132 * 4096 * 1.98e9 / 1e12)
    shares = compare.shares_of_cublas(t)
    assert shares.at["bf16_persistent", "a"] == pytest.approx(0.18 / 0.2)  # of cuBLAS BF16, not of SGEMM (12.5x)
    assert shares.at["naive", "a"] == pytest.approx(2.5 / 27.48779069)
    assert "bf16_wmma" not in shares.index  # no run has it: no empty bar
    said = next(s for s in compare.sentences(t, "a", "b") if s.startswith("bf16_persistent"))
    assert "(×1.05)" in said and "BF16 tensor-core peak differs by ×1.00" in said

    # a GPU whose tensor-core peak the hardware table does not know (here an sm_80): no ratio set beside it
    prov = runs["b"] / "raw" / "provenance.json"
    gpu = json.loads(prov.read_text())["gpu"] | {"compute_capability": "8.0"}
    prov.write_text(json.dumps({"gpu": gpu}))
    said = next(s for s in compare.sentences(compare.table(runs), "a", "b") if s.startswith("bf16_persistent"))
    assert "not known here" in said and "×nan" not in said


def test_a_tuned_family_compares_by_its_fastest_candidate(tmp_path):
    from gpumm.analyse import compare

    a = _archive(tmp_path, "a", "GPU A", 2_500_000, [27.48779069], 3000.0)
    for key, ms in (("slow", 4.0), ("fast", 2.748779069)):  # 2·4096³ flop in 2.749 ms: 50,000 GFLOP/s
        (a / "raw" / f"interior_{key}").mkdir()
        pd.DataFrame(
            {"M": 4096, "N": 4096, "K": 4096, "timed": "kernel", "memory_mode": "device", "status": "ok", "ms": [ms]}
        ).to_csv(a / "raw" / f"interior_{key}" / "samples.csv", index=False)
    v = compare.table({"a": a}).set_index("what").value
    assert v["interior GFLOP/s at 4096³"] == pytest.approx(50000.0, rel=1e-6)


def test_a_kernel_above_a_roof_is_a_failed_check_naming_it_and_the_roof_not_a_row():
    """Issue 39: 'L2-bound' at 1.35x the L2 roof is not a bound. Peak 1,000 TFLOP/s, DRAM 3 TB/s, L2 6 TB/s; each
    kernel moves 2e9 flops over 2e7 L2 bytes (100 flop/byte: L2 roof 600 TFLOP/s) and 2e6 DRAM bytes."""
    n = 1000
    profiles = pd.DataFrame(
        [(v, m, x) for v in ("under", "over") for m, x in (("dram__bytes_read.sum", 2e6), ("lts__t_bytes.sum", 2e7))],
        columns=["variant", "metric", "value"],
    ).assign(M=n, N=n, K=n, status="ok")
    for over_rate, kept in ((810_000.0, ["under"]), (590_000.0, ["under", "over"])):
        summary = pd.DataFrame(
            {"variant": ["under", "over"], "gflops": [500_000.0, over_rate], "M": n, "N": n, "K": n}
            | {"timed": "kernel", "memory_mode": "device", "status": "ok"}
        )
        pts = roofline.points(summary, profiles, peak=1000e12, bandwidth=3e12, l2_bandwidth=6e12)
        table, failed = roofline.split(pts)
        assert sorted(table.variant) == sorted(kept) and (table.share_of_roof <= 1).all()
        assert "L2-bound" in set(table.bound)
        if over_rate > 600_000:
            (check,) = failed.check
            assert failed.variant.tolist() == ["over"] and failed.roof.tolist() == ["L2"]
            assert check.startswith("over at 1000³ runs at 1.35× its L2 roof (810 of 600 TFLOP/s)")
        else:
            assert failed.empty and list(failed.columns) == roofline.CHECK_COLUMNS


@pytest.mark.parametrize(
    "stall, word",
    [
        ("lg throttle", "load/store-queue-bound (waits most on lg throttle"),
        ("mio throttle", "load/store-queue-bound"),
        ("long scoreboard", "latency-bound (waits most on long scoreboard"),
    ],
)
def test_far_under_every_roof_the_stall_names_the_wait(stall, word):
    assert roofline.bound(0.2, "L2", 30.0, stall).startswith(word)


def test_the_peak_ratio_is_one_number_at_the_recorded_clock_with_the_vendors_beside():
    from gpumm.analyse import tensor
    from gpumm.report import index

    r = tensor.roofs(H100, 3350.0)
    assert r["ratio"] == 16.0 and r["mhz"] == 1980.0
    assert r["tensor"] == pytest.approx(1070.53e12, rel=1e-5)
    assert r["vendor"] == pytest.approx(989.43e12, rel=1e-4) and r["vendor_mhz"] == 1830.0
    assert index._peak_ratio(H100) == "16×"
    assert index._peak_ratio({"compute_capability": "8.0", "sm_count": 108, "sm_clock_khz": 1410000}) == "many times"
    assert "fifteen" not in str(index.START_HERE)


def test_a_levels_bandwidth_comes_from_the_hierarchy_table_in_bytes_per_second():
    levels = pd.DataFrame({"level": ["DRAM", "L2"], "median_gbs": [3100.0, 6721.0]})
    assert roofline.level_bandwidth(levels) == pytest.approx(6721e9)
    assert roofline.level_bandwidth(levels, "DRAM") == pytest.approx(3100e9)
    assert math.isnan(roofline.level_bandwidth(levels, "shared"))
    assert math.isnan(roofline.level_bandwidth(pd.DataFrame(columns=["level", "median_gbs"])))

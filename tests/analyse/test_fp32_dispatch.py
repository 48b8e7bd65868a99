"""Issue 40: FP32 through the model's steps, its tables from the fit and dispatch steps' raw files, by hand."""

import json

import pandas as pd
import pytest

from gpumm.analyse import dispatch, fp32_dispatch
from gpumm.run import rule as rule_mod
from gpumm.setup import catalog

GPU = {"name": "test", "compute_capability": "9.0", "sm_count": 132, "sm_clock_khz": 1_980_000}
SPEC = {"fp32": {"reference": "cublas", "fit": [[256, 256, 256], [8192, 32, 8192]], "held_out": [[333, 517, 129]]}}
TILES = {"small": [32, 32], "thin": [32, 48]}
COLUMNS = ["layer", "M", "N", "K", "kernel", "picks", "weights", "copies", "round", "batch", "us"]


def _samples(times: dict) -> pd.DataFrame:
    """(layer, M, N, K) -> kernel -> µs per round (or (the kernel it picks, µs per round) for dispatch)."""
    rows = []
    for (layer, m, n, k), per in times.items():
        for kernel, us in per.items():
            picks, values = us if isinstance(us, tuple) else (kernel, us)
            for weights in ("cold", "warm"):
                for r, u in enumerate(values, 2):
                    rows.append(dict(zip(COLUMNS, [layer, m, n, k, kernel, picks, weights, 3, r, 10, float(u)])))
    return pd.DataFrame(rows, columns=COLUMNS)


CHECKS = ["layer", "M", "N", "K", "kernel", "picks", "status", "check", "reason"]


def _step(folder, samples, rule=None):
    folder.mkdir(parents=True)
    samples.to_csv(folder / "samples.csv", index=False)
    pd.DataFrame(columns=CHECKS).to_csv(folder / "checks.csv", index=False)
    plan = {"kernels": {}, "timed": []} | ({"dispatch": rule} if rule is not None else {})
    (folder / "meta.json").write_text(json.dumps({"step": "layers", "fp32": True, "model": SPEC, "plan": plan}))


@pytest.fixture
def run(tmp_path):
    fit = _samples(
        {
            ("fit", 256, 256, 256): {"small": [5, 5, 5], "thin": [9, 9, 9], "cublas": [6, 6, 6]},
            ("fit", 8192, 32, 8192): {"small": [55, 55, 55], "thin": [60, 61, 62], "cublas": [50, 50, 50]},
        }
    )
    none = pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"])
    rule = dispatch.fit_fp32(fit, none, "cublas", TILES)
    _step(tmp_path / "raw" / "model-fp32", fit)
    picked = {
        ("held-out", 333, 517, 129): {"dispatch": ("small", [6, 6, 6]), "cublas": [5, 5, 5]},
        ("held-out", 4097, 33, 4095): {"dispatch": ("thin", [80, 80, 80]), "cublas": [60, 66, 72]},
        ("a", 16, 4096, 4096): {"dispatch": ("small", [10, 10, 10]), "cublas": [12, 12, 12]},
    }
    _step(tmp_path / "raw" / "model-fp32-dispatch", _samples(picked), rule)
    return tmp_path


def test_the_fp32_rule_counts_every_side_alike_and_weighs_how_fully_tiles_cover_a_shape():
    fit = _samples(
        {
            ("fit", 8192, 32, 8192): {"small": [55], "thin": [60], "cublas": [50]},
            ("fit", 256, 256, 256): {"small": [1], "cublas": [1]},
        }
    )
    none = pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"])
    rule = dispatch.fit_fp32(fit, none, "cublas", TILES)
    assert rule["m_weight"] == 1.0 and rule["tiles"] == TILES and rule["regimes"] == ["cold", "warm"]
    assert rule["points"][0]["cost"] == {"small": 1.1, "thin": 1.2}  # times SGEMM's, the worse regime
    takes = {"thin": None, "small": None}
    # 4097 x 33 x 4095: one octave of M and one of K from the thin shape (4 + 7 + 4 from 256^3); there 32 x 32
    # tiles were full and cost 1.1 (times SGEMM's), but 4097 x 33 fills 4097 * 33 / (4128 * 64) = 51% of theirs:
    # 1.1 / 0.51 = 2.15, against 1.2 * (32 / 48) / (4097 * 33 / (4128 * 48)) = 1.17 for the 32 x 48 tiles
    assert dispatch.pick(rule, 4097, 33, 4095, takes) == "thin"
    assert dispatch.pick(rule, 8192, 32, 8000, takes) == "small"  # the fit shape's own order where tiles fit alike
    plain = dispatch.fit(fit, none, "cublas", dispatch.FP32_M_WEIGHT)  # no tiles: the ranking as measured
    assert "tiles" not in plain and "regimes" not in plain  # a cost at every fitted shape, as every rule keeps
    assert dispatch.pick(plain, 4097, 33, 4095, takes) == "small"
    assert dispatch.pick(rule, 333, 517, 129, takes) == "small"
    assert (
        dispatch.fill([32, 48], 4097, 33) == pytest.approx(4097 * 33 / (4128 * 48)) and dispatch.fill(None, 3, 5) == 1
    )


def test_the_fp32_shares_of_sgemm_in_the_same_rounds(run):
    r = fp32_dispatch.tables(run, GPU)["fp32_rates"].set_index(["step", "layer", "M", "N", "K", "kernel", "weights"])
    thin = r.loc[("fit", "fit", 8192, 32, 8192, "thin", "cold")]
    assert thin.median_us == 61 and thin.of_reference == pytest.approx(50 / 61)
    assert thin.tflops == pytest.approx(2 * 8192 * 32 * 8192 / 61e-6 / 1e12)
    peak = 132 * 128 * 2 * 1.98e9
    assert thin.of_fp32_peak == pytest.approx(2 * 8192 * 32 * 8192 / peak / 61e-6)
    # two fit shapes share the layer "fit" and one M: each keeps its own reference
    assert r.loc[("fit", "fit", 256, 256, 256, "small", "cold")].of_reference == pytest.approx(6 / 5)


def test_the_fp32_dispatcher_is_held_to_80_percent_of_sgemm_at_the_held_out_shapes(run):
    d = fp32_dispatch.tables(run, GPU)["fp32_dispatch"]
    cold = d[d.weights == "cold"].set_index(["layer", "M"])
    small = cold.loc[("held-out", 333)]
    assert small.kernel == "small" and small["from"] == "256×256×256" and small.round_ratio == pytest.approx(5 / 6)
    assert small.met  # 83%, cold and warm
    thin = cold.loc[("held-out", 4097)]
    # per-round ratios 60/80, 66/80, 72/80: median 0.825 (met), the ratio of medians the same
    assert thin.kernel == "thin" and thin["from"] == "8192×32×8192"  # not "small", faster there: its tiles
    assert thin.round_ratio == pytest.approx(0.825) and thin.met
    assert cold.loc[("a", 16)].met is None and cold.loc[("a", 16)].goal == ""  # a model layer: shown, no goal
    assert d[d.weights == "warm"].met.isna().all()


def test_the_fp32_goal_needs_the_warm_share_too(run):
    """The ladder's odd shapes are timed warm on the ladder page: a dispatcher at 80% of SGEMM cold but under it
    warm (SGEMM faster with B in the L2) has not met the goal."""
    samples = run / "raw" / "model-fp32-dispatch" / "samples.csv"
    s = pd.read_csv(samples)
    at = (s.M == 333) & (s.weights == "warm") & (s.kernel == "cublas")
    s.loc[at, "us"] = 4.0  # warm: 4 / 6 = 67%
    s.to_csv(samples, index=False)
    d = fp32_dispatch.tables(run, GPU)["fp32_dispatch"].set_index(["layer", "M", "weights"])
    assert d.loc[("held-out", 333, "cold"), "round_ratio"] == pytest.approx(5 / 6)
    assert not d.loc[("held-out", 333, "cold"), "met"]


def test_a_held_out_shape_whose_pick_failed_its_check_counts_as_not_met(run):
    folder = run / "raw" / "model-fp32-dispatch"
    s = pd.read_csv(folder / "samples.csv")
    s[~((s.M == 333) & (s.kernel == "dispatch"))].to_csv(folder / "samples.csv", index=False)
    row = ["held-out", 333, 517, 129, "dispatch", "small", "failed", "rounding", "NaN in the output"]
    pd.DataFrame([row], columns=CHECKS).to_csv(folder / "checks.csv", index=False)
    d = fp32_dispatch.tables(run, GPU)["fp32_dispatch"]
    small = d[(d.M == 333)]
    assert len(small) == 1 and small.met.tolist() == [False] and "NaN in the output" in small.goal.iloc[0]
    assert small.kernel.iloc[0] == "small" and small.median_us.isna().all()


def test_an_fp32_dispatch_step_that_applied_another_rule_is_refused(run):
    meta = run / "raw" / "model-fp32-dispatch" / "meta.json"
    m = json.loads(meta.read_text())
    m["plan"]["dispatch"]["m_weight"] = 4.0
    meta.write_text(json.dumps(m))
    with pytest.raises(ValueError, match="FP32 dispatch step applied a rule its fit samples do not give"):
        fp32_dispatch.tables(run, GPU)


def test_a_run_without_fp32_has_empty_tables_with_their_columns(tmp_path):
    t = fp32_dispatch.tables(tmp_path, GPU)
    assert set(t) == {"fp32_rates", "fp32_dispatch"} and all(df.empty and len(df.columns) for df in t.values())
    (tmp_path / "raw" / "model-fp32").mkdir(parents=True)  # a replayed archive without it: a note in its place
    (tmp_path / "raw" / "model-fp32" / "meta.json").write_text('{"status": "not measured"}')
    assert fp32_dispatch.tables(tmp_path, GPU)["fp32_dispatch"].empty


def test_a_kernel_that_failed_at_one_fit_shape_is_ranked_at_another_of_the_same_m():
    """FP32's fit shapes share the layer "fit" and some share an M (1024 x 1024 x 1024, 1024 x 32 x 8192): a
    failure at one is that shape's alone."""
    fit = _samples(
        {
            ("fit", 1024, 32, 8192): {"small": [5], "thin": [6], "cublas": [4]},
            ("fit", 1024, 1024, 1024): {"small": [7], "thin": [8], "cublas": [6]},
        }
    )
    fails = pd.DataFrame([{"layer": "fit", "M": 1024, "N": 32, "K": 8192, "kernel": "small", "status": "failed"}])
    rule = dispatch.fit(fit, fails, "cublas", dispatch.FP32_M_WEIGHT, TILES)
    ranks = {(p["N"], p["K"]): p["ranking"] for p in rule["points"]}
    assert ranks == {(32, 8192): ["thin"], (1024, 1024): ["small", "thin"]}


def test_the_fp32_rule_ranks_a_shapes_kernels_by_their_worse_share_of_sgemm_cold_or_warm():
    """333 x 517 x 129 in the H100 archive: the cluster build at 91% of SGEMM cold and 67% warm (SGEMM 27% faster
    with B in the L2, the cluster build not), `b32x48` slower cold but at 88% warm: the goal holds the dispatcher
    to both, so the rule ranks by the worse."""
    fit = _samples({("fit", 256, 512, 128): {"cluster": [5], "plain": [6], "cublas": [5.5]}})
    warm = fit.weights == "warm"
    fit.loc[warm & (fit.kernel == "cublas"), "us"] = 4.0
    fit.loc[warm & (fit.kernel == "plain"), "us"] = 4.5
    none = pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"])
    tiles = {"cluster": [32, 48], "plain": [32, 48]}
    rule = dispatch.fit_fp32(fit, none, "cublas", tiles)
    cost = rule["points"][0]["cost"]
    assert rule["points"][0]["ranking"] == ["plain", "cluster"]
    assert cost == {"plain": pytest.approx(4.5 / 4), "cluster": pytest.approx(5 / 4)}  # each its warm time
    assert dispatch.pick(rule, 333, 517, 129, {"cluster": None, "plain": None}) == "plain"
    cold = dispatch.fit(fit, none, "cublas", dispatch.FP32_M_WEIGHT, tiles)  # cold only: the other order
    assert cold["points"][0]["ranking"] == ["cluster", "plain"]


def test_a_shape_where_the_reference_was_not_timed_is_not_ranked_and_a_kernel_missing_a_regime_is_not_either():
    fit = _samples(
        {("fit", 256, 512, 128): {"plain": [6]}, ("fit", 512, 512, 512): {"plain": [9], "thin": [8], "cublas": [7]}}
    )
    fit = fit[~((fit.kernel == "thin") & (fit.weights == "warm"))]  # timed cold only: its warm cost unknown
    none = pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"])
    rule = dispatch.fit_fp32(fit, none, "cublas", {})
    assert [(p["M"], p["ranking"]) for p in rule["points"]] == [(512, ["plain"])]
    assert rule["points"][0]["cost"] == {"plain": pytest.approx(9 / 7)}
    with pytest.raises(ValueError, match="no fitted shape"):
        dispatch.fit_fp32(fit[fit.M == 256], none, "cublas", {})


def test_a_rule_is_the_same_whatever_the_last_bit_of_a_median():
    a = {"m_weight": 1.0, "points": [{"M": 8, "ranking": ["x"], "cost": {"x": 12.637840509414675}}]}
    b = {"m_weight": 1.0, "points": [{"M": 8, "ranking": ["x"], "cost": {"x": 12.637840509414673}}]}
    assert dispatch.same(a, b)  # the archive's machine's pandas and this one's, on the same samples
    assert not dispatch.same(a, {**b, "points": [{"M": 8, "ranking": ["x"], "cost": {"x": 12.64}}]})
    assert not dispatch.same(a, {**b, "points": [{"M": 8, "ranking": ["y"], "cost": {"x": 12.637840509414673}}]})
    assert not dispatch.same(a, {**b, "m_weight": 4.0}) and not dispatch.same({"k": 1}, {"k": "1"})


def test_the_fp32_rule_step_holds_sgemm_out_and_names_a_reference_it_did_not_time(run, tmp_path, capsys):
    from gpumm import cli

    out = tmp_path / "rule.json"
    assert cli.main(["model-rule", "--fp32", "--raw", str(run / "raw" / "model-fp32"), "--out", str(out)]) == 0
    rule = json.loads(out.read_text())  # the reference defaults to cuBLAS SGEMM with --fp32: never ranked
    assert rule["reference"] == "cublas" and all("cublas" not in p["ranking"] for p in rule["points"])
    assert rule["tiles"] == {"small": None, "thin": None}  # not catalog builds: no tile known
    # the FP32 tables fit the rule again and refuse a dispatch step that applied another: the step's own rule passes
    meta = run / "raw" / "model-fp32-dispatch" / "meta.json"
    step = json.loads(meta.read_text())
    step["plan"]["dispatch"] = json.loads(out.read_text()) | {"tiles": TILES}
    meta.write_text(json.dumps(step))
    tiled = tmp_path / "tiled.json"
    fit = pd.read_csv(run / "raw" / "model-fp32" / "samples.csv")
    none = pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"])
    tiled.write_text(json.dumps(dispatch.fit_fp32(fit, none, "cublas", TILES)))
    assert step["plan"]["dispatch"] == json.loads(tiled.read_text())
    assert not fp32_dispatch.tables(run, GPU)["fp32_dispatch"].empty
    rc = cli.main(["model-rule", "--raw", str(run / "raw" / "model-fp32"), "--out", str(tmp_path / "r2.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "'cublas_bf16' is not among the kernels" in err and "Traceback" not in err
    assert not (tmp_path / "r2.json").exists()


def test_the_fp32_rule_counts_waves_where_it_knows_the_sms_and_the_blocks():
    """1023 x 1025 x 1024 near a fitted 1024^3: 128 x 128 tiles with a cluster of 2 were one block an SM there (64
    tiles, 128 blocks), the fastest; at 1023 x 1025 they are 72 tiles, 144 blocks, and 12 SMs run two (twice the
    time, ``sm_blocks`` 1); with a cluster of 3, 192 and 216 blocks are both two an SM: its cost stands."""
    fit = _samples({("fit", 1024, 1024, 1024): {"c2": [70], "c3": [88], "cublas": [58]}})
    none = pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"])
    tiles = {"c2": [128, 128], "c3": [128, 128]}
    blocks = {"c2": {"cl": 2, "persistent": False, "per_sm": 1}, "c3": {"cl": 3, "persistent": False, "per_sm": 1}}
    takes = {"c2": None, "c3": None}
    by_fill = dispatch.fit_fp32(fit, none, "cublas", tiles)
    assert "sms" not in by_fill and dispatch.pick(by_fill, 1023, 1025, 1024, takes) == "c2"  # fill alone: 89% both
    rule = dispatch.fit_fp32(fit, none, "cublas", tiles, blocks, 132)
    assert rule["sms"] == 132 and rule["blocks"] == blocks
    assert dispatch.pick(rule, 1023, 1025, 1024, takes) == "c3"
    assert dispatch.pick(rule, 1024, 1024, 1024, takes) == "c2"  # the fitted shape keeps its own order
    assert dispatch.pick(rule, 1000, 1000, 1000, takes) == "c2"  # 64 tiles again
    # a persistent grid spreads its tiles' work evenly (as by fill); a build several of whose blocks an SM runs at
    # full speed counts waves of that many
    even = {"cl": 1, "persistent": True, "per_sm": 1}
    by_fill = 1 / dispatch.fill([256, 128], 1023, 1025) / 132
    assert dispatch.load([256, 128], even, 132, 1023, 1025) == pytest.approx(by_fill)
    small = {"cl": 1, "persistent": False, "per_sm": 2}
    assert dispatch.load([32, 32], small, 132, 333, 517) == pytest.approx(1 * 32 * 32 / (333 * 517))  # 187 < 264
    assert dispatch.load([32, 32], {**small, "per_sm": 1}, 132, 333, 517) == pytest.approx(2 * 32 * 32 / (333 * 517))
    assert dispatch.load(None, None, 132, 3, 5) == 1


def test_a_build_that_folds_a_narrow_last_column_of_tiles_counts_the_tiles_its_grid_keeps():
    """cluster_tile's FOLD: 1023 x 1025 in 128 x 128 tiles is 8 x 8 whole tiles and a ninth column of tiles one
    column wide, whose blocks multiply that column alone (light: not counted), so 128 counted blocks with a cluster
    of 2, one wave on 132 SMs, as at 1024^3; the folded build keeps its lead there where the plain one's 144 blocks
    take two waves. Five columns over are a tile of their own again; a product narrower than the fold, one."""
    fit = _samples({("fit", 1024, 1024, 1024): {"c2": [70], "c2f4": [70.5], "c3": [88], "cublas": [58]}})
    none = pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"])
    tiles = {k: [128, 128] for k in ("c2", "c2f4", "c3")}
    plain = {"cl": 2, "persistent": False, "per_sm": 1}
    blocks = {"c2": plain, "c2f4": {**plain, "fold": 4}, "c3": {**plain, "cl": 3}}
    rule = dispatch.fit_fp32(fit, none, "cublas", tiles, blocks, 132)
    takes = dict.fromkeys(tiles)
    assert dispatch.pick(rule, 1024, 1024, 1024, takes) == "c2"
    assert dispatch.pick(rule, 1023, 1025, 1024, takes) == "c2f4"
    assert [rule_mod.columns_of([128, 128], blocks["c2f4"], n) for n in (1, 4, 128, 1025, 1028, 1029)] == [
        1,
        1,
        1,
        8,
        8,
        9,
    ]
    assert [rule_mod.columns_of([128, 128], plain, n) for n in (1, 128, 1025)] == [1, 1, 9]
    one = dispatch.load([128, 128], blocks["c2f4"], 132, 1023, 1025)
    assert one == pytest.approx(128 * 128 / 2 / (1023 * 1025))  # one wave of half-deep tiles
    assert 2 * one == dispatch.load([128, 128], plain, 132, 1023, 1025)  # two
    assert dispatch.block_of(catalog.from_id("cluster_tile_t128c2f4"))["fold"] == 4
    # the grid still launches the narrow column's blocks (light ones: the rule does not count them)
    folded, plain_build = catalog.from_id("cluster_tile_t128c2f4"), catalog.from_id("cluster_tile_t128c2")
    assert folded.grid_dims(1023, 1025, 1024) == plain_build.grid_dims(1023, 1025, 1024) == (18, 8, 1)
    assert "fold" not in dispatch.block_of(catalog.from_id("cluster_tile_t128c2"))  # the rules archived before it


def test_a_build_s_blocks_come_from_the_catalog():
    from gpumm.setup import catalog

    assert dispatch.block_of(catalog.from_id("cluster_tile_t128c3")) == {"cl": 3, "persistent": False, "per_sm": 1}
    assert dispatch.block_of(catalog.from_id("splitk_b32x48c2")) == {"cl": 2, "persistent": False, "per_sm": 2}
    assert dispatch.block_of(catalog.from_id("streamk")) == {"cl": 1, "persistent": True, "per_sm": 1}
    assert dispatch.block_of(catalog.from_id("cublas")) is None
    assert dispatch.blocks_of(["splitk_b32x48", "nonesuch"]) == {
        "splitk_b32x48": {"cl": 1, "persistent": False, "per_sm": 1},
        "nonesuch": None,
    }


def test_the_fp32_rule_step_keeps_the_blocks_and_sms_its_fit_step_recorded(run, tmp_path):
    from gpumm import cli

    meta = run / "raw" / "model-fp32" / "meta.json"
    meta.write_text(json.dumps(json.loads(meta.read_text()) | {"sm_count": 132}))
    out = tmp_path / "rule.json"
    assert cli.main(["model-rule", "--fp32", "--raw", str(run / "raw" / "model-fp32"), "--out", str(out)]) == 0
    rule = json.loads(out.read_text())
    assert rule["sms"] == 132 and rule["blocks"] == {"small": None, "thin": None}  # not catalog builds

"""Issue 40: the model page's tables from a model step's raw files, each number by hand."""

import json

import numpy as np
import pandas as pd
import pytest

from gpumm.analyse import dispatch, layers, model

GPU = {"name": "test", "compute_capability": "9.0", "sm_count": 132, "sm_clock_khz": 1_980_000}
SPEC = {
    "name": "tiny",
    "tokens": [1, 1024],
    "held_out": [8],
    "reference": "cublas_bf16",
    "models": {
        "tiny": {
            "source": "by hand",
            "layers": {"a": {"n": 4096, "k": 4096, "count": 2}, "b": {"n": 8192, "k": 4096, "count": 1}},
        }
    },
}
READ = [
    {"pattern": "read_grid 4", "ok": True, "bytes": 2**31, "ms": 1.0, "bytes_per_s": 2.0e12},
    {"pattern": "read_rows 512", "ok": True, "bytes": 2**31, "ms": 1.0, "bytes_per_s": 3.0e12},
    {"pattern": "read_rows 1792", "ok": False, "bytes": 2**31, "ms": 1.0, "bytes_per_s": 9.0e12},  # sums wrong
    {"pattern": "device copy", "ok": True, "bytes": 2**31, "ms": 1.0, "bytes_per_s": 2.9e12},
]
# µs per launch, per round: (layer, M) -> kernel -> [round 2, round 3, round 4]
FITTED = {
    ("a", 1): {"stream": [10, 11, 12], "race": [30, 30, 30], "cublas_bf16": [12, 12, 13]},
    ("b", 1): {"stream": [20, 20, 20], "race": [50, 50, 50], "cublas_bf16": [19, 19, 19]},
    ("a", 1024): {"race": [100, 100, 100], "cublas_bf16": [99, 101, 100]},
    ("b", 1024): {"race": [200, 210, 220], "cublas_bf16": [210, 210, 210]},
}
NK = {"a": (4096, 4096), "b": (8192, 4096)}


def _samples(times: dict) -> pd.DataFrame:
    rows = []
    for (layer, m), per in times.items():
        for kernel, us in per.items():
            picks = kernel if not isinstance(us, tuple) else us[0]
            values = us if not isinstance(us, tuple) else us[1]
            for r, u in enumerate(values, 2):
                rows.append({"layer": layer, "M": m, "N": NK[layer][0], "K": NK[layer][1], "kernel": kernel})
                rows[-1] |= {"picks": picks, "weights": "cold", "copies": 3, "round": r, "batch": 10, "us": float(u)}
    return pd.DataFrame(
        rows, columns=["layer", "M", "N", "K", "kernel", "picks", "weights", "copies", "round", "batch", "us"]
    )


def _step(folder, samples: pd.DataFrame, read: bool, rule=None):
    folder.mkdir(parents=True)
    samples.to_csv(folder / "samples.csv", index=False)
    pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "picks", "status", "check"]).to_csv(
        folder / "checks.csv", index=False
    )
    shapes = samples.groupby(["layer", "M", "N", "K"]).kernel.nunique().rename("members").reset_index().assign(failed=0)
    shapes.to_csv(folder / "shapes.csv", index=False)
    if read:
        pd.DataFrame(READ).to_csv(folder / "read.csv", index=False)
    plan = {"kernels": {}, "timed": []} | ({"dispatch": rule} if rule is not None else {})
    (folder / "meta.json").write_text(json.dumps({"step": "layers", "model": SPEC, "plan": plan}))


@pytest.fixture
def run(tmp_path):
    fitted = _samples(FITTED)
    rule = dispatch.fit(fitted, pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"]), "cublas_bf16")
    _step(tmp_path / "raw" / "model", fitted, read=True)
    picked = {
        ("a", 1): {"dispatch": ("stream", [10, 10, 10]), "cublas_bf16": [12, 12, 12]},
        ("b", 1): {"dispatch": ("stream", [20, 20, 20]), "cublas_bf16": [19, 19, 19]},
        ("a", 8): {"dispatch": ("race", [40, 40, 40]), "cublas_bf16": [20, 20, 20]},
        ("b", 8): {"dispatch": ("race", [60, 60, 60]), "cublas_bf16": [30, 30, 30]},
        ("a", 1024): {"dispatch": ("race", [100, 100, 100]), "cublas_bf16": [99, 99, 99]},
        ("b", 1024): {"dispatch": ("race", [200, 200, 200]), "cublas_bf16": [180, 210, 220]},
    }
    _step(tmp_path / "raw" / "model-dispatch", _samples(picked), read=False, rule=rule)
    return tmp_path


def test_the_bound_reads_at_the_fastest_pattern_whose_sums_checked(run):
    t = layers.tables(run, GPU)
    read = t["model_read"].set_index("pattern")
    assert read.chosen.tolist() == [False, True, False, False]  # 3.0e12: not the failed 9e12, not the copy
    s = t["model_shapes"].set_index(["layer", "M"])
    bytes_a1 = model.moved(1, 4096, 4096)
    assert s.loc[("a", 1), "dram_us"] == pytest.approx(bytes_a1 / 3.0e12 * 1e6)
    assert s.loc[("a", 1), "regime"] == "DRAM-bound" and s.loc[("a", 1024), "regime"] == "tensor-bound"
    assert s.loc[("a", 8), "members"] == 2  # a held-out shape's members: the dispatch step's record
    assert s.fitted.to_dict() == {("a", 1): True, ("a", 8): False, ("a", 1024): True} | {
        ("b", 1): True,
        ("b", 8): False,
        ("b", 1024): True,
    }


def test_shares_of_the_bound_and_of_the_reference_in_the_same_rounds(run):
    r = layers.tables(run, GPU)["model_rates"].set_index(["step", "layer", "M", "kernel"])
    stream = r.loc[("fitted", "a", 1, "stream")]
    assert stream.median_us == 11 and stream.of_reference == pytest.approx(12 / 11)
    assert stream.of_dram == pytest.approx(model.moved(1, 4096, 4096) / 3.0e12 * 1e6 / 11)
    race = r.loc[("fitted", "b", 1024, "race")]
    assert race.of_reference == pytest.approx(210 / 210) and race.round_ratio == pytest.approx(1.0)
    assert r.loc[("fitted", "b", 1024, "cublas_bf16")].role == "reference"
    assert r.loc[("dispatch", "a", 1, "dispatch")].role == "dispatcher"


def test_the_dispatchers_goals_by_regime_and_the_held_out_shapes(run):
    d = layers.tables(run, GPU)["model_dispatch"].set_index(["layer", "M"])
    assert d.loc[("a", 8), "fitted"] == False and d.loc[("a", 8), "from"] == "a M=1–1024"  # noqa: E712
    assert d.loc[("a", 8), "met"] is None  # M = 8: neither decode (1, 16) nor prefill (1024 and more)
    a1 = d.loc[("a", 1)]
    assert a1.of_reference == pytest.approx(1.2) and a1.of_bound > 1 and a1.met  # above the bound: read faster
    b1 = d.loc[("b", 1)]
    assert b1.of_bound >= 0.9 and b1.of_reference == pytest.approx(19 / 20) and not b1.met  # under cuBLAS
    # prefill: the median of the per-round ratios 180/200, 210/200, 220/200 is 1.05: met, where the ratio of
    # medians says 1.05 too; at "a" 99/100 = 0.99
    assert d.loc[("b", 1024), "round_ratio"] == pytest.approx(1.05) and d.loc[("b", 1024), "met"]
    assert d.loc[("a", 1024), "round_ratio"] == pytest.approx(0.99) and d.loc[("a", 1024), "met"]


def test_the_dispatcher_says_how_many_us_a_launch_takes_over_its_bound(run):
    """a at one token: 10 µs against its bytes at the 3.0e12 read rate (11.2 µs): 1.2 µs under it; every timed
    shape its median less its shape's larger bound."""
    t = layers.tables(run, GPU)
    d, s = t["model_dispatch"].set_index(["layer", "M"]), t["model_shapes"].set_index(["layer", "M"])
    assert d.loc[("a", 1), "over_bound_us"] == pytest.approx(10 - model.moved(1, 4096, 4096) / 3.0e12 * 1e6)
    assert d.over_bound_us.to_dict() == pytest.approx((d.median_us - s.bound_us.reindex(d.index)).to_dict())
    assert (d.loc[("b", 1024), "over_bound_us"] > 0) and d.over_bound_us.notna().all()


def test_the_model_per_step_sums_each_layer_times_its_count(run):
    tok = layers.tables(run, GPU)["model_tokens"].set_index("M")
    assert list(tok.index) == [1, 1024]  # M = 8 is neither decode nor prefill
    assert tok.loc[1, "step_us"] == 2 * 10 + 20 and tok.loc[1, "reference_step_us"] == 2 * 12 + 19
    assert tok.loc[1024, "per_token_us"] == pytest.approx((2 * 100 + 200) / 1024)
    assert tok.loc[1, "phase"] == "decode" and tok.loc[1024, "phase"] == "prefill"


def test_a_dispatch_step_that_applied_another_rule_is_refused(run):
    meta = run / "raw" / "model-dispatch" / "meta.json"
    m = json.loads(meta.read_text())
    m["plan"]["dispatch"]["points"][0]["ranking"].reverse()
    meta.write_text(json.dumps(m))
    with pytest.raises(ValueError, match="applied a rule its fit samples do not give"):
        layers.tables(run, GPU)


def test_a_rule_recorded_before_the_costs_is_checked_without_them_and_on_every_pick_it_made(run):
    """An archive's dispatch step that recorded its rule before each fitted shape kept its costs: the same
    rankings, and each timed pick the one today's rule gives, pass; a pick today's rule would not make is
    refused."""
    meta = run / "raw" / "model-dispatch" / "meta.json"
    m = json.loads(meta.read_text())
    for p in m["plan"]["dispatch"]["points"]:
        del p["cost"]
    meta.write_text(json.dumps(m))
    assert not layers.tables(run, GPU)["model_dispatch"].empty
    samples = run / "raw" / "model-dispatch" / "samples.csv"
    s = pd.read_csv(samples)
    s.loc[(s.kernel == "dispatch") & (s.M == 8), "picks"] = "stream"  # today's rule gives the race at M = 8
    s.to_csv(samples, index=False)
    with pytest.raises(ValueError, match="picked stream at 8 x 4096 x 4096, where today's rule picks race"):
        layers.tables(run, GPU)


def test_a_shape_whose_pick_failed_its_check_counts_as_a_goal_not_met(run):
    folder = run / "raw" / "model-dispatch"
    s = pd.read_csv(folder / "samples.csv")
    s[~((s.layer == "a") & (s.M == 1) & (s.kernel == "dispatch"))].to_csv(folder / "samples.csv", index=False)
    row = {"layer": "a", "M": 1, "N": 4096, "K": 4096, "kernel": "dispatch", "picks": "stream", "status": "failed"}
    pd.DataFrame([row | {"check": "exact", "reason": "NaN in the output"}]).to_csv(folder / "checks.csv", index=False)
    d = layers.tables(run, GPU)["model_dispatch"].set_index(["layer", "M"])
    a1 = d.loc[("a", 1)]
    assert a1.met == False and a1.kernel == "stream" and "NaN in the output" in a1.goal  # noqa: E712
    assert a1.median_us != a1.median_us and a1.over_bound_us != a1.over_bound_us  # not timed: no time


def test_a_run_without_the_model_has_empty_tables_with_their_columns(tmp_path):
    t = layers.tables(tmp_path, GPU)
    assert set(t) == {"model_read", "model_ceiling", "model_shapes", "model_rates", "model_dispatch"} | {
        "model_tokens",
        "model_crossover",
    }
    assert all(df.empty and len(df.columns) for df in t.values())
    (tmp_path / "raw" / "model").mkdir(parents=True)  # a replayed archive without it: a note in each file's place
    (tmp_path / "raw" / "model" / "meta.json").write_text('{"status": "not measured", "reason": "not in the archive"}')
    assert layers.tables(tmp_path, GPU)["model_rates"].empty


def test_a_kernel_whose_code_changed_since_the_step_is_marked_stale(run):
    from gpumm.setup import catalog

    meta = run / "raw" / "model" / "meta.json"
    m = json.loads(meta.read_text())
    m["digests"] = {"cublas_bf16": catalog.from_id("cublas_bf16").digest(), "stream": "0123456789abcdef"}
    meta.write_text(json.dumps(m))
    r = layers.tables(run, GPU)["model_rates"]
    assert set(r[r.stale].picks) == {"stream"}  # not in today's catalog: its numbers stand for no code here
    assert not r[r.kernel == "cublas_bf16"].stale.any()


def test_a_kernel_the_archive_certifies_for_todays_code_is_not_stale(run):
    """A replay's provenance gives the digests its archive certifies now (python -m gpumm certify: the same SASS
    after a refactor): a kernel certified there is current, whatever digest its step recorded."""
    from gpumm.setup import catalog

    meta = run / "raw" / "model" / "meta.json"
    m = json.loads(meta.read_text())
    today = catalog.from_id("cublas_bf16").digest()
    m["digests"] = {"cublas_bf16": "0123456789abcdef"}  # recorded for other code
    meta.write_text(json.dumps(m))

    def stale(certified=None) -> set:
        r = layers.tables(run, GPU, certified)["model_rates"]
        return set(r[r.stale].picks)

    assert stale() == {"cublas_bf16"}  # nothing certified
    assert stale({"cublas_bf16": today}) == set()
    assert stale({"cublas_bf16": "fedcba9876543210"}) == {"cublas_bf16"}  # certified for other code


def _ceiling(run, rows: list[tuple]) -> None:
    """The model step's ceiling.csv: (layer, us of each kept round) or (layer, None): sums that did not check; a
    third item names the read pattern (read_rows by default)."""
    out = []
    for layer, us, *pattern in rows:
        n, k = NK[layer]
        key = {"layer": layer, "N": n, "K": k, "pattern": (pattern or ["read_rows"])[0], "bytes": 2 * n * k}
        key["copies"] = 4
        if us is None:
            out.append(key | {"round": -1, "batch": 0, "us": float("nan"), "ok": False})
        else:
            out += [key | {"round": r, "batch": 50, "us": u, "ok": True} for r, u in enumerate(us, 2)]
    pd.DataFrame(out).to_csv(run / "raw" / "model" / "ceiling.csv", index=False)


def test_each_layers_weight_read_alone_is_its_share_of_the_read_rate(run):
    """a: 32 MiB in 13, 12 and 14 µs, a median of 13: 2.58 TB/s, 86% of the 3.0e12 read rate; b's sums wrong."""
    _ceiling(run, [("a", [13.0, 12.0, 14.0]), ("b", None)])
    c = layers.tables(run, GPU)["model_ceiling"].set_index("layer")
    assert c.loc["a", "median_us"] == 13 and c.loc["a", "n"] == 3
    assert c.loc["a", "of_read"] == pytest.approx(2 * 4096 * 4096 / 13e-6 / 3.0e12)
    assert c.loc["b", "n"] == 0 and c.loc["b", "median_us"] != c.loc["b", "median_us"]  # no time, not a zero


def test_each_layers_ceiling_is_its_faster_read_pattern_and_a_pattern_that_failed_is_not_it(run):
    """a: two rows a block (12 µs) beats one (13); b: one row a block's sums wrong, two rows a block timed."""
    _ceiling(run, [("a", [13.0] * 3), ("a", [12.0] * 3, "read_rows2"), ("b", None), ("b", [20.0] * 3, "read_rows2")])
    c = layers.tables(run, GPU)["model_ceiling"].set_index("layer")
    assert c.pattern.to_dict() == {"a": "read_rows2", "b": "read_rows2"}
    assert c.median_us.to_dict() == {"a": 12.0, "b": 20.0}


def test_a_decode_goal_is_out_of_reach_where_the_weight_read_alone_stays_under_it(run):
    """a's weight read at 86% of the read rate: its decode goal (90%) cannot be reached at that size, whatever the
    dispatcher reads; b's at 2 x 8192 x 4096 bytes in 23 µs, 97%: within reach. M = 8 and 1024 have no decode
    goal: no verdict."""
    _ceiling(run, [("a", [13.0, 13.0, 13.0]), ("b", [23.0, 23.0, 23.0])])
    d = layers.tables(run, GPU)["model_dispatch"].set_index(["layer", "M"])
    assert d.loc[("a", 1), "reachable"] == False and d.loc[("b", 1), "reachable"] == True  # noqa: E712
    assert d.loc[("b", 1), "ceiling"] == pytest.approx(2 * 8192 * 4096 / 23e-6 / 3.0e12)
    assert d.loc[("a", 8), "reachable"] is None and d.loc[("a", 1024), "reachable"] is None


def test_a_step_without_the_ceiling_leaves_reach_unknown(run):
    t = layers.tables(run, GPU)
    assert t["model_ceiling"].empty and list(t["model_ceiling"].columns) == layers.CEILING
    assert t["model_dispatch"].reachable.isna().all()


def test_a_replayed_archive_without_the_ceiling_has_a_note_in_its_place_and_no_ceiling(run):
    note = run / "raw" / "model" / "ceiling.csv"
    pd.DataFrame([{"status": "not measured", "reason": "not in the archived run h100"}]).to_csv(note, index=False)
    t = layers.tables(run, GPU)
    assert t["model_ceiling"].empty and t["model_dispatch"].reachable.isna().all()


def test_each_shape_says_how_long_its_steps_heated_the_card_first_and_a_run_before_the_heat_none(run):
    """The dispatch step's shapes.csv with the heat's seconds: 0.5 at 1024 tokens, none below; the fitted step's
    file has no such column (a run made before the heat rounds): 0, not missing."""
    path = run / "raw" / "model-dispatch" / "shapes.csv"
    per = pd.read_csv(path)
    per.assign(heat_s=[0.5 if m >= 1024 else 0.0 for m in per.M]).to_csv(path, index=False)
    s = layers.tables(run, GPU)["model_shapes"].set_index(["layer", "M"])
    assert s.heat_s.to_dict() == {(layer, m): (0.5 if m == 1024 else 0.0) for layer in "ab" for m in (1, 8, 1024)}


def test_each_shape_says_why_its_steps_heat_ended_joined_where_they_differ_and_none_without_heat(run):
    """The fitted step's heat of the 1024-token shapes ended at the cap on both layers, the dispatch step's at the
    cap on one and at its limit on the other; a step made before the heat said why has no column: ''."""
    for step, ends in (("model", {"a": "cap", "b": "cap"}), ("model-dispatch", {"a": "cap", "b": "limit"})):
        path = run / "raw" / step / "shapes.csv"
        per = pd.read_csv(path)
        heated = per.M >= 1024
        per = per.assign(heat_s=np.where(heated, 0.5, 0.0), heat_end=np.where(heated, per.layer.map(ends), ""))
        per.to_csv(path, index=False)
    s = layers.tables(run, GPU)["model_shapes"].set_index(["layer", "M"])
    assert s.heat_end.to_dict() == {("a", 1024): "cap", ("b", 1024): "cap, limit"} | {
        (layer, m): "" for layer in "ab" for m in (1, 8)
    }
    path = run / "raw" / "model-dispatch" / "shapes.csv"
    pd.read_csv(path).drop(columns="heat_end").to_csv(path, index=False)
    assert layers.tables(run, GPU)["model_shapes"].set_index(["layer", "M"]).heat_end[("b", 1024)] == "cap"


def test_a_shape_only_a_step_without_the_heat_column_timed_has_no_heat_not_a_missing_value(run):
    """The fitted step's shapes.csv has the column, the dispatch step's not (the held-out M = 8: its shapes only)."""
    path = run / "raw" / "model" / "shapes.csv"
    per = pd.read_csv(path)
    per.assign(heat_s=[0.5 if m >= 1024 else 0.0 for m in per.M]).to_csv(path, index=False)
    s = layers.tables(run, GPU)["model_shapes"].set_index(["layer", "M"])
    assert s.heat_s.notna().all() and s.loc[("a", 8), "heat_s"] == 0.0 and s.loc[("a", 1024), "heat_s"] == 0.5

"""Issue 40, step 1: a real model's layers from the configuration and the two bounds of every shape, by hand."""

import copy
import math

import pandas as pd
import pytest
import yaml

from gpumm.analyse import model
from gpumm.setup import config, paths

B, P = 3.0e12, 1000e12  # DRAM 3 TB/s, tensor peak 1,000 TFLOP/s


@pytest.fixture
def cfg():
    return yaml.safe_load((paths.ROOT / "config.yaml").read_text())


def test_the_shipped_model_is_llama3_8b_with_its_source_and_off_by_default(cfg):
    m = cfg["model"]
    assert m["enabled"] is False and m["name"] == "llama3-8b"
    spec = m["models"]["llama3-8b"]
    assert "meta-llama/Meta-Llama-3-8B" in spec["source"]
    nk = {name: (lay["n"], lay["k"]) for name, lay in spec["layers"].items()}
    # hidden 4096, 32 query and 8 key-value heads of 128, intermediate 14336, vocabulary 128256
    assert nk == {
        "qkv": ((32 + 2 * 8) * 128, 4096),
        "out": (4096, 4096),
        "gate_up": (2 * 14336, 4096),
        "down": (4096, 14336),
        "logits": (128256, 4096),
    }
    s = model.shapes(m)
    assert len(s) == 5 * 7 and list(s[s.layer == "down"].M) == [1, 16, 64, 256, 1024, 4096, 8192]
    params = sum(lay["n"] * lay["k"] * lay["count"] for lay in spec["layers"].values())
    assert 7.4e9 < params < 7.6e9  # the layers' weights: 8B parameters less the embeddings and norms


def test_bounds_by_hand():
    """M = 1, N = K = 4096: 2·4096 + 2·4096² + 4·4096 bytes at 3 TB/s; 2·4096² flops at 1,000 TFLOP/s."""
    t = model.bounds(pd.DataFrame([{"model": "m", "layer": "out", "M": 1, "N": 4096, "K": 4096, "count": 2}]), B, P)
    r = t.iloc[0]
    assert r["bytes"] == 8192 + 2 * 4096**2 + 16384 == model.moved(1, 4096, 4096)
    assert r.dram_us == pytest.approx(r["bytes"] / B * 1e6) and r.tensor_us == pytest.approx(2 * 4096**2 / P * 1e6)
    assert r.bound_us == r.dram_us and r.regime == "DRAM-bound"
    unknown = model.bounds(t[model.COLUMNS[:6]], B, math.nan).iloc[0]
    assert unknown.regime == "unknown" and math.isnan(unknown.bound_us)


def test_the_regime_flips_at_the_crossover():
    n, k = 4096, 4096
    m = model.crossover(n, k, B, P)
    # at M*, 2·M·N·K / P equals (2·M·K + 2·N·K + 4·M·N) / B
    assert 2 * m * n * k / P == pytest.approx(model.moved(m, n, k) / B)
    rows = [{"model": "m", "layer": "out", "M": x, "N": n, "K": k, "count": 1} for x in (int(m), int(m) + 1)]
    assert list(model.bounds(pd.DataFrame(rows), B, P).regime) == ["DRAM-bound", "tensor-bound"]
    assert model.crossover(1, 4096, B, P) == math.inf  # one output per row: never tensor-bound
    assert math.isnan(model.crossover(n, k, 0.0, P))


def test_the_whole_model_per_token_sums_each_layer_times_its_count():
    rows = [
        {"model": "m", "layer": "a", "M": 1, "N": 4096, "K": 4096, "count": 32},
        {"model": "m", "layer": "b", "M": 1, "N": 8192, "K": 4096, "count": 1},
    ]
    b = model.bounds(pd.DataFrame(rows), B, P)
    total = model.per_token(b)
    assert total.bound_us.iloc[0] == pytest.approx(32 * b.bound_us.iloc[0] + b.bound_us.iloc[1])
    assert total.dram_share.iloc[0] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda m: m.update(name="llama-70b"), "model.name = 'llama-70b' is not a model of model.models"),
        (lambda m: m["models"]["llama3-8b"]["layers"]["out"].update(k=4100), "multiple of 8"),
        (lambda m: m.update(tokens=[0]), "model.tokens[0] = 0"),
        (lambda m: m["models"]["llama3-8b"].pop("source"), "source"),
        (lambda m: m.update(enabled=True) or m["fp32"].update(kernels=["bf16_stream"]), "model.fp32.kernels"),
        (lambda m: m.update(enabled=True) or m["fp32"].update(reference="sgemm"), "model.fp32.reference: 'sgemm'"),
        (lambda m: m["fp32"].update(fit=[[0, 4, 4]]), "model.fp32.fit[0][0] = 0"),
    ],
)
def test_a_bad_model_entry_is_named(cfg, edit, said):
    c = copy.deepcopy(cfg)
    edit(c["model"])
    msg = config.explain(c)
    if msg is None:
        with pytest.raises(config.ConfigError, match=said):
            config.check(c)
    else:
        assert said in msg and "\n" not in msg, msg


def test_the_model_section_changes_no_digest_and_no_replays_settings(cfg):
    """The model step is an addition that changes no other number and records its own section (its meta.json):
    on or off, the configuration's digest and the settings a replay compares are those of a configuration
    without it, so an archive made with the model replays under the default configuration without a caveat on
    every page, and the archives made before the section existed stay current."""
    without = {k: v for k, v in cfg.items() if k != "model"}
    assert config.digest(cfg) == config.digest(without)
    other = copy.deepcopy(cfg)
    other["model"]["name"] = "another"
    on = copy.deepcopy(cfg)
    on["model"]["enabled"] = True
    assert config.digest(other) == config.digest(on) == config.digest(cfg)
    assert "model" not in config.measured(on) and "tokens" not in str(config.measured(on))
    changed = copy.deepcopy(cfg)
    changed["seed"] += 1  # a setting of the study still counts
    assert config.digest(changed) != config.digest(cfg)


def test_a_config_without_the_model_section_is_valid_and_one_that_turns_it_on_without_models_is_not(cfg):
    c = {k: v for k, v in copy.deepcopy(cfg).items() if k != "model"}
    assert config.explain(c) is None
    # as tools/parallel-check.yaml gives it: no model section, so the schema's defaults (a name, no models)
    c["model"] = {"enabled": False, "name": "llama3-8b", "tokens": [1], "models": {}}
    config.check(c)
    c["model"] = {"enabled": True, "name": "llama3-8b", "models": {}}
    with pytest.raises(config.ConfigError, match="model.models is empty"):
        config.check(c)

import copy

import pytest
import yaml

from gpumm.setup import config, paths


@pytest.fixture
def cfg():
    return yaml.safe_load((paths.ROOT / "config.yaml").read_text())


def test_shipped_config_is_valid(cfg):
    assert config.explain(cfg) is None
    ids = [v.id for v in config.check(cfg)]
    assert "naive" in ids and "cublas" in ids and "tiled_tile16" in ids


@pytest.mark.parametrize(
    "edit, key, allowed",
    [
        (lambda c: c.update(sizes=[0]), "sizes[0] = 0", "integers 1 to 32768"),
        (lambda c: c.update(sizes=[-5]), "sizes[0] = -5", "integers 1 to 32768"),
        (lambda c: c.update(sizes=[1.5]), "sizes[0] = 1.5", "integers 1 to 32768"),
        (lambda c: c.update(mode="fast"), 'mode = "fast"', "auto"),
        (lambda c: c["timing"].update(min_samples=0), "timing.min_samples = 0", "Timed samples"),
        (lambda c: c.update(gpu_arch="hopper"), 'gpu_arch = "hopper"', "sm_XX"),
        (lambda c: c.update(memory_modes=["pinned"]), 'memory_modes[0] = "pinned"', "device"),
        (lambda c: c.update(shapes=[[3, 4]]), "shapes[0]", "[M, N, K]"),
        (lambda c: c.update(colour="red"), "colour", "Additional properties"),
    ],
)
def test_schema_errors_are_one_line_naming_key_and_allowed(cfg, edit, key, allowed):
    edit(cfg)
    msg = config.explain(cfg)
    assert msg is not None and "\n" not in msg
    assert key in msg and allowed in msg


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda c: c["variants"].update(fastest={}), "variants.fastest: unknown variant"),
        (lambda c: c["variants"].update(tiled={"TILE": [64]}), "variants.tiled.TILE: 64 is not allowed"),
        (lambda c: c["profile"].update(metric_set="all"), "profile.metric_set = 'all' is not allowed; allowed: memory"),
    ],
)
def test_semantic_errors_name_key_and_allowed(cfg, edit, expected):
    edit(cfg)
    assert config.explain(cfg) is None  # the schema cannot see these
    with pytest.raises(config.ConfigError, match=expected.replace("[", r"\[").replace("(", r"\(")):
        config.check(cfg)


def test_digest_changes_with_any_value(cfg):
    other = copy.deepcopy(cfg)
    other["timing"]["min_samples"] += 1
    assert config.digest(cfg) != config.digest(other)
    assert config.digest(cfg) == config.digest(copy.deepcopy(cfg))


def test_tune_false_builds_only_the_first_candidate_of_a_search(cfg):
    tuned = [v.id for v in config.check(copy.deepcopy(cfg)) if v.family == "interior"]
    assert len(tuned) > 1
    cfg["tune"] = False
    assert config.explain(cfg) is None
    assert [v.id for v in config.check(cfg) if v.family == "interior"] == tuned[:1]
    cfg["tune"] = "no"
    assert 'tune = "no"' in config.explain(cfg)


def test_a_tuned_family_may_have_its_own_max_size_when_only_leaves_it_out(cfg):
    cfg["only"] = ["naive", "cublas"]  # max_size.interior stays in the config: a family name, allowed
    assert [v.id for v in config.check(cfg)] == ["naive", "cublas"]

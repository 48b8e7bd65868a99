import copy
import re

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
    assert cfg["tune"] is False  # the default: the study within 300 s (workflow/configs/full.yaml turns it on)
    cfg["tune"] = True
    tuned = [v.id for v in config.check(copy.deepcopy(cfg)) if v.family == "interior"]
    assert len(tuned) > 1
    cfg["tune"] = False
    assert config.explain(cfg) is None
    assert [v.id for v in config.check(cfg) if v.family == "interior"] == tuned[:1]
    cfg["tune"] = "no"
    assert 'tune = "no"' in config.explain(cfg)


def test_the_model_builds_every_candidate_whatever_tune_says(cfg):
    """The dispatcher's rule chooses among a family's candidates per shape: the ladder's `tune: false` leaves them."""
    cfg["tune"] = False
    cfg["model"]["enabled"] = True
    fp32 = [v.id for v in config.model_builds(cfg, fp32=True) if v.family == "splitk"]
    assert fp32 == ["splitk_b32x32", "splitk_b32x48", "splitk_b32x48c2"]
    bf16 = [v.id for v in config.model_builds(cfg, fp32=False) if v.family == "bf16_stream"]
    assert len(bf16) > 1


def test_a_tuned_family_may_have_its_own_max_size_when_only_leaves_it_out(cfg):
    cfg["only"] = ["naive", "cublas"]  # max_size.interior stays in the config: a family name, allowed
    assert [v.id for v in config.check(cfg)] == ["naive", "cublas"]


# ---------------------------------------------------------------- strict reading (issue 20)


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda c: c.update(sizes=[16.0]), "sizes[0] = 16.0 is not allowed: 16.0 is not of type 'integer'"),
        (lambda c: c["variants"].update(tiled={"TILE": [8.0, 16]}), "variants.tiled.TILE[0] = 8.0 is not allowed"),
        (lambda c: c["timing"].update(max_samples=20.0), "timing.max_samples = 20.0 is not allowed"),
        (lambda c: c.update(seed=True), "seed = true is not allowed"),
    ],
)
def test_integers_are_integers(cfg, edit, key):
    """JSON Schema counts 16.0 as an integer; the check does not (a tile of 8.0 named a variant tiled_tile8.0)."""
    edit(cfg)
    msg = config.explain(cfg)
    assert msg is not None and key in msg and "\n" not in msg


def test_command_line_and_file_give_one_verdict(cfg):
    """--config sizes=[16.0] reaches the check as the string '16.0': it is refused with the file's own line."""
    from_file = copy.deepcopy(cfg)
    from_file["sizes"] = [16.0]
    from_cli = config.coerce({**copy.deepcopy(cfg), "sizes": ["16.0"]})
    assert config.explain(from_cli) == config.explain(from_file) is not None
    assert config.coerce({"sizes": ["16", "4k"]})["sizes"] == [16, "4k"]  # '4k' left for the check to name


def test_a_shapes_positions_are_coerced_as_the_schema_types_them(cfg):
    """--config 'bf16={shapes: [[64, 64, 128]]}' reaches the workflow as strings; each position of the shape has
    its own schema (prefixItems): the valid shape is accepted, a K that is not a multiple of 8 refused by name."""
    cfg = {**copy.deepcopy(cfg), "bf16": {"shapes": [["64", "64", "128"]]}}
    assert config.coerce(cfg)["bf16"]["shapes"] == [[64, 64, 128]] and config.explain(cfg) is None
    bad = config.coerce({**copy.deepcopy(cfg), "bf16": {"shapes": [["64", "64", "12"]]}})
    msg = config.explain(bad)
    assert msg is not None and "bf16.shapes" in msg and "12" in msg


def test_narrowing_a_family_takes_its_memory_study_entries_with_it(cfg):
    """tiled: {TILE: [8]} leaves tiled_tile16 out; its memory-study entry goes with it, as under `only`, while a
    name that is no variant at all is still refused, naming the key the user wrote."""
    cfg["variants"]["tiled"] = {"TILE": [8]}
    assert "tiled_tile16" in cfg["memory_study_variants"]
    ids = {v.id for v in config.check(cfg)}
    assert "tiled_tile8" in ids and "tiled_tile16" not in ids
    assert "tiled_tile16" not in cfg["memory_study_variants"] and "naive" in cfg["memory_study_variants"]
    cfg["memory_study_variants"] = ["tilde"]
    with pytest.raises(config.ConfigError, match="memory_study_variants: tilde is not a variant name"):
        config.check(cfg)


def test_a_config_file_with_a_key_given_twice_or_a_yaml_error_is_one_line(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("x: &x {a: 1}\ny:\n  <<: *x\n  a: 2\n")  # a merge key overridden is YAML, not a repeat
    twice = tmp_path / "twice.yaml"
    twice.write_text("variants:\n  tiled: {TILE: [8, 16]}\n  naive: {}\n  tiled: {TILE: [16, 32]}\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("tune: [true\nsizes: [16]\n")
    tab = tmp_path / "tab.yaml"
    tab.write_text("timing:\n\tmin_samples: 5\n")
    assert config.read_files([good, tmp_path / "absent.yaml"]) is None  # a missing file is Snakemake's to name
    assert config.read_files([good, twice]).endswith("twice.yaml:4:3: tiled: key given twice (first at line 2)")
    line = config.read_files([broken])
    assert re.search(
        r"broken\.yaml:2:\d+: did not find expected ',' or '\]' \(while parsing a flow sequence at line 1\)", line
    )
    assert config.read_files([tab]).endswith("(a tab: YAML indents with spaces only)")
    for msg in (config.read_files([twice]), line):
        assert "\n" not in msg


def test_the_catalog_is_read_strictly_naming_its_file():
    from gpumm.setup import catalog, yamlfile

    with pytest.raises(
        yamlfile.YamlFileError, match=r"^kernels/catalog\.yaml:3:1: naive: key given twice \(first at line 1\)$"
    ):
        catalog.read_yaml("naive: {}\ntiled: {}\nnaive: {}\n", "kernels/catalog.yaml")
    with pytest.raises(yamlfile.YamlFileError, match=r"^c\.yaml:\d+:\d+: did not find"):
        catalog.read_yaml("a: [1\n", "c.yaml")


def test_a_manifest_tells_a_damaged_file(tmp_path):
    from gpumm.setup import manifest

    (tmp_path / "a.csv").write_text("x\n1\n2\n")
    (tmp_path / "b.csv").write_text("y\n3\n")
    manifest.write(tmp_path, [tmp_path / "a.csv", tmp_path / "b.csv"], writer="test")
    assert manifest.problems(tmp_path) == []
    manifest.require(tmp_path, "remedy")  # no error
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.csv").unlink()
    found = manifest.problems(tmp_path)
    assert len(found) == 2 and "a.csv: 2 lines, 4 bytes where 3 lines, 6 bytes were written" in found[0]
    assert "b.csv: missing" in found[1]
    with pytest.raises(manifest.Damaged, match=r"a\.csv: .* \(and 1 more\): remedy$"):
        manifest.require(tmp_path, "remedy")
    assert manifest.check(tmp_path / "a.csv", tmp_path / manifest.NAME).startswith(f"{tmp_path / 'a.csv'}: 2 lines")
    assert manifest.check(tmp_path / "c.csv", tmp_path / manifest.NAME) is None  # not recorded: nothing to say
    (tmp_path / manifest.NAME).write_text("{not json")
    assert "not a readable manifest" in manifest.problems(tmp_path)[0]
    assert manifest.problems(tmp_path / "nowhere") == []  # no manifest: nothing to check against


def test_a_steps_record_tells_its_damaged_outputs(tmp_path):
    import json

    from gpumm.setup import manifest

    (tmp_path / "samples.csv").write_text("variant,ms\nnaive,1.0\nnaive,1.1\n")
    meta = tmp_path / "meta.json"
    meta.write_text(
        json.dumps({"variant": "naive", "files": {"samples.csv": manifest.entry(tmp_path / "samples.csv")}})
    )
    assert manifest.recorded(meta) == []
    (tmp_path / "samples.csv").write_text("variant,ms\nnaive,1.0\n")
    assert manifest.recorded(meta)[0].endswith(
        "2 lines, 21 bytes where its step wrote 3 lines, 31 bytes (damaged or edited)"
    )
    (tmp_path / "samples.csv").unlink()
    assert "samples.csv: missing" in manifest.recorded(meta)[0]
    meta.write_text("{")
    assert "meta.json: cannot be read" in manifest.recorded(meta)[0]
    meta.write_text(json.dumps({"variant": "naive"}))  # an older run recorded nothing: nothing to say
    assert manifest.recorded(meta) == []


def test_tables_without_their_manifest_are_refused(tmp_path):
    """Issue 29: a folder whose manifest is gone (a writer that did not finish, or a removed record) is not read as
    if whole: the pages refuse it by name."""
    from gpumm.setup import manifest

    (tmp_path / "a.csv").write_text("x\n1\n")
    with pytest.raises(manifest.Damaged, match=r"manifest\.json: missing .*: remedy$"):
        manifest.require(tmp_path, "remedy")


@pytest.mark.parametrize("key, value", [("budget_s", ".nan"), ("timeout_s", ".inf"), ("warmup_s", "-.inf")])
def test_a_number_that_is_not_finite_is_refused_naming_its_key(key, value):
    """Issue 29: YAML's .nan and .inf pass every minimum and maximum of the schema; they are refused by name."""
    import yaml

    from gpumm.setup import config

    given = yaml.safe_load(f"timing: {{{key}: {value}}}")["timing"]
    line = config.explain_sections(timing=config.defaults("timing") | given)
    assert line is not None and line.startswith(f"config: timing.{key} = ") and "not a finite number" in line


def test_check_config_names_a_configfiles_yaml_error_by_line_and_column(tmp_path):
    """Issue 37: Snakemake reads --configfile before the workflow and names no line; check-config does."""
    import subprocess
    import sys

    def run(*files):
        return subprocess.run(
            [sys.executable, "-m", "gpumm", "check-config", *map(str, files)], capture_output=True, text=True
        )

    bad = tmp_path / "bad.yaml"
    bad.write_text("tune: [true\nsizes: [16]\n")
    out = run(bad)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == (
        f"gpumm check-config: config file {bad}:2:6: did not find expected ',' or ']' (while parsing a flow "
        "sequence at line 1)"
    )
    bad.write_text("sizes: [0]\n")
    out = run(bad)
    assert out.returncode == 2 and "config: sizes[0] = 0 is not allowed" in out.stderr
    for missing in (tmp_path / "none.yaml", tmp_path):  # no file; a folder
        out = run(missing)
        assert out.returncode == 2 and "Traceback" not in out.stderr and f"config file {missing}" in out.stderr
    good = tmp_path / "good.yaml"
    good.write_text("variants: {tiled: {TILE: [8]}}\n")
    out = run(good)
    assert out.returncode == 0 and out.stdout.startswith(f"config.yaml + {good}: a valid configuration (")


def test_a_replay_shows_the_tuning_candidates_its_archive_holds(cfg, tmp_path):
    cfg["tune"] = False
    variants = config.check(copy.deepcopy(cfg))
    first = [v.id for v in variants if v.family == "interior"]
    assert first == ["interior_b256x128k8"]
    (tmp_path / "raw" / "interior_b256x128k8t4x8").mkdir(parents=True)
    (tmp_path / "raw" / "interior_b256x128k8t4x8" / "samples.csv").write_text("variant\n")
    (tmp_path / "raw" / "interior_b256x128k8t8x8").mkdir(parents=True)  # no samples: not measured there
    ids = [v.id for v in config.with_archived_candidates(variants, cfg, tmp_path)]
    assert [i for i in ids if i.startswith("interior")] == ["interior_b256x128k8", "interior_b256x128k8t4x8"]
    assert ids.index("interior_b256x128k8t4x8") == ids.index("interior_b256x128k8") + 1  # beside its family
    assert set(ids) - {"interior_b256x128k8t4x8"} == {v.id for v in variants}
    cfg["tune"] = True  # every candidate is in the run already
    assert config.with_archived_candidates(variants, cfg, tmp_path) == variants

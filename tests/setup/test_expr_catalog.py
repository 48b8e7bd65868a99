import pytest

from gpumm.setup import catalog, expr


def test_expressions_evaluate_with_ceiling_division():
    assert expr.evaluate("cdiv(N, TILE)", {"N": 4096, "TILE": 12}) == 342
    assert expr.evaluate("cdiv(N, 16)", {"N": 16}) == 1
    assert expr.evaluate("2*M*N*K", {"M": 3, "N": 5, "K": 7}) == 210


@pytest.mark.parametrize("text", ["__import__('os')", "M.real", "[M]", "cdiv(M)", "open('x')", "M if N else K"])
def test_expressions_refuse_anything_but_arithmetic(text):
    with pytest.raises(expr.ExpressionError):
        expr.evaluate(text, {"M": 1, "N": 2, "K": 3})


def test_unknown_name_is_an_error():
    with pytest.raises(expr.ExpressionError, match="TILE"):
        expr.evaluate("cdiv(N, TILE)", {"N": 1})


def test_catalog_loads_and_every_cuda_family_has_its_file():
    families = catalog.load()
    assert {"naive", "tiled", "cublas"} <= set(families)
    for v in catalog.expand({name: {} for name in families}, families):
        if v.is_cuda:
            assert v.source.is_file()
            assert v.block_dims()[0] * v.block_dims()[1] <= 1024


def test_expand_names_define_sets_and_covers_edges():
    vs = catalog.expand({"tiled": {"TILE": [12, 4]}, "naive": {}})
    assert [v.id for v in vs] == ["tiled_tile4", "tiled_tile12", "naive"]
    t12 = vs[1]
    assert t12.defines == (("TILE", 12),)
    assert t12.block_dims() == (12, 12, 1)
    assert t12.grid_dims(M=4096, N=4096, K=4096) == (342, 342, 1)  # 342*12 = 4104 >= 4096: edges covered
    assert t12.work(2, 3, 4) == (48.0, 4.0 * (8 + 12 + 6))


@pytest.mark.parametrize(
    "selection, message",
    [
        ({"fastest": {}}, "variants.fastest: unknown variant; allowed: "),
        ({"tiled": {"TILE": [64]}}, "variants.tiled.TILE: 64 is not allowed; allowed: integers 4 to 32"),
        ({"tiled": {"TILE": [2]}}, "variants.tiled.TILE: 2 is not allowed"),
        ({"tiled": {"BLOCK": [8]}}, "variants.tiled.BLOCK: unknown param; allowed: TILE"),
        ({"naive": {"TILE": [8]}}, "unknown param; allowed: none"),
    ],
)
def test_bad_selections_name_the_key_and_what_is_allowed(selection, message):
    with pytest.raises(catalog.CatalogError) as err:
        catalog.expand(selection)
    assert message in str(err.value)


def test_block_larger_than_1024_threads_is_refused(tmp_path):
    families = catalog.load()
    families["tiled"]["params"]["TILE"]["max"] = 64
    with pytest.raises(catalog.CatalogError, match="4096 threads per block; at most 1024"):
        catalog.expand({"tiled": {"TILE": [64]}}, families)


def test_from_id_round_trips():
    for v in catalog.expand({"naive": {}, "tiled": {"TILE": [4, 12, 32]}, "cublas": {}}):
        assert catalog.from_id(v.id) == v
    with pytest.raises(catalog.CatalogError):
        catalog.from_id("tiled_tile99")


def test_digest_follows_source_and_defines(tmp_path, monkeypatch):
    a, b = catalog.expand({"tiled": {"TILE": [8, 16]}})
    assert a.digest() != b.digest()
    assert a.digest() == catalog.expand({"tiled": {"TILE": [8]}})[0].digest()
    before = a.digest()
    import shutil

    copy = tmp_path / "kernels"
    shutil.copytree(catalog.paths.KERNELS, copy)
    (copy / "matmul" / "tiled.cu").write_text(a.source.read_text() + "\n// edited\n")
    monkeypatch.setattr(catalog.paths, "KERNELS", copy)
    assert a.digest() == before  # a comment changes nothing the build makes
    (copy / "matmul" / "tiled.cu").write_text(a.source.read_text() + "\nstatic const int edited = 1;\n")
    assert a.digest() != before  # a change of code does


def test_the_steps_of_a_checked_catalog_do_not_check_it_again(tmp_path, monkeypatch):
    """Snakemake checks the catalog once; the ~100 steps it starts inherit the fingerprint of that text and
    skip the schema check (and its import), but any other text is checked whatever the fingerprint says."""
    import os
    import subprocess
    import sys

    from gpumm.setup import paths

    catalog.load()
    fingerprint = os.environ[catalog.CHECKED_ENV]
    code = "import sys; from gpumm.setup import catalog; catalog.load(); print('jsonschema' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != catalog.CHECKED_ENV}
    for inherited, imported in ((fingerprint, "False"), ("0" * 32, "True"), (None, "True")):
        step_env = env if inherited is None else {**env, catalog.CHECKED_ENV: inherited}
        out = subprocess.run([sys.executable, "-c", code], env=step_env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == imported, (inherited, out.stdout, out.stderr)

    bad = tmp_path / "catalog.yaml"
    bad.write_text(paths.CATALOG.read_text().replace("    kind: cuda\n", "    kind: quantum\n", 1))
    monkeypatch.setenv(catalog.CHECKED_ENV, fingerprint)
    with pytest.raises(catalog.CatalogError, match="quantum"):
        catalog.load(bad)


def test_a_tuning_search_expands_into_one_variant_per_candidate():
    fam = catalog.load()["interior"]
    variants = catalog.expand({"interior": {}})
    assert [v.id for v in variants] == [f"interior_{k}" for k in fam["tune"]]
    for v in variants:
        assert catalog.from_id(v.id) == v  # each candidate round-trips through its name
        cand = fam["tune"][v.id.removeprefix("interior_")]
        assert dict(v.defines) == {**fam["defines"], **cand}  # the candidate's defines replace the family's
    only_first = catalog.expand({"interior": {}}, tune=False)  # the config's tune: false
    assert [v.id for v in only_first] == [variants[0].id]
    with pytest.raises(catalog.CatalogError, match="unknown variant"):
        catalog.from_id("interior")  # the family's name is not a build


def test_a_grid_may_name_the_sm_count_and_nothing_else_may():
    """A persistent kernel's grid is the GPU's SM count (SMS, given at launch); flops or a block naming it is an
    error, and so is a launch that does not give it."""
    v = catalog.from_id("streamk")
    assert v.grid == ("SMS", "1")
    assert v.grid_dims(4096, 4096, 4096, sms=132) == (132, 1, 1)
    with pytest.raises(ValueError, match="SM count"):
        v.grid_dims(4096, 4096, 4096)
    assert catalog.from_id("naive").grid_dims(64, 64, 64) == catalog.from_id("naive").grid_dims(64, 64, 64, sms=132)
    # the launcher asks the GPU for its SM count only for such a grid
    assert v.grid_names_sms and not catalog.from_id("interior_b256x128k8").grid_names_sms
    families = catalog.load()
    families["streamk"]["flops"] = "2*M*N*K*SMS"
    with pytest.raises(catalog.CatalogError, match=r"streamk.flops: unknown names \['SMS'\]"):
        catalog._check_family("streamk", families["streamk"], families)


def test_a_tuning_search_is_checked():
    families = catalog.load()
    families["interior"]["tune"]["bad"] = {"NOPE": 1}
    with pytest.raises(catalog.CatalogError, match=r"interior.tune.bad: \['NOPE'\] are not among"):
        catalog._check_family("interior", families["interior"], families)
    families = catalog.load()
    families["interior"]["params"] = {"TILE": {"default": [16], "min": 1, "max": 32}}
    with pytest.raises(catalog.CatalogError, match="`tune` or `params`, not both"):
        catalog._check_family("interior", families["interior"], families)


def test_every_race_rung_shows_the_lines_of_its_idea(tmp_path):
    """Issue 28: kernels/excerpts.yaml picks, for every hand-written family of the ladder (the sources' rungs and
    the race's), lines of its kernel file; each piece's start matches one line only, and a start that matches
    several is refused by name."""
    families = catalog.load()
    ladder = [n for n, f in families.items() if f.get("kind") == "cuda" and f.get("op", "matmul") == "matmul"]
    assert len(ladder) >= 19
    for name in ladder:
        text, where = catalog.excerpt(name, families)
        # lines of its kernel file, or of a header of it (a rung's pieces that the rungs above reuse)
        header = where.split(" line")[0] if not where.startswith("line") else families[name]["file"]
        assert text.strip() and header in (families[name]["file"], *catalog.included(families[name]["file"])), name
        first = (catalog.paths.KERNELS / header).read_text().splitlines()
        assert text.splitlines()[0].strip() in [x.strip() for x in first], name
    assert catalog.excerpt("cublas", families) == ("", "")
    bad = tmp_path / "excerpts.yaml"
    bad.write_text("naive: {start: 'int', lines: 2}\n")
    with pytest.raises(ValueError, match=r"naive: 'int' matches \d+ lines of kernels/matmul/naive.cu"):
        catalog.excerpt("naive", families, path=bad)


def test_the_headers_a_kernel_includes_are_found_in_its_source(tmp_path, monkeypatch):
    """Issue 38: what a build reads (and its digest covers) is the kernel file and every header it includes,
    through other headers too, found in the source: no list in the catalog to forget a header in."""
    assert catalog.included("matmul/streamk.cu") == (
        "need.cuh",
        "matmul/interior.cuh",
        "matmul/swizzled.cuh",
        "matmul/double_buffer.cuh",
        "matmul/warptile.cuh",
        "matmul/tile_io.cuh",
    )
    pingpong = catalog.from_id("bf16_pingpong")
    assert set(pingpong.includes) == {f"matmul_bf16/{h}" for h in ("geometry.cuh", "pipeline.cuh", "hopper.cuh")} | {
        "need.cuh",
        "matmul_bf16/wgmma_ops.cuh",
    }
    assert catalog.included("matmul/naive.cu") == ()
    import shutil

    copy = tmp_path / "kernels"
    shutil.copytree(catalog.paths.KERNELS, copy)
    monkeypatch.setattr(catalog.paths, "KERNELS", copy)
    (copy / "matmul_bf16" / "pipeline.cuh").write_text('#include "ring.cuh"\n')
    with pytest.raises(catalog.CatalogError, match="kernels/matmul_bf16/pipeline.cuh includes 'ring.cuh'"):
        catalog.included("matmul_bf16/pingpong.cu")

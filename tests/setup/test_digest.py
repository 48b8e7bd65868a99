"""Issue 38: a variant's digest is what builds it in substance: a comment or a reflowed line leaves every
archive current; a change of code marks exactly the variants built from it; a refactor whose SASS is the
archived one is certified again without measuring (python -m gpumm certify)."""

import re
import shutil

import pytest

from gpumm.archive import certify, reference
from gpumm.setup import catalog, digest, paths


def _all():
    return catalog.expand({name: {} for name in catalog.load()})


@pytest.fixture()
def kernels(tmp_path, monkeypatch):
    """A copy of kernels/ the catalog reads instead (its files may be edited)."""
    dest = tmp_path / "kernels"
    shutil.copytree(paths.KERNELS, dest)
    monkeypatch.setattr(paths, "KERNELS", dest)
    return dest


def test_tokens_drop_comments_and_blank_space_and_keep_directives_apart():
    a = 'int x = 1; // one\n/* a\n block */ float y=2.0f;\n#define N 4\nchar *s = "a // b";\n'
    b = 'int   x =\n    1;\nfloat y = 2.0f ;  /* reflowed */\n#define N 4\nchar *s = "a // b";'
    assert digest.tokens(a) == digest.tokens(b)
    assert "\n" in digest.tokens(a) and '"a // b"' in digest.tokens(a)  # a string is not a comment
    assert digest.tokens("#define N 4\nint x;") != digest.tokens("#define N 4 int x;")  # a directive ends its line
    assert digest.tokens("int x = 1;") != digest.tokens("int x = 2;")


def test_a_comment_only_edit_of_every_kernel_file_leaves_every_digest(kernels):
    before = {v.id: v.digest() for v in _all()}
    for f in sorted(kernels.rglob("*.cu")) + sorted(kernels.rglob("*.cuh")) + sorted(kernels.rglob("*.c")):
        text = f.read_text()
        f.write_text("// a note added at the top\n/* and a block\n   comment */\n" + text.replace(";\n", ";  // \n", 3))
    assert {v.id: v.digest() for v in _all()} == before


def test_a_change_of_code_marks_exactly_the_variants_built_from_it(kernels):
    before = {v.id: v.digest() for v in _all()}
    header = "matmul/tile_io.cuh"
    f = kernels / header
    f.write_text(f.read_text() + "\nstatic const int gpumm_test_changed = 1;\n")
    users = {v.id for v in _all() if v.file == header or header in v.includes}
    assert users, "no variant includes " + header
    changed = {vid for vid, d in {v.id: v.digest() for v in _all()}.items() if d != before[vid]}
    assert changed == users


def test_every_archive_certifies_the_variants_it_holds_for_this_code(known_stale):
    for archive in reference.available():
        certified, timed = reference.certified(archive), reference.step_digests(archive / "raw")
        held = {p.parent.name for p in (archive / "raw").glob("*/meta.json")} | set(timed)
        ids = {v.id for v in _all()} & held
        assert {"bf16_stream_mma_w8", "bf16_stream_rows2_max_m1"} <= ids  # the model steps' kernels too
        stale = {vid for vid in ids if certified.get(vid, timed.get(vid)) != catalog.from_id(vid).digest()}
        assert ids and stale == known_stale.get(archive.name, set()), (archive.name, sorted(stale))


def _archive_copy(tmp_path, name: str):
    """A copy of archive ``name`` that certify may write, where nvcc can build (else the test skips, saying
    why)."""
    from gpumm.build import nvcc

    try:
        nvcc.nvcc()
    except nvcc.BuildError as exc:
        pytest.skip(str(exc))
    archive = tmp_path / name
    shutil.copytree(paths.REFERENCE / name, archive)
    return archive


def test_a_refactor_with_the_same_sass_is_certified_and_a_real_change_stays_stale(kernels, tmp_path):
    archive = _archive_copy(tmp_path, "h100")
    naive = kernels / "matmul" / "naive.cu"
    text = naive.read_text()
    renamed = text.replace("float acc", "float sum_ab").replace("acc +=", "sum_ab +=").replace("= acc", "= sum_ab")
    assert renamed != text, "naive.cu has no accumulator named acc"
    naive.write_text(renamed)
    v = catalog.from_id("naive")
    assert reference.certified(archive)["naive"] != v.digest()  # the tokens changed: stale until certified
    assert certify.certify(archive, [v]) == ["naive: certified (the same SASS as the archived build)"]
    assert reference.certified(archive)["naive"] == v.digest()
    assert reference.check(archive) is None  # sealed again with its DIGESTS.json
    naive.write_text(renamed.replace("sum_ab +=", "sum_ab -="))
    v = catalog.from_id("naive")
    assert certify.certify(archive, [v]) == [
        "naive: stale (its SASS differs from the archived build's: measure it again)"
    ]
    blas = catalog.from_id("cublas")
    assert certify.certify(archive, [blas]) == []  # current: nothing to do
    # a kernel the variant does not launch (a rung below, dropped or added) is not compared: only what it runs
    naive.write_text(renamed + '\nextern "C" __global__ void unused_here(float *x) { x[threadIdx.x] = 1.0f; }\n')
    v = catalog.from_id("naive")
    assert certify.certify(archive, [v]) == ["naive: certified (the same SASS as the archived build)"]


def test_a_kernel_only_the_model_steps_timed_is_certified_by_its_sass_too(kernels, tmp_path):
    """The weight streams have no raw/<variant>/ folder: the model steps record their digests in their own
    meta.json; a refactor of their file is certified against the archived build's SASS as any variant's."""
    archive = _archive_copy(tmp_path, "h200")
    vid = "bf16_stream_mma_w8"
    assert not (archive / "raw" / vid).exists() and vid in reference.step_digests(archive / "raw")
    f = kernels / "matmul_bf16" / "stream_mma.cu"
    text = f.read_text()
    renamed = re.sub(r"\bwb\b", "w_hi", re.sub(r"\bwa\b", "w_lo", text))  # the weight registers renamed
    assert renamed != text
    f.write_text(renamed)
    v = catalog.from_id(vid)
    assert v.digest() != reference.step_digests(archive / "raw")[vid]  # the tokens changed: stale until certified
    assert certify.certify(archive, [v]) == [f"{vid}: certified (the same SASS as the archived build)"]
    assert reference.certified(archive)[vid] == v.digest()
    assert reference.check(archive) is None
    f.write_text(renamed.replace("k += STRIDE * CHUNKS", "k += STRIDE * CHUNKS + 0 * K + 8"))  # a real change
    v = catalog.from_id(vid)
    assert certify.certify(archive, [v]) == [
        f"{vid}: stale (its SASS differs from the archived build's: measure it again)"
    ]


def test_a_launch_geometry_that_changes_with_the_same_sass_stays_stale(kernels, tmp_path):
    """The launcher reads a BF16 kernel's bf16_geom (its tensor maps' boxes and L2 fetch): a change there leaves
    the SASS as it was and the launch not, so certify compares the constant too (from the PTX); a member the
    archived build's declaration lacked reads as 0 there, so adding one unset is certified."""
    archive = _archive_copy(tmp_path, "h100")
    f = kernels / "matmul_bf16" / "pingpong.cu"
    text = f.read_text()
    v = catalog.from_id("bf16_pingpong")
    assert certify.certify(archive, [v]) in ([], ["bf16_pingpong: certified (the same SASS as the archived build)"])
    fetched = re.sub(r"(BF16_GEOM\(.*?)\);", r"\1, .l2_fetch = 64);", text, count=1, flags=re.S)
    assert fetched != text
    f.write_text(fetched)
    v = catalog.from_id("bf16_pingpong")
    assert certify.certify(archive, [v]) == [
        "bf16_pingpong: stale (its launch geometry, bf16_geom, differs from the archived build's)"
    ]
    assert certify.ptx_geometry(".const .align 4 .b8 bf16_geom[12] = {7, 0, 0, 0, 128};") == (7, 128)
    assert certify.ptx_geometry(".const .align 4 .b8 bf16_geom[8] = {7};") == (7,)
    assert certify.ptx_geometry("no constant here") is None

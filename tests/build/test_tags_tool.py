"""tools/model/tags.py, the @TAG builds of the decode explorations: its tags read, its patch applied and taken
back (in a repository of the test's own, not this tree), a tag's defines reaching nvcc, its candidates file."""

import importlib.util
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("tags", ROOT / "tools" / "model" / "tags.py")
tags = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tags)


def test_a_tag_is_a_name_and_its_defines():
    assert tags.parse_tag("s500:PDL_SLEEP0=500,PDL_L2=4") == ("s500", {"PDL_SLEEP0": "500", "PDL_L2": "4"})
    for bad in ("s500", "s500:", ":A=1", "a@b:A=1", "s:A", "s:1A=2", "s:A=", "a,b:X=1", "a]:X=1", "s:X=a b"):
        with pytest.raises(tags.TagError):
            tags.parse_tag(bad)


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    (r / "k.cu").write_text("int a;\n")
    for cmd in (["init", "-q"], ["add", "k.cu"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "k"]):
        subprocess.run(["git", *cmd], cwd=r, check=True)
    (r / "k.cu").write_text("int a;\nint b;\n")
    (tmp_path / "p.patch").write_text(subprocess.run(["git", "diff"], cwd=r, capture_output=True, text=True).stdout)
    subprocess.run(["git", "checkout", "-q", "k.cu"], cwd=r, check=True)
    return r


def test_the_patch_is_taken_back_even_when_the_build_fails(repo):
    patch = repo.parent / "p.patch"
    with tags.applied(patch, root=repo):
        assert "int b;" in (repo / "k.cu").read_text()
    assert (repo / "k.cu").read_text() == "int a;\n"
    with pytest.raises(RuntimeError), tags.applied(patch, root=repo):
        raise RuntimeError("nvcc failed")
    assert (repo / "k.cu").read_text() == "int a;\n"
    with pytest.raises(SystemExit), tags.applied(patch, root=repo):  # killed (timeout's TERM) mid-build
        os.kill(os.getpid(), signal.SIGTERM)
    assert (repo / "k.cu").read_text() == "int a;\n"
    assert signal.getsignal(signal.SIGTERM) is not None and "stop" not in repr(signal.getsignal(signal.SIGTERM))
    (repo / "k.cu").write_text("int c;\n")  # the patch no longer applies: said, and nothing touched
    with pytest.raises(tags.TagError, match="does not apply"), tags.applied(patch, root=repo):
        pass
    assert (repo / "k.cu").read_text() == "int c;\n"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_a_tags_defines_reach_the_build(tmp_path):
    base = "bf16_stream_tma_pdl_k4s5e"
    names = tags.build(tmp_path, [base], [("l2", {"PDL_L2": "2"})], None)
    assert names == [base, f"{base}@l2"]
    plain, tagged = ((tmp_path / n / "kernel.sass").read_text() for n in names)
    # two stages asked of the L2 before the wait: two more groups of prefetches than the catalog's build
    assert tagged.count("UTMAPF") > plain.count("UTMAPF")
    assert not list(tmp_path.rglob("*.tmp"))
    cands = yaml.safe_load(tags.candidates(names, [1, 16], "next"))
    assert cands[16] == [[base, "race", {}], [f"{base}@l2", "next", {}]]


def test_an_unknown_base_is_refused_by_name(tmp_path, capsys):
    assert tags.main([str(tmp_path), "bf16_no_such_kernel", "a:X=1"]) == 2
    assert "bf16_no_such_kernel" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_a_base_without_an_arch_builds_for_the_one_given_and_a_failed_tag_leaves_nothing(tmp_path, capsys):
    base = "bf16_stream_max_m1"  # its catalog entry names no arch
    assert tags.main([str(tmp_path), base, "w4:WARPS=4", "--arch", "sm_90"]) == 0
    assert (tmp_path / f"{base}@w4" / "kernel.cubin").stat().st_size > 0
    assert tags.main([str(tmp_path), base, "bad:ROWS=no_such_value", "--arch", "sm_90"]) == 2
    assert "nvcc failed" in capsys.readouterr().err
    assert not (tmp_path / f"{base}@bad").exists()


def test_every_patch_a_checks_calls_script_builds_with_applies_to_this_tree():
    """A check's calls*.sh rebuilds its @TAG builds from this tree with its patch: an edit of kernels/ that the patch
    no longer applies to (a comment in its context will do) would leave the check with no way to rebuild them."""
    scripts = sorted((ROOT / "data" / "checks").glob("*/calls*.sh"))
    patches = {
        (s, s.parent / name) for s in scripts for name in re.findall(r"--patch \$D/([\w.-]+\.patch)", s.read_text())
    }
    assert len(patches) >= 10, "the checks' calls scripts name fewer patches than they did"
    for script, patch in sorted(patches):
        try:
            tags.check_patch(patch)  # as tags.py checks it before it builds
        except tags.TagError as exc:
            pytest.fail(f"{script.relative_to(ROOT)}: {exc}"[:500])

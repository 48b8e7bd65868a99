"""The project's own checks: environment files agree, every kernel compiles, the workflow lints."""

import re
import shutil
import subprocess
import sys
import tomllib

import pytest
import yaml

from gpumm.build import loops
from gpumm.build import nvcc as build
from gpumm.setup import catalog, paths

ROOT = paths.ROOT


# conda-forge names of packages PyPI names otherwise
CONDA_TO_PYPI = {"cuda-cuobjdump": "nvidia-cuda-cuobjdump", "cuda-nvdisasm": "nvidia-cuda-nvdisasm"}


def _name(req: str) -> str:
    name = re.split(r"[<>=!~ \[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")
    return CONDA_TO_PYPI.get(name, name)


def test_environment_yml_and_pyproject_name_the_same_packages():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_side = {_name(r) for r in py["dependencies"]} | {_name(r) for r in py["optional-dependencies"]["test"]}
    cupy_extras = {_name(r) for k, v in py["optional-dependencies"].items() if k.startswith("cuda") for r in v}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_side = {_name(d) for d in env["dependencies"] if isinstance(d, str)} - {"python", "pip"}
    assert {"cupy", "nvidia-ml-py"} <= conda_side and cupy_extras == {"cupy-cuda12x", "cupy-cuda13x", "nvidia-ml-py"}
    assert conda_side - {"cupy", "nvidia-ml-py"} == pip_side
    floors = {_name(r): r for r in py["dependencies"]}
    for d in env["dependencies"]:
        if isinstance(d, str) and _name(d) in floors:
            assert d.replace(" ", "") == floors[_name(d)].replace(" ", ""), f"version floors differ for {d}"


def test_rule_environment_matches_environment_yml():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    rules = yaml.safe_load((ROOT / "workflow" / "envs" / "gpumm.yaml").read_text())["dependencies"]
    assert [d for d in env if isinstance(d, str) and d != "pip"] == rules


ALL = catalog.expand({n: {p: s["default"] for p, s in f.get("params", {}).items()} for n, f in catalog.load().items()})


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH: cannot compile the kernels here")
@pytest.mark.parametrize("vid", [v.id for v in ALL if v.is_cuda])
def test_every_catalog_variant_compiles(vid, tmp_path):
    v = catalog.from_id(vid)
    report = build.build(v, "sm_90", tmp_path)
    assert (tmp_path / "kernel.cubin").stat().st_size > 0 and (tmp_path / "kernel.ptx").is_file()
    # caps may spill: their point (-maxrregcount, or MINB blocks per SM in __launch_bounds__, as splitk_b32x48c2)
    capped = any(f.startswith("-maxrregcount") for f in v.nvcc_flags) or int(dict(v.defines).get("MINB", 1)) > 1
    assert report["registers"] > 0 and (report["spill_store_bytes"] == 0 or capped)
    if loops.cuobjdump() is None:
        pytest.fail("cuobjdump is not installed: install the test extra (pip install -e '.[test]')")
    # held against the catalog (issue 38): the cubin holds the kernels the variant launches, and no other (a rung
    # below, included and renamed, would be built, archived and never run)
    functions = {line.split("Function :")[1].strip() for line in (tmp_path / "kernel.sass").read_text().splitlines()
                 if "Function :" in line}  # fmt: skip
    assert functions == {v.entry} | ({v.prepare[0]} if v.prepare else set()), functions
    if v.op != "matmul":  # a transpose or a copy has no multiply-add loop to count
        return
    ptx, sass = (tmp_path / "kernel.ptx").read_text(), (tmp_path / "kernel.sass").read_text()
    loop = loops.analyse(ptx, sass, v.entry)
    assert loop["status"] == "ok" and loop["sass_fma"] >= 1, loop
    # the race to cuBLAS is FP32 FFMA only (issue 11): no matrix-multiply build may use a tensor core
    assert f".entry {v.entry}(" in ptx or f".entry {v.entry} (" in ptx
    assert "fma.rn.f32" in ptx
    found = loops.tensor_core_ops(ptx, sass)
    assert found["ptx_tensor_core"] == 0 and found["sass_tensor_core"] == 0 and found["sass_ffma"] >= 1, found


def test_register_caps_bite_where_the_page_says():
    """tiled_cap: sm_90's floor of 24 registers swallows caps of 16 and 20; unrolled_cap trades spills for
    occupancy (fewer registers, more spill bytes)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    import tempfile
    from pathlib import Path

    def regs(vid):
        with tempfile.TemporaryDirectory() as d:
            return build.build(catalog.from_id(vid), "sm_90", Path(d))

    low = regs("tiled_cap_maxrreg16")
    assert low["registers"] == 24 and low["register_cap"] == 24
    caps = [regs(f"unrolled_cap_maxrreg{c}") for c in (32, 64)]
    assert caps[0]["registers"] <= 32 < caps[1]["registers"] <= 64
    assert caps[0]["spill_store_bytes"] > caps[1]["spill_store_bytes"]


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler here")
def test_the_cpu_baseline_builds_and_multiplies(tmp_path):
    import numpy as np

    from gpumm.run import measure
    from gpumm.run.launch import Launcher

    v = catalog.from_id("cpu_serial")
    build.build_host(v, tmp_path)
    A, B = measure.inputs(1, 37, 29, 53)
    C = np.full((37, 29), np.nan, dtype=np.float32)
    Launcher(v, tmp_path / "libkernel.so").bind(A, B, C)()
    assert np.allclose(C, A.astype(np.float64) @ B, atol=1e-5)


def _tool(name):
    exe = shutil.which(name, path=str(ROOT / ".venv" / "bin")) or shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} is not installed: install the test extra (pip install -e '.[test]')")
    return exe


def test_snakemake_lint_has_no_findings():
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint", "--config", "mode=replay"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "Lints for" not in text, text


def test_snakefmt_is_clean():
    files = ["Snakefile", *map(str, sorted((ROOT / "workflow" / "rules").glob("*.smk")))]
    out = subprocess.run([_tool("snakefmt"), "--check", *files], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_is_clean():
    out = subprocess.run(
        [_tool("ruff"), "check", "src", "tests", "notebooks"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_notebooks_are_committed_without_outputs():
    import json

    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(nb.read_text())["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(not c["outputs"] and c["execution_count"] is None for c in code), nb.name
        assert any("parameters" in c.get("metadata", {}).get("tags", []) for c in code), nb.name
        # nbformat 4.5 wants an id on every cell; a cell without one makes every execution warn
        assert all(c.get("id") for c in cells), nb.name


def _every_build():
    """Every variant the catalog can build: each family's default, each tuning candidate, every allowed value."""
    families = catalog.load()
    found = []
    for name, fam in families.items():
        found += catalog.expand({name: {}}, families)
        found += [catalog.expand({name: {"_candidate": key}}, families)[0] for key in fam.get("tune") or {}]
        params = fam.get("params", {})
        if params and "tune" not in fam:
            every = {p: s["allowed"] if isinstance(s.get("allowed"), list) else s["default"] for p, s in params.items()}
            found += catalog.expand({name: every}, families)
    return found


def test_no_kernel_file_keeps_a_default_for_a_constant_the_catalog_sets():
    """Issue 38: one source for each constant. A define the catalog sets for every build of a file has no default
    in the file (`#ifndef X` / `#define X v`), only an #error naming it."""
    import re

    builds = _every_build()
    default = re.compile(r"#ifndef (\w+)\n#define \1\b")
    twice = []
    for f in sorted(paths.KERNELS.rglob("*.cu*")):
        rel = f.relative_to(paths.KERNELS).as_posix()
        users = [v for v in builds if rel == v.file or rel in v.includes]
        for m in default.finditer(f.read_text()):
            if users and all(m.group(1) in dict(v.defines) for v in users):
                twice.append(f"{rel}: {m.group(1)}")
    assert not twice, twice


@pytest.mark.parametrize(
    "vid, name", [("blocktile_2d", "TN"), ("tiled_tile16", "TILE"), ("bf16_pingpong", "STAGES"), ("bf16_cluster", "MC")]
)
def test_a_kernel_built_without_a_define_it_needs_names_it(tmp_path, vid, name):
    import dataclasses

    from gpumm.build import nvcc

    try:
        nvcc.nvcc()
    except nvcc.BuildError as exc:
        pytest.skip(str(exc))
    v = catalog.from_id(vid)
    missing = dataclasses.replace(v, defines=tuple(d for d in v.defines if d[0] != name))
    with pytest.raises(nvcc.BuildError) as exc:
        nvcc.build(missing, "sm_90a" if v.arch else "sm_90", tmp_path / "build")
    first = str(exc.value).splitlines()[0]
    assert "error" in first and f"{name} is not defined: kernels/catalog.yaml sets it" in first, first

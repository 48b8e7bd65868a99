"""The package reads like the pipeline (issue 17): one folder per stage, each importing nothing from a later one;
the top level holds the entry points; no module grows past about 450 lines."""

import ast
from pathlib import Path

from gpumm.setup import paths

PKG = paths.ROOT / "src" / "gpumm"
ORDER = ["setup", "build", "run", "profile", "archive", "analyse", "report"]


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpumm"):
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "gpumm"]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("gpumm")]
    return out


def test_no_stage_imports_a_later_one():
    late = []
    for f in sorted(PKG.rglob("*.py")):
        parts = f.relative_to(PKG).parts
        if len(parts) < 2:
            continue
        for m in _imports(f):
            stage = m.split(".")[1] if m.count(".") else ""
            if stage in ORDER and ORDER.index(stage) > ORDER.index(parts[0]):
                late.append(f"{f.relative_to(PKG)} imports {m}")
    assert not late, late


def test_small_modules_and_a_thin_top_level():
    long = {f.relative_to(PKG).as_posix(): n for f in PKG.rglob("*.py") if (n := len(f.read_text().splitlines())) > 450}
    assert not long, long
    assert sorted(p.name for p in PKG.glob("*.py")) == ["__init__.py", "__main__.py", "cli.py"]
    assert len((PKG / "cli.py").read_text().splitlines()) < 150


def test_compare_reports_sees_a_changed_table_or_page(tmp_path):
    """tools/compare_reports.py, the check that a refactor left the report as it was, can fail."""
    import subprocess
    import sys

    for side in ("a", "b"):
        (tmp_path / side / "tables").mkdir(parents=True)
        (tmp_path / side / "report").mkdir()
        (tmp_path / side / "tables" / "t.csv").write_text("x\n1\n")
        (tmp_path / side / "report" / "p.html").write_text(
            f'<div id="cell-id={side}1"> see src/gpumm/run/{side}.py</div>'
        )
    tool = [sys.executable, str(paths.ROOT / "tools" / "compare_reports.py"), str(tmp_path / "a"), str(tmp_path / "b")]
    assert subprocess.run(tool, capture_output=True).returncode == 1  # the page cites another file
    assert subprocess.run([*tool, "--ignore-paths"], capture_output=True).returncode == 0
    (tmp_path / "b" / "tables" / "t.csv").write_text("x\n2\n")
    r = subprocess.run([*tool, "--ignore-paths"], capture_output=True, text=True)
    assert r.returncode == 1 and "tables/t.csv: differs" in r.stdout

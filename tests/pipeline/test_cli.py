"""The command line as a user meets it: help, one-line errors, README examples that work as written,
a run killed half way that the README's command resumes, README facts kept true."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from gpumm.cli import parser
from gpumm.setup import paths

README = (paths.ROOT / "README.md").read_text()


def test_every_option_has_help_and_the_top_help_has_no_markup():
    sub = next(a for a in parser()._actions if a.dest == "cmd")
    missing = [
        f"{name} {a.option_strings[0]}"
        for name, s in sub.choices.items()
        for a in s._actions
        if a.option_strings and a.option_strings[0] != "-h" and not a.help
    ]
    assert not missing, missing
    text = parser().format_help()
    assert "``" not in text and ":func:" not in text


def test_a_step_that_needs_cupy_says_so_in_one_line(tmp_path):
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed here: the message is for machines without it")
    except ImportError:
        pass
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpumm",
            "measure",
            "--variant",
            "naive",
            "--shapes",
            "16x16x16",
            "--out-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=paths.ROOT,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "CuPy is not installed" in lines[0] and "cuda13" in lines[0]


def snakemake(tree, *args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", *args],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_readme_config_examples_work_as_written(tree):
    """The README's command-line overrides: lists, a subset with `only`, and the message of a bad value."""
    for example in ("--config sizes=[16,32]", "--config only=[naive,cublas]", "--config sizes=[0]"):
        assert example in README, example
    out = snakemake(tree, "-n", "--config", "mode=replay", "sizes=[16,32]", "only=[naive,cublas]")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-2000:]
    assert "2 variants" in text
    bad = snakemake(tree, "-n", "--config", "mode=replay", "sizes=[0]")
    message = "config: sizes[0] = 0 is not allowed: 0 is less than the minimum of 1."
    assert bad.returncode != 0 and message in bad.stdout + bad.stderr and message in README
    assert "Traceback" not in bad.stdout + bad.stderr


def _copy(tmp_path) -> Path:
    dest = tmp_path / "project"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=paths.ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for rel in listed:
        src = paths.ROOT / rel
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            (dest / rel).symlink_to(src.readlink())
        elif src.is_file():
            shutil.copy2(src, dest / rel)
    return dest


@pytest.mark.slow
def test_a_killed_run_resumes_with_the_readme_command(tmp_path):
    tree = _copy(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--config", "mode=replay"],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 240
    while time.time() < deadline and len(list((tree / "results" / "raw").glob("*/samples.csv"))) < 8:
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # as when the machine reboots or the job is killed for memory
    proc.wait()
    assert (tree / ".snakemake" / "locks").is_dir() and any((tree / ".snakemake" / "locks").iterdir())
    out = snakemake(tree, "--config", "mode=replay")
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    for table in (tree / "results" / "tables").glob("*.csv"):
        pd.read_csv(table)  # every table reads
    assert (tree / "results" / "report" / "index.html").is_file()


def test_readme_facts_are_true():
    """The README's Layout names every stage folder and exactly its modules; the top level holds the entry points."""
    pkg = paths.ROOT / "src" / "gpumm"
    layout = README[README.index("## Layout") : README.index("## Design")]
    folders = sorted(d.name for d in pkg.iterdir() if (d / "__init__.py").is_file())
    assert folders == ["analyse", "archive", "build", "profile", "report", "run", "setup"]
    for folder in folders:
        line = re.search(rf"^- `{folder}/` — (.*?)(?=^- `|^Beside)", layout, re.M | re.S).group(1)
        listed = set(re.findall(r"`(\w+)`", line))
        modules = {p.stem for p in (pkg / folder).glob("*.py") if not p.stem.startswith("_")}
        assert listed == modules, (folder, sorted(modules - listed), sorted(listed - modules))
    assert sorted(p.name for p in pkg.glob("*.py")) == ["__init__.py", "__main__.py", "cli.py"]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "gpu", "tests/run/test_gpu.py"],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
    ).stdout
    count = int(re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", collected).group(1))
    stated = int(re.search(r"`pytest -m gpu` runs (\d+) tests", README).group(1))
    assert stated == count, (stated, count)


def test_readme_parallel_check_figures_are_those_of_the_kept_runs():
    """The README's figures for `--cores 1` against `--cores 8` are recomputed from data/checks/parallel-h100."""
    sys.path.insert(0, str(paths.ROOT / "tools"))
    from compare_runs import compare

    d = paths.ROOT / "data" / "checks" / "parallel-h100"
    one, again, eight = (pd.read_csv(d / f"summary-{n}.csv") for n in ("cores1", "cores1-again", "cores8"))

    def span(a, b, timed, digits):
        r = compare(a, b)
        r = r[r.timed == timed].ratio
        return f"({r.min():.{digits}f}–{r.max():.{digits}f})"

    def elapsed(name):
        h, m, sec = re.search(r"Elapsed time: (\d+):(\d+):([\d.]+)", (d / f"snakemake-{name}.txt").read_text()).groups()
        return round(3600 * int(h) + 60 * int(m) + float(sec))

    text = " ".join(README.split())
    assert f"took {elapsed('cores1')} s with `--cores 1` and {elapsed('cores8')} s with `--cores 8`" in text
    assert f"within 2% of the `--cores 1` run's {span(one, eight, 'kernel', 3)}" in text
    assert f"to each other {span(one, again, 'kernel', 3)}" in text
    assert f"two `--cores 1` runs included {span(one, again, 'end_to_end', 2)}" in text

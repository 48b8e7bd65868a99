"""The command line as a user meets it: help, one-line errors, a run killed half way that the README's command
resumes (the manual's examples and facts: tests/pipeline/test_docs.py)."""

import os
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

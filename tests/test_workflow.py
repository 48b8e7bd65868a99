"""End to end, in a copy of the project: bad config stops before any job; replay renders every page."""

import re
import subprocess
import sys
import time

import pytest

from gpumm import reference
from gpumm.pages import PAGES


def snakemake(tree, *args):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=tree, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "bad, key",
    [
        ("sizes: [0]", "sizes[0] = 0"),
        ("variants: {tiled: {TILE: [64]}}", "variants.tiled.TILE: 64 is not allowed"),
        ("variants: {fastest: {}}", "variants.fastest: unknown variant"),
        ("mode: fast", 'mode = "fast"'),
        ("timing: {repeats: 2.5}", "timing.repeats = 2.5"),
    ],
)
def test_bad_config_stops_before_any_job(tree, bad, key):
    (tree / "bad.yaml").write_text(bad + "\n")
    out = snakemake(tree, "--configfile", "bad.yaml")
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert key in text and "Nothing was run." in text
    assert "Traceback" not in text
    assert not (tree / "results").exists()


@pytest.mark.slow
def test_replay_renders_every_page_naming_its_source(tree):
    if not reference.available(tree / "data" / "reference"):
        pytest.fail("data/reference/ holds no archived run: the replay report cannot be built")
    start = time.time()
    out = snakemake(tree, "--config", "mode=replay")
    seconds = time.time() - start
    assert out.returncode == 0, out.stderr[-3000:]
    report = tree / "results" / "report"
    for page in ["index", *(p["notebook"] for p in PAGES)]:
        html = (report / f"{page}.html").read_text()
        assert re.search(r"Data source: REPLAYED from the archived run data/reference/[\w.-]+", html), page
        if page != "index":
            assert "<img" in html or "image/png" in html or page == "profiles", page
            ids = next(p["ids"] for p in PAGES if p["notebook"] == page)
            assert all(sid in html for sid in ids), (page, [sid for sid in ids if sid not in html])
    index = (report / "index.html").read_text()
    for p in PAGES:
        assert f'href="{p["notebook"]}.html"' in index
        for sid in p["ids"]:
            assert sid in index
    again = snakemake(tree, "--config", "mode=replay", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
    print(f"replay report built in {seconds:.0f} s")

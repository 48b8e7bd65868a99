"""Issue 39: a measured run's pages say what a measured run is (from the `measured` fixture: real measured numbers,
rendered as the workflow renders a measured run): its own cost on the index, no replay-only columns on the run
page, and the compare page setting this run beside every archive, those of its own GPU model named by archive
and date."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from gpumm.archive import runrecord
from gpumm.report import runpage

MEASURED_LOG = Path(__file__).parents[1] / "fixtures" / "measured-h100" / "steps.jsonl"

pytestmark = pytest.mark.slow


def _text(page) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text()))


def test_the_index_of_a_measured_run_says_what_it_cost(measured):
    _, report = measured
    text = _text(report / "index.html")
    assert "Data source: MEASURED in this run on NVIDIA H100 80GB HBM3" in text
    run = json.loads(MEASURED_LOG.read_text().splitlines()[0])["run"]
    s = runrecord.summarise(runrecord.read(MEASURED_LOG, run))
    # the fixture is that run's step log up to its index: every step of its run.json but the index and the check
    whole = json.loads((MEASURED_LOG.parents[3] / "data" / "reference" / "h100" / "run.json").read_text())
    assert s["steps"] == whole["steps"] - 2 and s["gpu_busy_s"] == whole["gpu_busy_s"]
    assert 0.95 * whole["wall_s"] < s["wall_s"] <= whole["wall_s"]
    said = f"It took {s['wall_s']:.0f} s from its first step to this page, the GPU busy {s['gpu_busy_s']:.0f} s"
    assert said in text and f"over {s['steps']} steps" in text


def test_the_run_page_of_a_measured_run_has_no_replay_columns(measured):
    _, report = measured
    page = (report / "run.html").read_text()
    assert "digest (this checkout)" not in page and "the archive certifies" not in page
    assert "<i>stale</i>" not in page and "not measured</i>" not in page
    assert "digest (measured with)" in page and "all measured in this run" in page
    assert "predate" not in page  # every set without a clock reading is a CPU baseline


def _archive_date(name: str) -> str:
    import json

    from gpumm.setup import paths

    return json.loads((paths.ROOT / "data" / "reference" / name / "raw" / "provenance.json").read_text())["date"][:10]


def test_the_compare_page_sets_this_run_beside_every_archive_by_name_and_date(measured):
    _, report = measured
    text = _text(report / "compare.html")
    for archive in ("h100", "h200"):
        assert f"{archive} ÷ this run" in text, archive
    h100, h200 = (_archive_date(a) for a in ("h100", "h200"))  # this run is the h100 archive's, measured again
    other = f"archive h200 (NVIDIA H200, {h200}) against this run (NVIDIA H100 80GB HBM3, {h100})"
    same = f"archive h100 (NVIDIA H100 80GB HBM3, {h100}) against this run (NVIDIA H100 80GB HBM3, {h100})"
    assert other in text and same in text
    assert text.index(other) < text.index(same)  # another GPU model first
    assert "the same GPU model, so a difference here is from run to run" in text


def test_a_replayed_run_page_keeps_what_a_replay_is(measured):
    """The other side: the same tables under a replay's provenance keep the stale column and its words."""
    project, _ = measured
    tables = project / "results" / "tables"
    source = json.loads((tables / "source.json").read_text())
    replay = {**source, "data_source": {"mode": "replay", "archive": "data/reference/h100"}}
    assert "digest (this checkout)" in runpage.body(tables, replay) and "<i>stale</i>" in runpage.body(tables, replay)
    assert "digest (this checkout)" not in runpage.body(tables, source)


def test_the_pages_words_follow_their_numbers(measured):
    """Issue 39's smaller findings, on real measured numbers: no typed 'a few microseconds', one peak ratio with
    NVIDIA's figure and clock beside it, regime words by the rule, spills named as spills, the right minimum,
    failed roof checks named, logarithmic axes said."""
    project, report = measured
    text = {p.stem: _text(p) for p in report.glob("*.html")}
    assert not [p for p, s in text.items() if "a few microseconds" in s or "several times the L2" in s]
    assert not [p for p, s in text.items() if "fifteen times" in s or "14 times the rate" in s]
    tensor = text["tensor"]
    assert "16× the FP32 peak" in tensor and "at the 1980 MHz SM clock the run recorded" in tensor
    assert "NVIDIA's figure, 989 TFLOP/s dense, is the same count at 1830 MHz" in tensor
    assert "At 4096³ A, B (BF16) and C (FP32) fill the L2 2.6 times over: between the L2 and DRAM regimes" in tensor
    failed = pd.read_csv(project / "results" / "tables" / "roof_checks.csv")
    failed = failed[failed.table == "bf16_roofline"]
    assert len(failed) and "Failed checks: a roof that does not bound." in tensor
    for r in failed.itertuples():  # each named with its share of the roof, as the table computes it
        assert f"{r.variant} at {r.size}³ runs at {r.share_of_roof:.2f}× its {r.roof} roof" in tensor, r.variant
    assert "µs a launch" in tensor  # the small sizes' time, from the run
    profiles = text["profiles"]
    assert "3·4·n²" not in profiles and "12·n² bytes for an FP32 product, 8·n² for BF16" in profiles
    assert "the builds that spill registers" in profiles and "that traffic is register spills, not re-reads" in profiles
    assert (
        "bound by the transactions it issues, not by DRAM" in text["index"]
        and "Why: the uncoalesced" in (text["coalescing"])
    )
    assert "Both axes are logarithmic" in text["seed003"]
    assert re.search(r"at \d+\.\d to \d+\.\d µs, a launch this small", text["seed003"])

"""Issue 29: what each step wrote is recorded, and a damaged or missing result is made again, never read."""

import json
import os

import pytest

from gpumm.setup import files, records


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files are named as the workflow names them: results/...


def _results(tmp_path):
    r = tmp_path / "results"
    for rel, text in {
        "raw/naive/samples.csv": "variant,ms\nnaive,1.0\nnaive,1.1\n",
        "raw/naive/meta.json": '{"variant": "naive"}\n',
        "tables/summary.csv": "variant,median_ms\nnaive,1.05\n",
        "notebooks/ladder.ipynb": "{}\n",
        "report/ladder.html": "<p>ladder</p>\n",
    }.items():
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text(text)
    records.seal([r / "raw/naive/samples.csv", r / "raw/naive/meta.json"], r)
    records.seal([r / "tables/summary.csv"], r)
    records.seal([r / "notebooks/ladder.ipynb", r / "report/ladder.html"], r)
    return r


def test_nothing_to_say_when_every_result_is_as_written(tmp_path):
    assert records.check(_results(tmp_path)) == []


def test_a_file_damaged_with_its_time_kept_is_named_and_made_again(tmp_path):
    r = _results(tmp_path)
    samples = r / "raw/naive/samples.csv"
    stat = samples.stat()
    samples.write_text("variant,ms\n")
    os.utime(samples, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as `touch -r` leaves it
    (found,) = records.check(r)
    assert found.line.startswith("results/raw/naive/samples.csv: 1 lines, 11 bytes where its step wrote 3 lines")
    assert found.line.endswith("(damaged or edited); its step runs again")
    # the file goes, with what its step wrote with it and what makes the later steps run again; the record stays
    assert set(found.remove) == {
        samples,
        r / "raw/naive/meta.json",
        r / "report/index.html",
        r / "tables/manifest.json",
    }
    records.repair([found])
    assert not samples.exists() and not (r / "raw/naive/meta.json").exists()
    assert records.record_path(samples, r).is_file()
    said = [f.line for f in records.check(r)]  # said again until made again
    assert "results/raw/naive/samples.csv: missing (its step wrote 3 lines); its step runs again" in said


def test_a_damaged_page_or_notebook_makes_its_page_again(tmp_path):
    r = _results(tmp_path)
    (r / "notebooks/ladder.ipynb").write_text("")
    (found,) = records.check(r)
    assert found.line.endswith("the pages are made again") and r / "report/ladder.html" in found.remove
    (r / "notebooks/ladder.ipynb").write_text("{}\n")
    (r / "tables/summary.csv").unlink()
    (found,) = records.check(r)
    assert found.line == "results/tables/summary.csv: missing (its step wrote 2 lines); collect makes the tables again"
    assert r / "report/index.html" in found.remove  # the front page needs every table: the run asks for it


def test_a_record_that_cannot_be_read_makes_its_file_again(tmp_path):
    r = _results(tmp_path)
    rec = records.record_path(r / "tables/summary.csv", r)
    rec.write_text('{"lines": 2')
    (found,) = records.check(r)
    assert "the record of results/tables/summary.csv cannot be read (JSONDecodeError)" in found.line
    assert r / "tables/summary.csv" in found.remove and rec in found.remove


def test_a_file_outside_the_results_or_not_there_is_not_sealed(tmp_path):
    r = _results(tmp_path)
    assert records.seal([tmp_path / "elsewhere.csv", r / "raw/naive/none.csv"], r) == 0


def test_json_the_project_writes_is_strict():
    text = files.json_text({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -float("inf")}})
    assert json.loads(text) == {"a": None, "b": [1.0, None], "c": {"d": None}}
    assert "NaN" not in text and "Infinity" not in text

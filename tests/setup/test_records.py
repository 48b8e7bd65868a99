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


def test_a_file_damaged_with_its_time_kept_is_named_and_nothing_is_removed(tmp_path):
    r = _results(tmp_path)
    samples = r / "raw/naive/samples.csv"
    stat = samples.stat()
    samples.write_text("variant,ms\n")
    os.utime(samples, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as `touch -r` leaves it
    before = {p: p.read_bytes() for p in r.rglob("*") if p.is_file()}
    (found,) = records.check(r)
    assert found.line.startswith("results/raw/naive/samples.csv: 1 lines, 11 bytes where its step wrote 3 lines")
    assert found.line.endswith("(damaged or edited); its step runs again")
    assert found.force == [samples] and found.recorded  # the step that made it runs again (forced), nothing goes
    assert {p: p.read_bytes() for p in r.rglob("*") if p.is_file()} == before
    samples.unlink()
    said = [f.line for f in records.check(r)]  # said until made again
    assert "results/raw/naive/samples.csv: missing (its step wrote 3 lines); its step runs again" in said


def test_a_damaged_page_or_notebook_makes_its_page_again(tmp_path):
    r = _results(tmp_path)
    (r / "notebooks/ladder.ipynb").write_text("")
    (found,) = records.check(r)
    assert found.line.endswith("the pages are made again") and found.force == [r / "notebooks/ladder.ipynb"]
    (r / "notebooks/ladder.ipynb").write_text("{}\n")
    (r / "tables/summary.csv").unlink()
    (found,) = records.check(r)
    assert found.line == "results/tables/summary.csv: missing (its step wrote 2 lines); collect makes the tables again"


def test_a_record_that_cannot_be_read_makes_its_file_again(tmp_path):
    r = _results(tmp_path)
    rec = records.record_path(r / "tables/summary.csv", r)
    rec.write_text('{"lines": 2')
    (found,) = records.check(r)
    assert "the record of results/tables/summary.csv cannot be read (JSONDecodeError)" in found.line
    assert found.force == [r / "tables/summary.csv"] and rec.is_file()


def test_a_page_csv_is_sealed_with_its_page_and_its_page_makes_it_again(tmp_path):
    """Issue 37: the CSVs under a page's figures have records; an edited, deleted or unrecorded one forces its page;
    the pages step's seal drops the records of CSVs no longer there."""
    r = _results(tmp_path)
    data = r / "report/data"
    data.mkdir(parents=True)
    (data / "ladder-1.csv").write_text("variant,share\nnaive,0.5\n")
    (data / "ladder-old.csv").write_text("x\n1\n")
    (data / "new-extra.csv").write_text("x\n")  # no page of this step wrote it: never sealed as if it had
    assert records.seal([r / "report/ladder.html"], r, also=data) == 3
    assert [f.line.split(":")[0] for f in records.check(r)] == ["results/report/data/new-extra.csv"]
    (data / "ladder-1.csv").write_text("variant,share\nnaive,0.9\n")
    (data / "ladder-old.csv").unlink()
    (data / "seed000-2.csv").write_text("a\n")
    found = {f.line.split(":")[0]: f for f in records.check(r)}
    names = ("ladder-1.csv", "ladder-old.csv", "seed000-2.csv", "new-extra.csv")
    assert set(found) == {f"results/report/data/{n}" for n in names}
    assert found["results/report/data/ladder-1.csv"].force == [r / "report/ladder.html"]
    assert "no record of the step that wrote it" in found["results/report/data/seed000-2.csv"].line
    assert found["results/report/data/seed000-2.csv"].force == [r / "report/seed000.html"]
    (data / "seed000-2.csv").unlink()
    records.seal([r / "report/ladder.html"], r, also=data)  # the page made again: ladder-old.csv's record goes
    assert [f.line.split(":")[0] for f in records.check(r)] == ["results/report/data/new-extra.csv"]


def test_a_tree_whose_records_are_gone_is_made_again_never_trusted(tmp_path):
    import shutil

    r = _results(tmp_path)
    shutil.rmtree(r / records.FOLDER)
    found = records.check(r)
    assert len(found) == 5 and all(not f.recorded and "cannot be checked" in f.line for f in found)
    assert sorted(p for f in found for p in f.force) == sorted(
        r / rel
        for rel in (
            "raw/naive/samples.csv",
            "raw/naive/meta.json",
            "tables/summary.csv",
            "notebooks/ladder.ipynb",
            "report/ladder.html",
        )
    )


def test_a_file_outside_the_results_or_not_there_is_not_sealed(tmp_path):
    r = _results(tmp_path)
    assert records.seal([tmp_path / "elsewhere.csv", r / "raw/naive/none.csv"], r) == 0


def test_json_the_project_writes_is_strict():
    text = files.json_text({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -float("inf")}})
    assert json.loads(text) == {"a": None, "b": [1.0, None], "c": {"d": None}}
    assert "NaN" not in text and "Infinity" not in text


def test_a_one_digit_edit_is_named_as_an_edit(tmp_path):
    r = _results(tmp_path)
    (r / "tables/summary.csv").write_text("variant,median_ms\nnaive,7.05\n")  # same lines and bytes
    (found,) = records.check(r)
    assert found.line == (
        "results/tables/summary.csv: 2 lines, 29 bytes as its step wrote, other bytes (edited); collect makes the "
        "tables again"
    )

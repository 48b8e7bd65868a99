"""Issue 37: every raw value, archived or measured now, is checked against what it can be before any table is
made: a value outside names its file, row and column; an archive without its manifest is refused by name."""

import csv
import shutil

import pytest

from gpumm.archive import reference, replay
from gpumm.setup import paths, values

ARCHIVES = sorted(p.name for p in paths.REFERENCE.glob("*/") if (p / reference.MANIFEST).is_file())


@pytest.fixture()
def archive(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dest = tmp_path / "data" / "reference" / "h100"
    shutil.copytree(paths.REFERENCE / "h100", dest)
    return dest


def _poke(path, row, column, value):
    rows = list(csv.reader(path.open(newline="")))
    rows[row][rows[0].index(column)] = value
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)


@pytest.mark.parametrize("name", ARCHIVES)
def test_every_archived_value_is_one_the_card_can_give(name):
    assert values.check_folder(paths.REFERENCE / name) > 100


@pytest.mark.parametrize(
    "file, column, value, said",
    [
        ("raw/naive/samples.csv", "ms", "NaN", "NaN not finite; it must be a time: positive and finite"),
        ("raw/naive/samples.csv", "ms", "inf", "inf not finite"),
        ("raw/naive/samples.csv", "ms", "-1", "-1 must be a time: positive and finite"),
        ("raw/naive/samples.csv", "ms", "1e308", "the time and the rate disagree"),
        ("raw/naive/samples.csv", "ms", "", "empty in a row whose status is ok"),
        ("raw/naive/samples.csv", "ms", "fast", "'fast' is not a number"),
        ("raw/naive/samples.csv", "gflops", "1e6", "above the card's FP32 peak (66,908 GFLOP/s) by more than 10%"),
        ("raw/bf16_wgmma/samples.csv", "gflops", "2e6", "above the card's BF16 tensor-core peak (1,070,531 GFLOP/s)"),
        ("raw/naive/samples.csv", "M", "16.5", "16.5 must be a matrix side: a whole number, 0 to 1,048,576"),
        ("raw/tiled_tile8/samples.csv", "M", "1e300", "1e300 must be a matrix side"),
        (
            "raw/naive/samples.csv",
            "repeat",
            "1e300",
            "1e300 must be a count: a whole number, 0 to 9,007,199,254,740,992",
        ),
        ("raw/naive/samples.csv", "power_capped_pct", "101", "101 must be a percentage: 0 to 100"),
        ("raw/coalescing/samples.csv", "gbs", "1e9", "above the card's DRAM bandwidth (3,352 GB/s)"),
        ("raw/hierarchy/samples.csv", "ms", "0", "0 must be a time"),
        ("raw/bandwidth/samples.csv", "ms", "-0.5", "-0.5 must be a time"),
        ("raw/overhead/samples.csv", "batch", "-3", "-3 must be a count"),
        ("raw/paired/samples.csv", "ms", "nan", "nan not finite"),
        ("raw/naive/profile.csv", "launch", "1.5", "1.5 must be a count"),
    ],
)
def test_an_impossible_value_is_refused_naming_file_row_and_column(archive, file, column, value, said):
    _poke(archive / file, 3, column, value)
    with pytest.raises(values.ValueProblem) as exc:
        values.check_folder(archive)
    assert str(exc.value).startswith(f"data/reference/h100/{file}: row 3 (line 4), column ")
    assert said in str(exc.value) and "\n" not in str(exc.value)


def test_a_profile_value_is_checked_by_its_unit(archive):
    profile = archive / "raw/naive/profile.csv"
    rows = list(csv.DictReader(profile.open(newline="")))
    n = next(i for i, r in enumerate(rows, 1) if r["unit"] == "%" and r["status"] == "ok")
    _poke(profile, n, "value", "150")
    with pytest.raises(values.ValueProblem, match=rf"row {n} \(line {n + 1}\), column value: 150 must be a percentage"):
        values.check_folder(archive)
    _poke(profile, n, "value", "50")
    n = next(i for i, r in enumerate(rows, 1) if r["unit"] == "sector" and r["status"] == "ok")
    _poke(profile, n, "value", "-1")
    with pytest.raises(values.ValueProblem, match="-1 must be a count"):
        values.check_folder(archive)


def test_a_json_number_that_is_not_finite_is_refused(archive):
    meta = archive / "raw/naive/meta.json"
    meta.write_text(meta.read_text().replace('"warmups": 3', '"warmups": NaN'))
    with pytest.raises(values.ValueProblem, match=r"raw/naive/meta.json: warmups is nan: not finite"):
        values.check_folder(archive)


def test_a_poisoned_archive_sealed_again_is_refused_by_name_and_never_replayed(archive):
    _poke(archive / "raw/naive/samples.csv", 2, "ms", "-1")
    reference.seal(archive)  # the manifest written again, as a run would write it
    root = archive.parent
    assert reference.damaged(root) == {
        "h100": "data/reference/h100/raw/naive/samples.csv: row 2 (line 3), column ms: -1 must be a time: positive "
        "and finite"
    }
    with pytest.raises(reference.ArchiveError, match="archive h100 is damaged .*row 2 \\(line 3\\), column ms"):
        reference.choose("auto", root)
    with pytest.raises(reference.ArchiveError, match="column ms: -1 must be a time"):
        reference.check(archive)


def test_an_archive_without_its_manifest_is_refused_by_name_never_skipped(archive):
    (archive / reference.MANIFEST).unlink()
    root = archive.parent
    said = "data/reference/h100/MANIFEST.json: missing (an archive is used only as its manifest records it)"
    assert reference.damaged(root) == {"h100": said}
    with pytest.raises(reference.ArchiveError, match="replay_from = 'h100': data/reference/h100/MANIFEST.json"):
        reference.choose("h100", root)
    with pytest.raises(reference.ArchiveError, match="MANIFEST.json: missing"):
        reference.check(archive)
    with pytest.raises(reference.ArchiveError, match="MANIFEST.json: missing"):
        replay.study("bandwidth", archive, archive.parent / "results")


def test_the_replay_digest_follows_the_archived_files(archive):
    before = reference.digest(archive, ["raw/naive/", "build/naive/"])
    other = reference.digest(archive, ["raw/tiled_tile16/"])
    _poke(archive / "raw/naive/samples.csv", 2, "repeat", "7")
    reference.seal(archive)
    assert reference.digest(archive, ["raw/naive/", "build/naive/"]) != before
    assert reference.digest(archive, ["raw/tiled_tile16/"]) == other  # only the changed variant replays again


def test_a_profiled_counter_is_bound_by_its_launchs_duration(archive):
    """Review of issue 37: DRAM bytes of 1e20, or a launch of 1 ns, are no counts the card can give."""
    profile = archive / "raw/naive/profile.csv"
    rows = list(csv.DictReader(profile.open(newline="")))
    n = next(i for i, r in enumerate(rows, 1) if r["metric"] == "dram__bytes_read.sum" and r["status"] == "ok")
    _poke(profile, n, "value", "1e14")  # a count, but not in the launch's time
    with pytest.raises(values.ValueProblem) as exc:
        values.check_folder(archive)
    assert f"row {n} (line {n + 1}), column value: dram__bytes_read.sum = 1e14 byte in its launch's" in str(exc.value)
    assert "above the card's DRAM bandwidth (3,352 GB/s)" in str(exc.value)
    _poke(profile, n, "value", rows[n - 1]["value"])
    d = next(i for i, r in enumerate(rows, 1) if r["metric"] == "gpu__time_duration.sum" and r["status"] == "ok")
    _poke(profile, d, "value", "1")
    with pytest.raises(values.ValueProblem, match="in its launch's 1 ns is .* above the card's"):
        values.check_folder(archive)
    _poke(profile, d, "value", "0")
    with pytest.raises(values.ValueProblem, match=rf"row {d} .*column value: 0 ns must be a time"):
        values.check_folder(archive)


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("sm_count", None, "gpu.sm_count is None: the card's bounds need it"),
        ("memory_bus_bits", "wide", "gpu.memory_bus_bits is 'wide'"),
        ("compute_capability", "9", "gpu.compute_capability is '9': not MAJOR.MINOR"),
    ],
)
def test_a_provenance_without_the_cards_numbers_is_refused(archive, key, value, said):
    """Review of issue 37: with no card to bound them, the rates would go unchecked."""
    import json

    prov = archive / "raw/provenance.json"
    data = json.loads(prov.read_text())
    data["gpu"][key] = value
    prov.write_text(json.dumps(data))
    with pytest.raises(values.ValueProblem) as exc:
        values.check_folder(archive)
    assert str(exc.value).startswith("data/reference/h100/raw/provenance.json: ") and said in str(exc.value)

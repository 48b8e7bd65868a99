"""Issue 37: reading the workflow changes no file; what the record check finds is acted on only by a run that
holds the lock (gpumm.setup.guard), where Snakemake forces the steps that make it again."""

import subprocess
import sys
import time

import pytest

from gpumm.setup import guard, locks, records


@pytest.fixture()
def results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files are named as the workflow names them: results/...
    r = tmp_path / "results"
    for rel in ("raw/naive/samples.csv", "tables/summary.csv", "report/ladder.html", "build/x/kernel.cubin"):
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text(f"{rel}\n1\n")
    records.seal([r / "raw/naive/samples.csv"], r)
    records.seal([r / "tables/summary.csv"], r)
    records.seal([r / "report/ladder.html"], r)
    records.seal([r / "build/x/kernel.cubin"], r)
    return r


def _tree(r):
    return {p: p.read_bytes() for p in r.parent.rglob("*") if p.is_file()}


def test_what_is_forced_is_what_a_rule_of_this_run_makes(results):
    (results / "tables/summary.csv").write_text("cut")
    (results / "build/x/kernel.cubin").write_text("cut")  # a measured run's file; this run replays
    (results / "raw/naive/extra.log.csv").write_text("a\n")  # no record, and no rule makes it
    made = {"results/tables/summary.csv", "results/raw/naive/samples.csv", "results/report/ladder.html"}
    say, force = guard.plan(records.check(results), made.__contains__, results)
    assert force == ["results/tables/summary.csv"]
    assert say[0].startswith("results/build/x/kernel.cubin: ") and say[0].endswith(
        "(damaged or edited); no step of this run makes it: left as it is"
    )
    assert say[1].startswith("results/tables/summary.csv: ") and len(say) == 2


def test_a_dry_run_names_and_forces_but_changes_nothing(results, capsys):
    (results / "tables/summary.csv").write_text("cut")
    before = _tree(results)
    force = guard.before_run(results.parent, True, ["a notice"], lambda f: True)
    assert force == ["results/tables/summary.csv"]
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "gpumm: a notice" and err[1].startswith("gpumm: results/tables/summary.csv: ")
    assert _tree(results) == before


def test_a_run_while_another_holds_the_lock_stops_in_one_line_and_changes_nothing(results, capsys):
    locks_dir = results.parent / ".snakemake" / "locks"
    locks_dir.mkdir(parents=True)
    (locks_dir / "0.input.lock").write_text("")
    (results / "tables/summary.csv").write_text("cut")
    # another Snakemake process working in this folder: a child whose command line names snakemake
    fake = results.parent / "bin" / "snakemake"  # a process whose script is named snakemake, as Snakemake's is
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(30)\n")
    other = subprocess.Popen([sys.executable, str(fake)], cwd=results.parent)
    try:
        # Popen returns once the child's exec has begun, before /proc shows its new command line (an empty one
        # for a moment, under load): wait until the child reads as what it is
        deadline = time.time() + 10
        while other.pid not in locks.snakemake_processes(results.parent.resolve()) and time.time() < deadline:
            time.sleep(0.01)
        before = _tree(results)
        with pytest.raises(guard.GuardError) as exc:
            guard.before_run(results.parent, False, ["a notice"], lambda f: True)
        assert f"another Snakemake run (process {other.pid}) holds this folder's lock" in str(exc.value)
        assert "nothing was done" in str(exc.value) and "\n" not in str(exc.value)
        assert capsys.readouterr().err == ""  # not even the notices: the one line is the refusal
        assert guard.before_run(results.parent, True, [], lambda f: True) == []  # a dry run checks nothing then
        assert "its results may be half written and are not checked" in capsys.readouterr().err
        assert _tree(results) == before and (locks_dir / "0.input.lock").is_file()
    finally:
        other.kill()
        other.wait()


def test_a_killed_runs_lock_goes_only_when_a_real_run_starts(results, capsys):
    locks_dir = results.parent / ".snakemake" / "locks"
    locks_dir.mkdir(parents=True)
    (locks_dir / "0.input.lock").write_text("")
    assert locks.holders(results.parent) == []
    guard.before_run(results.parent, True, [], lambda f: True)
    assert (locks_dir / "0.input.lock").is_file()  # a dry run leaves it
    guard.before_run(results.parent, False, [], lambda f: True)
    assert not (locks_dir / "0.input.lock").exists()
    assert "removed 1 lock(s) a killed run left" in capsys.readouterr().err


def test_install_refuses_a_snakemake_without_the_hook():
    class Old:
        pass

    with pytest.raises(guard.GuardError, match="no Workflow._prepare_dag"):
        guard.install(Old(), [])


def test_many_findings_are_named_up_to_a_screen_and_counted(results, capsys):
    import shutil

    for i in range(20):
        (results / f"tables/t{i}.csv").write_text("x\n")
    shutil.rmtree(results / ".records")
    force = guard.before_run(results.parent, True, [], lambda f: True)
    err = capsys.readouterr().err.splitlines()
    assert len(force) == 24 and len(err) == guard.SAID + 1
    assert err[-1] == f"gpumm: and {24 - guard.SAID} more results like these (each is made again)"


def test_only_snakemake_itself_holds_a_folder():
    """Review of issue 37: a `tail -f .snakemake/log/...` in the folder is not a run."""
    assert locks.is_snakemake(["/usr/bin/python3", "/work/.venv/bin/snakemake", "--cores", "1"])
    assert locks.is_snakemake(["/work/.venv/bin/snakemake", "-n"])
    assert locks.is_snakemake(["python", "-m", "snakemake", "--cores", "1"])
    assert not locks.is_snakemake(["tail", "-f", ".snakemake/log/2026-11-27T085753.snakemake.log"])
    assert not locks.is_snakemake(["vim", "snakemake.log"])

"""The workflow's guard, acted on only when Snakemake starts a run: reading the workflow changes no file.

Snakemake reads the Snakefile for a dry run, ``--lint``, ``--summary``, each job a cluster executor starts, and
a run that another run's lock will refuse. So the workflow only reads while it is read: the record check
(gpumm.setup.records) and the lines to say are kept, and :func:`install` hooks them to the moment Snakemake
prepares its graph of jobs for a run or a dry run (``Workflow._prepare_dag``, in the main process only). There:

- another Snakemake run holding this folder's lock stops a run with one line (a dry run says so and checks
  nothing: that run's files may be half written);
- a lock that a killed run left is removed (a real run only) so that the plain command resumes;
- each damaged, missing or unrecorded result is named, and the workflow outputs whose steps make it again
  are handed to Snakemake as ``--forcerun`` targets: the dry run lists them as forced, the run makes them (and
  what follows them) again, removing the old outputs only once it holds the lock.
"""

import sys
from collections.abc import Callable
from pathlib import Path

from gpumm.setup import locks, paths, records

SAID = 8  # the findings named one by one; more are counted (a tree whose records are gone has hundreds)


class GuardError(RuntimeError):
    """The run must not start (another one holds the folder); the message is one line."""


def plan(findings: list[records.Finding], makes: Callable[[str], bool], results: Path) -> tuple[list[str], list[str]]:
    """(the lines to say, the files to force) for ``findings``: a finding is forced where a rule of this run
    ``makes`` the output that remakes it; a damaged result no rule of this run makes (a variant left out, a file
    of the other mode) is named as left as it is; an unrecorded file no rule makes (a log, a scratch file) is
    not a result of this workflow and is not named."""
    say, force = [], []
    for f in findings:
        made = [target for target in (_rel(p, results) for p in f.force) if makes(target)]
        if made:
            say.append(f.line)
            force += [target for target in made if target not in force]
        elif f.recorded:
            say.append(f"{f.line.rsplit(';', 1)[0]}; no step of this run makes it: left as it is")
    return say, force


def _rel(p: Path, results: Path) -> str:
    """A path as Snakemake's targets name it: relative to the working directory (the folder above results/)."""
    return (Path(results.name) / p.resolve().relative_to(results.resolve())).as_posix()


def before_run(workdir: Path, dry: bool, notices: list[str], makes: Callable[[str], bool]) -> list[str]:
    """What happens when a run (``dry``: a dry run) of the workflow in ``workdir`` starts: the files to force.
    Raises GuardError where another run holds the folder's lock and this one is real."""
    holders = locks.holders(workdir)
    if holders and not dry:
        raise GuardError(
            f"another Snakemake run (process {', '.join(map(str, holders))}) holds this folder's lock: wait for it "
            "to end; nothing was done"
        )
    for line in notices:
        _say(line)
    if holders:
        _say(
            f"another Snakemake run (process {', '.join(map(str, holders))}) works in this folder: its results may "
            "be half written and are not checked"
        )
        return []
    if not dry:
        stale = locks.clear_stale(workdir)
        if stale:
            _say(f"removed {len(stale)} lock(s) a killed run left in .snakemake/locks; resuming")
    results = workdir / paths.RESULTS.name
    say, force = plan(records.check(results), makes, results)
    for line in say[:SAID] if len(say) > SAID + 1 else say:
        _say(line)
    if len(say) > SAID + 1:
        _say(f"and {len(say) - SAID} more results like these (each is made again)")
    return force


def _say(line: str) -> None:
    print(f"gpumm: {line}", file=sys.stderr)


def install(workflow, notices: list[str]) -> None:
    """Hook :func:`before_run` to the moment ``workflow`` (Snakemake's Workflow) prepares the graph of a run or a
    dry run; the files it returns join the run's ``--forcerun``. A Snakemake without that moment is refused by
    name rather than run unguarded."""
    original = getattr(workflow, "_prepare_dag", None)
    if original is None:
        raise GuardError(
            "this Snakemake has no Workflow._prepare_dag, where gpumm checks its results before a run: "
            "install the version pyproject.toml names"
        )

    def prepare(*args, **kwargs):
        if workflow.is_main_process and getattr(workflow, "executor_plugin", None) is not None:
            rules = list(workflow.rules)
            try:
                force = before_run(
                    Path.cwd(), bool(workflow.dryrun), notices, lambda f: any(r.is_producer(f) for r in rules)
                )
            except GuardError as exc:  # one line, no trace: Snakemake would add the frame that raised it
                _say(str(exc))
                raise SystemExit(1) from None
            if force:
                settings = workflow.dag_settings
                settings.forcerun = frozenset(settings.forcerun) | set(force)
        return original(*args, **kwargs)

    workflow._prepare_dag = prepare

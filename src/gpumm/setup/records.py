"""What each step wrote, so that a damaged or missing result is made again or named, never rendered.

Every step the workflow runs seals its outputs when it ends well (``python -m gpumm --seal 'OUTPUTS' STEP``):
one record per file under ``results/.records/`` (the file's lines, bytes and SHA-256, and the files written with
it); the pages step seals the CSVs its figures and tables wrote too (``--seal-also``). :func:`check` reads and
changes nothing: a file that no longer matches its record (cut, emptied, edited, deleted, whatever its
modification time says), a record that cannot be read, and a result with no record at all are each named with
the workflow output whose step makes it again (:attr:`Finding.force`). The workflow hands those to Snakemake's
``--forcerun`` when a run starts (gpumm.setup.guard), so that only a run that holds Snakemake's lock replaces
anything, and a dry run lists those steps as forced.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from gpumm.setup import files, manifest, paths

FOLDER = ".records"
# the folders of results/ whose files the report is made of: each one has a record, or is made again
CHECKED = ("raw", "build", "tables", "notebooks", "report")
PAGE_DATA = "report/data"  # the CSVs under each figure and table of a page (gpumm.report.figures)


def _root(results: Path | None) -> Path:
    return results if results is not None else paths.RESULTS


def record_path(file: Path, results: Path | None = None) -> Path:
    """Where the record of ``file`` (a path under results/) is kept."""
    results = _root(results)
    rel = file.resolve().relative_to(results.resolve()).as_posix()
    return results / FOLDER / f"{rel}.json"


def outputs_to_seal(argv: list[str]) -> tuple[list[Path], list[str], str]:
    """(the outputs a workflow step is to seal, the step's own arguments, the folder whose CSVs are sealed with
    them or '') of ``--seal 'OUTPUTS' [--seal-also FOLDER] STEP ...``."""
    if argv[:1] != ["--seal"] or len(argv) < 2:
        return [], argv, ""
    outputs, rest, also = [Path(f) for f in argv[1].split()], argv[2:], ""
    if rest[:1] == ["--seal-also"] and len(rest) >= 2:
        also, rest = rest[1], rest[2:]
    return outputs, rest, also


def seal(outputs: list[Path], results: Path | None = None, also: Path | None = None) -> int:
    """Record ``outputs`` (a step's outputs, under results/) as they are now, each with the list of the others;
    files outside results/ or not there are left out. ``also``: a folder whose CSVs the step wrote besides its
    outputs (the pages' data): they are recorded with them, and the records of CSVs no longer there are dropped.
    The number recorded."""
    results = _root(results)
    pages = {f.stem for f in outputs if f.suffix == ".html"}  # the CSVs of the pages this step made, no other
    extra = [f for f in sorted(also.glob("*.csv")) if f.name.split("-")[0] in pages] if also and also.is_dir() else []
    if also is not None:
        folder = results / FOLDER / also.resolve().relative_to(results.resolve())
        for rec in folder.glob("*.csv.json") if folder.is_dir() else []:
            if not (also / rec.name[: -len(".json")]).is_file():
                rec.unlink()
    here = [f for f in [*outputs, *extra] if f.is_file() and results.resolve() in f.resolve().parents]
    rel = sorted(f.resolve().relative_to(results.resolve()).as_posix() for f in here)
    for f in here:
        files.write_text(record_path(f, results), json.dumps({**manifest.entry(f), "with": rel}, allow_nan=False))
    return len(here)


@dataclass
class Finding:
    """One damaged, missing or unrecorded result: the line that names it, and the workflow outputs whose steps
    make it again (Snakemake forces them; the steps after them run again because their input is new)."""

    line: str
    force: list[Path] = field(default_factory=list)
    recorded: bool = True  # False: a file with no record, which may be one no step of this run writes


def maker(rel: str, results: Path) -> Path:
    """The workflow output whose step makes the file ``rel`` (under results/) again: the file itself, or for a
    page's CSV, which no rule names, the page."""
    if rel.startswith(PAGE_DATA + "/"):
        return results / "report" / f"{Path(rel).name.split('-')[0]}.html"
    return results / rel


def _what(rel: str) -> str:
    top = rel.split("/")[0]
    return {
        "tables": "collect makes the tables again",
        "notebooks": "the pages are made again",
        "report": "the pages are made again",
    }.get(top, "its step runs again")


def check(results: Path | None = None) -> list[Finding]:
    """Every sealed file that is missing or differs from its record, every record that cannot be read, and every
    file of the report's folders that has no record. Reads only."""
    results = _root(results)
    folder = results / FOLDER
    found, recorded = [], set()
    for rec in sorted(folder.rglob("*.json")) if folder.is_dir() else []:
        rel = rec.relative_to(folder).as_posix()[: -len(".json")]
        recorded.add(rel)
        file = results / rel
        shown = paths.shown(file)
        try:
            want = json.loads(rec.read_text())
            if not isinstance(want.get("sha256"), str):
                raise ValueError("no digest")
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            line = f"{paths.shown(rec)}: the record of {shown} cannot be read ({type(exc).__name__}); {_what(rel)}"
            found.append(Finding(line, [maker(rel, results)]))
            continue
        have = manifest.entry(file) if file.is_file() else None
        if have is None:
            line = f"{shown}: missing (its step wrote {want.get('lines')} lines); {_what(rel)}"
        elif have["sha256"] != want["sha256"] and have["bytes"] == want.get("bytes"):
            size = f"{have['lines']} lines, {have['bytes']} bytes as its step wrote, other bytes"
            line = f"{shown}: {size} (edited); {_what(rel)}"
        elif have["sha256"] != want["sha256"]:
            line = (
                f"{shown}: {have['lines']} lines, {have['bytes']} bytes where its step wrote {want.get('lines')} "
                f"lines, {want.get('bytes')} bytes (damaged or edited); {_what(rel)}"
            )
        else:
            continue
        found.append(Finding(line, [maker(rel, results)]))
    for top in CHECKED:
        for file in sorted((results / top).rglob("*")) if (results / top).is_dir() else []:
            rel = file.relative_to(results).as_posix()
            if file.is_file() and rel not in recorded and not file.name.endswith((".tmp", ".log")):
                line = f"{paths.shown(file)}: no record of the step that wrote it (cannot be checked); {_what(rel)}"
                found.append(Finding(line, [maker(rel, results)], recorded=False))
    return found

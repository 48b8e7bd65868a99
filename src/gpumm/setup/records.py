"""What each step wrote, so that a damaged or missing result is made again or named, never rendered.

Every step the workflow runs seals its outputs when it ends well (``python -m gpumm --seal '{output}' STEP``):
one record per file under ``results/.records/`` (the file's lines, bytes and SHA-256, and the files written with
it). Before any job, the workflow calls :func:`check`: a file that no longer matches its record (cut, emptied,
edited, deleted, whatever its modification time says) is removed together with the files its step wrote with
it, and with the output the run asks for that makes the steps after it run again (:func:`_downstream`), so that
the plain command makes them all again. A record is never removed for the damage it found; one that cannot be
read is replaced when its step runs again.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from gpumm.setup import files, manifest, paths

FOLDER = ".records"


def _root(results: Path | None) -> Path:
    return results if results is not None else paths.RESULTS


def record_path(file: Path, results: Path | None = None) -> Path:
    """Where the record of ``file`` (a path under results/) is kept."""
    results = _root(results)
    rel = file.resolve().relative_to(results.resolve()).as_posix()
    return results / FOLDER / f"{rel}.json"


def outputs_to_seal(argv: list[str]) -> tuple[list[Path], list[str]]:
    """(the outputs a workflow step is to seal, the step's own arguments) of ``--seal 'OUTPUTS' STEP ...``."""
    if argv[:1] == ["--seal"] and len(argv) >= 2:
        return [Path(f) for f in argv[1].split()], argv[2:]
    return [], argv


def seal(outputs: list[Path], results: Path | None = None) -> int:
    """Record ``outputs`` (a step's outputs, under results/) as they are now, each with the list of the others;
    files outside results/ or not there are left out. The number recorded."""
    results = _root(results)
    here = [f for f in outputs if f.is_file() and results.resolve() in f.resolve().parents]
    rel = sorted(f.resolve().relative_to(results.resolve()).as_posix() for f in here)
    for f in here:
        files.write_text(record_path(f, results), json.dumps({**manifest.entry(f), "with": rel}, allow_nan=False))
    return len(here)


@dataclass
class Finding:
    """One damaged or missing file: the line that names it, and the files to remove so that it is made again."""

    line: str
    remove: list[Path] = field(default_factory=list)


def _downstream(rel: str, results: Path) -> list[Path]:
    """What to remove besides a damaged file so that the steps between it and the report run again. Snakemake
    runs a step whose output is missing only where a later step needs that output and has to run itself, so a
    missing raw file or table alone stays missing: the front page, which the run asks for and which needs every
    table, for a table; that and collect's manifest (one of the tables) for a raw or build file, which the tables
    are made from; a page for its executed notebook and its CSVs; nothing for a page, which the run asks for."""
    top = rel.split("/")[0]
    if top in ("raw", "build"):
        return [results / "report" / "index.html", results / "tables" / manifest.NAME]
    if top == "tables":
        return [results / "report" / "index.html"]
    if top == "notebooks":
        return [results / "report" / Path(rel).with_suffix(".html").name]
    if rel.startswith("report/data/"):
        page = Path(rel).name.split("-")[0]
        return [results / "report" / f"{page}.html"]
    return []


def _what(rel: str) -> str:
    top = rel.split("/")[0]
    return {
        "raw": "its step runs again",
        "build": "its step runs again",
        "tables": "collect makes the tables again",
        "notebooks": "the pages are made again",
        "report": "the pages are made again",
    }.get(top, "its step runs again")


def check(results: Path | None = None) -> list[Finding]:
    """Every sealed file that is missing or differs from its record, and every record that cannot be read."""
    results = _root(results)
    folder = results / FOLDER
    found = []
    for rec in sorted(folder.rglob("*.json")) if folder.is_dir() else []:
        rel = rec.relative_to(folder).as_posix()[: -len(".json")]
        file = results / rel
        shown = paths.shown(file)
        try:
            want = json.loads(rec.read_text())
            siblings = [results / s for s in want.get("with", [])]
            if not isinstance(want.get("sha256"), str):
                raise ValueError("no digest")
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            line = f"{paths.shown(rec)}: the record of {shown} cannot be read ({type(exc).__name__}); {_what(rel)}"
            found.append(Finding(line, [file, rec, *_downstream(rel, results)]))
            continue
        have = manifest.entry(file) if file.is_file() else None
        if have is None:
            line = f"{shown}: missing (its step wrote {want.get('lines')} lines); {_what(rel)}"
        elif have["sha256"] != want["sha256"]:
            line = (
                f"{shown}: {have['lines']} lines, {have['bytes']} bytes where its step wrote {want.get('lines')} "
                f"lines, {want.get('bytes')} bytes (damaged or edited); {_what(rel)}"
            )
        else:
            continue
        found.append(Finding(line, [file, *siblings, *_downstream(rel, results)]))
    return found


def repair(findings: list[Finding]) -> None:
    """Remove what ``findings`` name (the damaged files, the files written with them, the outputs that make the
    steps after them run again); records stay, but those that cannot be read."""
    for f in findings:
        for p in f.remove:
            p.unlink(missing_ok=True)

"""Manifests: what a writer wrote (each file's lines, bytes and digest), so that a reader can tell a damaged file.

``collect`` writes ``results/tables/manifest.json`` after its tables, and an
archive keeps ``MANIFEST.json`` beside its files. A table cut short, emptied
or edited by hand no longer matches: the workflow then runs ``collect`` again
(its manifest is one of its outputs) and the report's steps refuse to read
it; a damaged archive stops a replay with one line naming the file. Lines are
counted as newlines, so a message can say how much of a file is left.
"""

import hashlib
import json
from pathlib import Path

from gpumm.setup import paths

NAME = "manifest.json"


def entry(path: Path) -> dict:
    """One file's record: its lines (newlines), bytes and SHA-256."""
    data = path.read_bytes()
    return {"lines": data.count(b"\n"), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write(folder: Path, files: list[Path], manifest: Path | None = None, writer: str = "") -> Path:
    """Record ``files`` (paths inside ``folder``) in ``manifest`` (default ``folder/manifest.json``), written whole
    or not at all; the manifest's path."""
    manifest = manifest or folder / NAME
    record = {
        "writer": writer,
        "files": {f.relative_to(folder).as_posix(): entry(f) for f in sorted(files)},
    }
    tmp = manifest.with_name(manifest.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
    tmp.replace(manifest)
    return manifest


def read(manifest: Path) -> dict:
    """The files a manifest records, by path relative to its folder; ValueError where it cannot be read."""
    try:
        record = json.loads(manifest.read_text())
        files = record["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not a mapping")
        return files
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{paths.shown(manifest)}: not a readable manifest ({type(exc).__name__}: {exc})") from None


def _difference(path: Path, want: dict, by_step: bool = False) -> str | None:
    """One line where ``path`` is missing or differs from its record ``want`` (an :func:`entry`), else None;
    ``by_step``: the record is a step's own (its meta.json), not a folder's manifest."""
    shown = paths.shown(path)
    if not path.is_file():
        who = "its step recorded" if by_step else "the manifest records"
        return f"{shown}: missing ({who} {want.get('lines')} lines)"
    have = entry(path)
    if have["sha256"] == want.get("sha256"):
        return None
    lines, size = want.get("lines"), want.get("bytes")
    was = f"its step wrote {lines} lines, {size} bytes" if by_step else f"{lines} lines, {size} bytes were written"
    return f"{shown}: {have['lines']} lines, {have['bytes']} bytes where {was} (damaged or edited)"


def problems(folder: Path, manifest: Path | None = None) -> list[str]:
    """One line for each file of the manifest that is missing or differs from what was written; the manifest's
    own fault as one line; [] where all match (or there is no manifest)."""
    manifest = manifest or folder / NAME
    if not manifest.exists():
        return []
    try:
        files = read(manifest)
    except ValueError as exc:
        return [str(exc)]
    return [line for rel, want in files.items() if (line := _difference(folder / rel, want))]


def check(path: Path, manifest: Path) -> str | None:
    """The problem with one file against the manifest of its folder, or None (also where no manifest records it)."""
    if not manifest.exists():
        return None
    try:
        rel = path.resolve().relative_to(manifest.parent.resolve()).as_posix()
    except ValueError:  # outside the manifest's folder
        return None
    try:
        want = read(manifest).get(rel)
    except ValueError as exc:  # a manifest that cannot be read
        return str(exc)
    return _difference(path, want) if want is not None else None


def first(found: list[str], remedy: str) -> str:
    """The first of ``found``, how many more, and ``remedy``: the one line a damaged result is reported in."""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{found[0]}{more}: {remedy}"


class Damaged(ValueError):
    """A file differs from what its writer recorded; the message is one line naming it."""


def require(folder: Path, remedy: str, manifest: Path | None = None) -> None:
    """Raise Damaged (the first problem, how many more, and ``remedy``) unless the manifest is there and every file
    of it matches: files without the manifest their writer leaves last are files it did not finish."""
    manifest = manifest or folder / NAME
    if not manifest.is_file():
        raise Damaged(f"{paths.shown(manifest)}: missing (its writer did not finish, or it was removed): {remedy}")
    found = problems(folder, manifest)
    if found:
        raise Damaged(first(found, remedy))


def recorded(meta: Path) -> list[str]:
    """The problems of a step's outputs against the record its ``meta.json`` keeps of them (``files``: name ->
    entry, written with them): one line per file missing or changed since, one for a meta.json that cannot be
    read; [] where all match or nothing is recorded (older runs)."""
    try:
        files = json.loads(meta.read_text()).get("files") or {}
    except (OSError, ValueError, AttributeError) as exc:
        return [f"{paths.shown(meta)}: cannot be read ({type(exc).__name__})"]
    return [line for name, want in files.items() if (line := _difference(meta.parent / name, want, by_step=True))]

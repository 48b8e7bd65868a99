"""Replay: fill results/ from an archived run instead of measuring.

Each variant's archived files are copied as they are. A variant whose kernel
source or defines differ from the archived run's is marked stale (the numbers
are the old source's); a variant the archive lacks is marked not measured and
gets no numbers.

A replay step is started once per variant, so it copies files and writes its
placeholders row by row, without pandas or the measuring modules (a second of
imports, a hundred times over).
"""

import gzip
import json
import shutil
from pathlib import Path

from gpumm.archive import reference
from gpumm.setup import columns, config, files, manifest, paths
from gpumm.setup.catalog import Variant

BUILD_FILES = ("resources.json", "kernel.ptx", "kernel.sass")


def variant(v: Variant, archive: Path, results: Path = paths.RESULTS) -> dict:
    """Copy one variant's archived samples, metadata, profile and build report."""
    src, dst = archive / "raw" / v.id, paths.raw_dir(v.id, results)
    dst.mkdir(parents=True, exist_ok=True)
    current = v.digest()
    if not (src / "samples.csv").is_file():
        reason = f"not measured: {v.id} is not in the archived run {archive.name}"
        row = {"variant": v.id, "family": v.family, "defines": v.defines_text(), "kind": v.kind}
        files.write_rows([{**row, "status": "not measured", "reason": reason}], columns.SAMPLES, dst / "samples.csv")
        meta = {"variant": v.id, "origin": "not measured", "digest": current, "reason": reason}
        meta["files"] = {"samples.csv": manifest.entry(dst / "samples.csv")}
        _write_json(meta, dst / "meta.json")
        columns.write_missing_profile(v.id, 0, reason, dst)
    else:
        for f in ("meta.json", "samples.csv", "profile.csv"):
            _as_archived(src / f, archive)
        meta = json.loads((src / "meta.json").read_text())
        # the digest the archive certifies its numbers for (gpumm.setup.digest), else the one measured with them
        archived = reference.certified(archive).get(v.id) or meta.get("digest")
        meta.update(
            origin="replayed", archive=archive.name, archived_digest=archived, digest=current, stale=archived != current
        )
        shutil.copy2(src / "samples.csv", dst / "samples.csv")
        meta["files"] = {"samples.csv": manifest.entry(dst / "samples.csv")}  # as copied (manifest.recorded)
        if (src / "profile.csv").is_file():
            shutil.copy2(src / "profile.csv", dst / "profile.csv")
        else:
            columns.write_missing_profile(v.id, 0, f"the archived run {archive.name} holds no profile of {v.id}", dst)
        _write_json(meta, dst / "meta.json")
    return meta


def _write_json(data: dict, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(files.json_text(data, indent=1))
    tmp.replace(path)


def resources(v: Variant, archive: Path, results: Path = paths.RESULTS) -> None:
    """Copy a CUDA variant's archived resource report, PTX and SASS (or say they are not in the archive)."""
    src, dst = archive / "build" / v.id, paths.build_dir(v.id, results)
    dst.mkdir(parents=True, exist_ok=True)
    for name in BUILD_FILES:
        _copy_or_note(src / name, dst / name, archive)


STUDY_FILES = {
    "coalescing": [
        ("raw", "coalescing", "samples.csv"),
        ("raw", "coalescing", "profile.csv"),
        ("build", "access_patterns", "resources.json"),
        ("build", "access_patterns", "kernel.ptx"),
        ("build", "access_patterns", "kernel.sass"),
    ],
    "bandwidth": [("raw", "bandwidth", "samples.csv")],
    "overhead": [("raw", "overhead", "samples.csv")],
    "hierarchy": [("raw", "hierarchy", "samples.csv")],
    "paired": [("raw", "paired", "samples.csv"), ("raw", "paired", "meta.json")],
    "model": [("raw", "model", f) for f in ("samples.csv", "checks.csv", "shapes.csv", "read.csv", "ceiling.csv")]
    + [("raw", "model", "meta.json")]
    + [
        ("raw", step, f)
        for step in ("model-dispatch", "model-fp32", "model-fp32-dispatch")
        for f in ("samples.csv", "checks.csv", "shapes.csv", "meta.json")
    ],
}


def _as_archived(f: Path, archive: Path) -> None:
    """Raise ArchiveError (one line naming ``f``) where an archived file differs from the archive's manifest, or
    the archive has none: a replay never copies a damaged file (a file the manifest does not record passes)."""
    problem = reference.manifest_missing(archive)
    problem = problem or (manifest.check(f, archive / reference.MANIFEST) if f.is_file() else None)
    if problem:
        raise reference.ArchiveError(f"archive {archive.name}: {problem}: restore it or replay another archive")


def _copy_or_note(src: Path, dst: Path, archive: Path) -> bool:
    """Copy an archived file; where the archive lacks it, write one of the same kind saying so (no numbers).

    True when it was copied.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    packed = src.with_name(src.name + ".gz")  # PTX and SASS are archived gzipped (gpumm.archive.reference.PACKED)
    for f in (src, packed):
        _as_archived(f, archive)
    if src.is_file():
        shutil.copy2(src, dst)
        return True
    if packed.is_file():
        dst.write_bytes(gzip.decompress(packed.read_bytes()))
        return True
    note = {"status": "not measured", "reason": f"not in the archived run {archive.name}"}
    if dst.suffix == ".csv":
        files.write_rows([note], list(note), dst)
    elif dst.suffix == ".json":
        dst.write_text(files.json_text(note))
    else:
        dst.write_text(f"# {dst.name} {note['reason']}\n")
    return False


def study(name: str, archive: Path, results: Path = paths.RESULTS) -> str:
    """Copy an archived study's files; a file the archive lacks is written saying so (no numbers)."""
    missing = []
    for sub, folder, f in STUDY_FILES[name]:
        src, dst = archive / sub / folder / f, results / sub / folder / f
        if not _copy_or_note(src, dst, archive):
            missing.append(f"{folder}/{f}")
    return f"replayed {name}" + (f" (not in the archive: {', '.join(missing)})" if missing else "")


def config_differences(
    archived: dict | None, current: dict | None, archived_digest: str = "", digest: str = ""
) -> list[str]:
    """The settings of ``current`` that differ from the archived run's, as 'key: archived → current' lines.

    Where the archive kept only a digest of its configuration (runs before
    the configuration itself was recorded), a differing digest is one line
    saying so.
    """
    if current is None:
        return []
    current = config.measured(current)
    if archived is None:
        if archived_digest and digest and archived_digest != digest:
            return [f"configuration digest {archived_digest} (archived) differs from {digest} (this run's)"]
        return []
    return _diff(config.measured(archived), current, "")


def _diff(archived: dict, current: dict, prefix: str) -> list[str]:
    out = []
    for key in sorted(set(archived) | set(current)):
        a, c = archived.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(c, dict):
            out += _diff(a, c, f"{prefix}{key}.")
        elif isinstance(a, list) and isinstance(c, list) and a != c and len(json.dumps(a) + json.dumps(c)) > 120:
            out.append(f"{prefix}{key}: {_list_change(a, c)}")  # a long list: what was added and dropped
        elif a != c:
            out.append(f"{prefix}{key}: {json.dumps(a)} (archived) → {json.dumps(c)} (this config)")
    return out


def _list_change(archived: list, current: list) -> str:
    def few(items: list) -> str:
        shown = ", ".join(json.dumps(x) for x in items[:3])
        return shown + (f" and {len(items) - 3} more" if len(items) > 3 else "")

    added = [x for x in current if x not in archived]
    dropped = [x for x in archived if x not in current]
    said = [f"adds {few(added)}"] * bool(added) + [f"drops {few(dropped)}"] * bool(dropped)
    change = "; ".join(said) or "the same items in another order"
    return f"this config {change} ({len(archived)} archived, {len(current)} here)"


def provenance(
    archive: Path,
    why: str,
    digests_now: dict[str, str],
    results: Path = paths.RESULTS,
    current_config: dict | None = None,
    config_digest: str = "",
) -> dict:
    """The archived run's provenance, marked replayed, with today's variant digests beside the archived ones,
    and the settings of this run's configuration that the archived run did not use."""
    _as_archived(archive / "raw" / "provenance.json", archive)
    prov = json.loads((archive / "raw" / "provenance.json").read_text())
    measured = prov.get("variant_digests", {})
    prov["variant_digests"] = {**measured, **reference.certified(archive)}  # as the archive certifies them now
    prov["variant_digests_measured"] = measured
    prov["variant_digests_now"] = digests_now
    differs = config_differences(prov.get("config"), current_config, prov.get("config_digest", ""), config_digest)
    prov["data_source"] = {
        "mode": "replay",
        "archive": str(archive.relative_to(paths.ROOT)) if archive.is_relative_to(paths.ROOT) else str(archive),
        "why": why,
        "config_differs": differs,
    }
    out = results / "raw" / "provenance.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(files.json_text(prov, indent=1))
    return prov


def step(v, part: str, archive: Path) -> str:
    """One replay job: the raw files (part raw), the build's files (part build) or both (part all) of variant
    ``v``; what was done."""
    done = []
    if part in ("raw", "all"):
        meta = variant(v, archive)
        note = " (STALE: source changed since the archived run)" if meta.get("stale") else ""
        done.append(f"replayed {v.id}: {meta['origin']}{note}")
    if part in ("build", "all"):
        resources(v, archive)
        done.append(f"replayed the build of {v.id}")
    return "\n".join(done)

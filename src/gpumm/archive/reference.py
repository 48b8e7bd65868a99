"""Archived runs under data/reference/<gpu>/: find them, pick one, write one.

An archive mirrors a run's ``results/`` folder for what is worth keeping:
``raw/<variant>/`` (samples, metadata, profile), ``build/<variant>/``
(resource report), ``raw/provenance.json`` and ``run.json`` (what the run cost).
"""

import functools
import gzip
import hashlib
import json
import re
import shutil
from pathlib import Path

from gpumm.setup import digest as variant_digest
from gpumm.setup import manifest, paths, values

KEEP_RAW = ("samples.csv", "meta.json", "profile.csv", "ncu.log", "checks.csv", "shapes.csv", "read.csv")
KEEP_BUILD = ("resources.json", "ptxas.log", "kernel.ptx", "kernel.sass")
# kept gzipped (NAME.gz, byte for byte once unpacked): a kernel file that includes the rungs below it carries
# their PTX and SASS too, and the archives travel with the tree to the GPU machine
PACKED = ("kernel.ptx", "kernel.sass")


class ArchiveError(RuntimeError):
    """No archive to replay, or the one asked for is missing."""


MANIFEST = "MANIFEST.json"  # every file of an archive, as written (gpumm.setup.manifest)
# each variant's digest under the token scheme (gpumm.setup.digest) that the archive's numbers stand for, and how
# that was established: measured with it, migrated from the byte digest, or the same SASS (python -m gpumm certify)
CERTIFIED = "DIGESTS.json"


def _certificates(archive: Path) -> dict:
    """The archive's DIGESTS.json as read; a fresh, empty one where it is missing, unreadable or of another
    scheme (a digest made another way is not compared)."""
    try:
        record = json.loads((archive / CERTIFIED).read_text())
    except (OSError, ValueError):
        record = None
    if not isinstance(record, dict) or record.get("scheme") != variant_digest.SCHEME:
        return {"scheme": variant_digest.SCHEME, "variants": {}}
    return record


def certified(archive: Path) -> dict[str, str]:
    """variant -> the digest the archive certifies its numbers for ({} where it certifies none)."""
    entries = _certificates(archive).get("variants") or {}
    return {vid: e["digest"] for vid, e in entries.items() if isinstance(e, dict)}


# the model's steps (gpumm.run.layers): each records the digest of every kernel it timed in its meta.json, since
# its kernels (the weight streams among them) have no folder of their own under raw/
MODEL_STEPS = ("model", "model-dispatch", "model-fp32", "model-fp32-dispatch")


def step_digests(raw: Path) -> dict[str, str]:
    """kernel -> the digest a run's model steps recorded for it (``raw``: the run's or an archive's raw/; {}
    where no model step ran or its meta.json cannot be read)."""
    found: dict[str, str] = {}
    for step in MODEL_STEPS:
        try:
            meta = json.loads((raw / step / "meta.json").read_text())
        except (OSError, ValueError):
            continue
        digests = meta.get("digests") if isinstance(meta, dict) else None
        if isinstance(digests, dict):
            found.update({vid: d for vid, d in digests.items() if isinstance(d, str)})
    return found


def write_certified(archive: Path, entries: dict[str, dict]) -> None:
    """Record ``entries`` (variant -> {digest, how, ...}) over what the archive certified, then seal the archive."""
    record = _certificates(archive)
    record["variants"] = dict(sorted({**(record.get("variants") or {}), **entries}.items()))
    (archive / CERTIFIED).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    seal(archive)


def provenance(archive: Path) -> dict:
    return json.loads((archive / "raw" / "provenance.json").read_text())


def _unreadable_provenance(archive: Path) -> str | None:
    """Why an archive's provenance cannot be read (one line naming the file), or None."""
    f = archive / "raw" / "provenance.json"
    try:
        prov = json.loads(f.read_text())
    except (OSError, ValueError) as exc:
        return f"{paths.shown(f)}: cannot be read ({type(exc).__name__}: {exc})"
    return None if isinstance(prov, dict) else f"{paths.shown(f)}: not a JSON object"


def _unreadable(archive: Path) -> str | None:
    """Why an archive cannot be used (one line naming the file), or None: its provenance cannot be read, its
    manifest is missing, a file differs from the manifest (cut, edited, missing), or a value cannot be
    (gpumm.setup.values: the file, row and column)."""
    return _unreadable_provenance(archive) or _fault(archive)


def manifest_missing(archive: Path) -> str | None:
    """One line where the archive has no manifest (it is then used for nothing), else None."""
    f = archive / MANIFEST
    return None if f.is_file() else f"{paths.shown(f)}: missing (an archive is used only as its manifest records it)"


def _fault(archive: Path) -> str | None:
    """The first fault of an archive, in one line, or None: no manifest, a file that differs from it, a value that
    cannot be, or a file that differs from its step's own record. Checked once per state of the archive's files in
    a process (the workflow asks for it while choosing the archive and again before replaying it)."""
    missing = manifest_missing(archive)
    if missing:
        return missing
    stats = sorted((p.as_posix(), p.stat()) for p in archive.rglob("*") if p.is_file())
    state = tuple((name, st.st_size, st.st_mtime_ns) for name, st in stats)
    return _checked(archive, (archive / MANIFEST).read_bytes(), state)


@functools.lru_cache(maxsize=16)
def _checked(archive: Path, sealed: bytes, state: tuple) -> str | None:
    """The files of ``archive`` against its manifest ``sealed`` (its bytes), then every value, then each step's
    record; ``state`` (every file's size and time) makes a changed file a new check."""
    found = manifest.problems(archive, archive / MANIFEST)
    if found:
        return found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
    try:
        values.check_folder(archive)
    except values.ValueProblem as exc:
        return str(exc)
    for meta in sorted((archive / "raw").glob("*/meta.json")):  # each step's own record of what it wrote
        found += manifest.recorded(meta)
    return found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "") if found else None


def digest(archive: Path, prefixes: list[str]) -> str:
    """A digest of what the archive's manifest records for the files under ``prefixes`` (paths inside the
    archive, such as raw/naive/ or raw/provenance.json): it changes when one of them is archived again, so that
    the replay of those files runs again; '' where the manifest cannot be read."""
    try:
        files = manifest.read(archive / MANIFEST)
    except ValueError:
        return ""
    mine = sorted((rel, want.get("sha256", "")) for rel, want in files.items() if rel.startswith(tuple(prefixes)))
    return hashlib.sha256(json.dumps(mine).encode()).hexdigest()[:16]


def _candidates(root: Path) -> list[Path]:
    """Every folder that is, or was, an archive: it has a raw/ folder or a manifest (a deleted provenance makes an
    archive damaged, not absent)."""
    if not root.is_dir():
        return []
    return [p for p in root.glob("*/") if (p / "raw").is_dir() or (p / MANIFEST).is_file()]


def _scan(root: Path) -> tuple[list[Path], dict[str, str]]:
    """(the intact archives, oldest first; the damaged ones, name -> why): every archive checked once."""
    why = {p: _unreadable(p) for p in _candidates(root)}
    found = sorted((p for p, w in why.items() if w is None), key=lambda p: (str(provenance(p).get("date", "")), p.name))
    return found, {p.name: w for p, w in why.items() if w is not None}


def available(root: Path = paths.REFERENCE) -> list[Path]:
    """Archives whose provenance can be read, oldest first (a damaged one is left out: :func:`damaged`)."""
    return _scan(root)[0]


def damaged(root: Path = paths.REFERENCE) -> dict[str, str]:
    """The archives left out of :func:`available`, for a provenance that cannot be read or a file that differs
    from the archive's manifest: name -> why."""
    return _scan(root)[1]


def seal(archive: Path) -> Path:
    """Write the archive's manifest: every file in it (but the manifest), as it is now."""
    files = [f for f in archive.rglob("*") if f.is_file() and f.name != MANIFEST]
    return manifest.write(archive, files, archive / MANIFEST, writer="gpumm archive")


def check(archive: Path) -> None:
    """Raise ArchiveError (one line naming the first file) where the archive's manifest is missing, a file
    differs from it, or a value cannot be (the file, row and column)."""
    fault = _fault(archive)
    if fault:
        remedy = f"restore it (git checkout -- {paths.shown(archive)}) or replay another archive (replay_from)"
        raise ArchiveError(f"archive {archive.name}: {fault}: {remedy}")


def complete(archive: Path) -> bool:
    """Whether an archive holds a whole run: its run.json (written when the workflow finished) says no step
    failed."""
    try:
        record = json.loads((archive / "run.json").read_text())
    except (OSError, ValueError):
        return False
    return record.get("failed_steps") == 0


def choose(name: str, root: Path = paths.REFERENCE) -> Path:
    """The archive to replay: ``name``, or, when name is auto, the newest complete one (else the newest). Auto picks
    among every archive whose provenance reads, damaged or not (a damaged run.json may no longer say the run was
    whole): a damaged pick is refused by name, never replaced by another archive silently."""
    found, bad = _scan(root)
    if name == "auto":
        undated = sorted(p.name for p in _candidates(root) if _unreadable_provenance(p) is not None)
        if undated:  # it may be the newest: auto cannot say which archive it would replay
            others = ", ".join(p.name for p in found)
            raise ArchiveError(
                f"replay_from = 'auto': archive {undated[0]} cannot be dated ({bad[undated[0]]}): restore it (git "
                f"checkout -- {paths.shown(root / undated[0])})"
                + (f", or name the archive to replay (replay_from: {others})" if others else "")
            )
        dated = [p for p in _candidates(root) if _unreadable_provenance(p) is None]
        dated.sort(key=lambda p: (str(provenance(p).get("date", "")), p.name))
        whole = [p for p in dated if p.name in bad or complete(p)]
        pick = (whole or dated)[-1] if dated else None
        if pick is not None and pick.name in bad:
            others = ", ".join(p.name for p in found)
            raise ArchiveError(
                f"replay_from = 'auto': archive {pick.name} is damaged ({bad[pick.name]}): restore it (git checkout "
                f"-- {paths.shown(pick)})"
                + (f", or name the archive to replay (replay_from: {others})" if others else "")
            )
        if pick is not None:
            return pick
    if name in bad:
        raise ArchiveError(f"replay_from = {name!r}: {bad[name]}; restore it or replay another archive")
    if not found:
        raise ArchiveError(f"no archived run under {root}: replay needs one (run the pipeline on a GPU first)")
    for p in found:
        if p.name == name:
            return p
    raise ArchiveError(f"replay_from = {name!r}: no such archive; allowed: auto, {', '.join(p.name for p in found)}")


COST_COLUMNS = ["archive", "gpu", "date", "wall_s", "gpu_busy_s", "gpu_busy_share", "steps", "cores", "gpu_worker"]
COST_COLUMNS += ["model_s"]  # the model's layers (the layers steps, opt-in: workflow/configs/model.yaml), 0 if none


def costs(root: Path = paths.REFERENCE) -> list[dict]:
    """What the whole study cost on each archived run that kept its run.json (gpumm.archive.runrecord), oldest first."""
    rows = []
    for p in available(root):
        try:
            r = json.loads((p / "run.json").read_text())
        except (OSError, ValueError):
            continue
        rows.append(
            {
                "archive": p.name,
                "gpu": (r.get("gpu") or {}).get("name"),
                "date": provenance(p).get("date", "")[:10],
                **{k: r.get(k) for k in COST_COLUMNS[3:-1]},
                "model_s": (r.get("seconds_by_step") or {}).get("layers", 0.0),
            }
        )
    return rows


def slug(gpu_name: str) -> str:
    """A folder name for a GPU: 'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3'."""
    s = re.sub(r"^nvidia\s+", "", gpu_name.strip().lower())
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"


def write(results: Path, root: Path = paths.REFERENCE, name: str | None = None) -> Path:
    """Copy a finished run's results into data/reference/<name or gpu>/, replacing what was there."""
    if not (results / "raw" / "provenance.json").is_file():
        raise ArchiveError(f"{results} holds no finished run (no raw/provenance.json): run the pipeline first")
    if name is not None and not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name):
        raise ArchiveError(f"archive name {name!r}: use lower-case letters, digits, dots and dashes")
    prov = json.loads((results / "raw" / "provenance.json").read_text())
    if prov.get("data_source", {}).get("mode") != "measure":
        raise ArchiveError("only a measured run can be archived; this one was replayed")
    dest = root / (name or slug(prov["gpu"]["name"]))
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for sub, keep in (("raw", KEEP_RAW), ("build", KEEP_BUILD)):
        for d in sorted((results / sub).glob("*/")):
            for f in keep + (_written(d) if sub == "raw" else ()):
                if (d / f).is_file():
                    (tmp / sub / d.name).mkdir(parents=True, exist_ok=True)
                    if f in PACKED:
                        pack_file(d / f, tmp / sub / d.name / f"{f}.gz")
                    else:
                        shutil.copy2(d / f, tmp / sub / d.name / f)
    (tmp / "raw").mkdir(parents=True, exist_ok=True)
    shutil.copy2(results / "raw" / "provenance.json", tmp / "raw" / "provenance.json")
    if (results / "run.json").is_file():  # what the run cost (gpumm.archive.runrecord)
        shutil.copy2(results / "run.json", tmp / "run.json")
    measured = {}  # each variant's numbers stand for the digest it was measured with
    for meta in sorted((tmp / "raw").glob("*/meta.json")):
        found = json.loads(meta.read_text())
        if isinstance(found, dict) and found.get("digest"):
            measured[meta.parent.name] = {"digest": found["digest"], "how": "measured"}
    write_certified(tmp, measured)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def _written(step: Path) -> tuple[str, ...]:
    """The files a step's meta.json says it wrote (its ``files``), kept beside KEEP_RAW: a file a step starts to
    write is archived without a change here (the model step's ceiling.csv was not, in the first archive that had
    it)."""
    try:
        meta = json.loads((step / "meta.json").read_text())
    except (OSError, ValueError):
        return ()
    listed = meta.get("files") if isinstance(meta, dict) else None
    return tuple(f for f in listed if "/" not in f and f not in KEEP_RAW) if isinstance(listed, dict) else ()


def pack_file(src: Path, dst: Path) -> None:
    """``src`` gzipped into ``dst``, the same bytes for the same input (no name or time in the header)."""
    with open(dst, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as z:
        z.write(src.read_bytes())


def unpack_file(src: Path, dst: Path) -> None:
    """The file ``src`` (NAME.gz) holds, written to ``dst``."""
    dst.write_bytes(gzip.decompress(src.read_bytes()))


def pack(archive: Path) -> int:
    """Gzip the PTX and SASS of an archive made before they were kept packed (losslessly: unpacking gives the
    same bytes, which is checked before the original is removed), then write its manifest (:func:`seal`; an
    archive whose files differ from the manifest it has is refused, not sealed; one made before archives kept a
    manifest gets its first); the number of files packed."""
    if (archive / MANIFEST).is_file():
        check(archive)
    done = 0
    for f in sorted((archive / "build").glob("*/*")):
        if f.name in PACKED and f.is_file():
            gz = f.with_name(f.name + ".gz")
            pack_file(f, gz)
            if gzip.decompress(gz.read_bytes()) != f.read_bytes():
                raise ArchiveError(f"packing {f} changed its bytes")
            f.unlink()
            done += 1
    seal(archive)
    return done

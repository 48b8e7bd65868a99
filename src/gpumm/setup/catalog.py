"""The kernel catalog: load it, check it, expand it into runnable variants.

``kernels/catalog.yaml`` lists variant *families*. A family with params (a
compile-time define such as TILE) expands to one :class:`Variant` per value,
named ``<family>_<param><value>`` (``tiled_tile16``); a family without params
is one variant named like the family.
"""

import copy
import dataclasses
import functools
import hashlib
import itertools
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from gpumm.setup import digest, expr, paths, yamlfile

MAX_THREADS_PER_BLOCK = 1024


class CatalogError(ValueError):
    """The catalog, or a selection from it, is not valid."""


@dataclass(frozen=True)
class Variant:
    """One buildable, runnable kernel variant."""

    id: str
    family: str
    kind: str  # cuda | cublas | cpu
    label: str
    flops: str
    bytes: str
    studies: tuple[str, ...]
    file: str | None = None
    entry: str | None = None
    block: tuple[str, str] | None = None
    grid: tuple[str, str] | None = None
    defines: tuple[tuple[str, int], ...] = field(default_factory=tuple)  # params first, then fixed ones
    includes: tuple[str, ...] = ()
    nvcc_flags: tuple[str, ...] = ()
    prepare: tuple[str, tuple[str, str], tuple[str, str]] | None = None  # entry, block, grid
    max_size: int | None = None
    rung_below: str | None = None
    threads: int | None = None  # cpu blas: BLAS threads (None: every core)
    op: str = "matmul"  # what it computes: an operation of gpumm.run.operations
    arch: str | None = None  # a target beyond the run's (sm_90a: Hopper only), else None
    needs: str | None = None  # the least GPU it runs on, built for the run's own (sm_90: a cluster), else None
    sm_blocks: int | None = None  # its blocks one SM runs side by side at full speed each (the FP32 rule's waves)

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    @property
    def on_gpu(self) -> bool:
        return self.kind in ("cuda", "cublas")

    @property
    def is_built(self) -> bool:
        """A variant with a source file to compile: a CUDA kernel, or a C function for the host."""
        return self.file is not None

    @property
    def binary_name(self) -> str | None:
        """The file its build writes and its measurement loads."""
        if self.is_cuda:
            return "kernel.cubin"
        return "libkernel.so" if self.is_built else None

    @property
    def source(self) -> Path | None:
        return paths.KERNELS / self.file if self.file else None

    def inputs(self) -> list[Path]:
        """Every file the build reads: the kernel file and what it includes."""
        return [paths.KERNELS / f for f in (self.file, *self.includes) if f]

    def prepare_dims(self, M: int, N: int, K: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) of the preparation kernel."""
        _, block, grid = self.prepare
        names = self.names(M, N, K)
        g = tuple(int(expr.evaluate(e, names)) for e in grid) + (1,)
        b = tuple(int(expr.evaluate(e, names)) for e in block) + (1,)
        return g, b

    def defines_text(self) -> str:
        """Defines as 'A=1,B=2' ('' when none), the form written to tables."""
        return ",".join(f"{k}={v}" for k, v in self.defines)

    def names(self, M: int = 0, N: int = 0, K: int = 0) -> dict[str, int]:
        return {"M": M, "N": N, "K": K, **dict(self.defines)}

    def block_dims(self) -> tuple[int, int, int]:
        x, y = (int(expr.evaluate(e, self.names())) for e in self.block)
        return (x, y, 1)

    @property
    def grid_names_sms(self) -> bool:
        """Whether the launch grid depends on the GPU's SM count (SMS in the catalog)."""
        return any("SMS" in expr.names_in(e) for e in self.grid)

    def grid_dims(self, M: int, N: int, K: int, sms: int | None = None) -> tuple[int, int, int]:
        """The grid for an M x N x K launch; ``sms`` is the GPU's SM count, for a grid that names SMS (a
        persistent kernel such as `streamk`: one block per SM)."""
        names = self.names(M, N, K)
        if self.grid_names_sms:
            if not sms:
                raise ValueError(f"{self.id}: its grid names SMS; give the GPU's SM count")
            names["SMS"] = sms
        x, y = (int(expr.evaluate(e, names)) for e in self.grid)
        return (x, y, 1)

    def work(self, M: int, N: int, K: int) -> tuple[float, float]:
        """(flops, bytes) of one product by the catalog's model."""
        names = self.names(M, N, K)
        return (float(expr.evaluate(self.flops, names)), float(expr.evaluate(self.bytes, names)))

    def digest(self) -> str:
        """Digest of everything that decides what this variant runs (gpumm.setup.digest): its catalog entry as
        expanded (kind, entry, defines, flags, launch geometry, preparation, threads, work model, target), the
        tokens of its source and of every file it includes, and the measurement method's version. A change to
        any of them marks an archived measurement stale, unless ``python -m gpumm certify`` finds the same SASS."""
        # `needs` says where a build may run, `sm_blocks` how the FP32 rule reads it: not what it runs
        skip = ("label", "studies", "rung_below", "needs", "sm_blocks")
        entry = {k: v for k, v in dataclasses.asdict(self).items() if k not in skip}
        sources = {f.relative_to(paths.KERNELS).as_posix(): f.read_text() for f in self.inputs()}
        return digest.of(entry, sources)


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def included(file: str) -> tuple[str, ...]:
    """Every file under kernels/ that ``file`` (a path under kernels/) includes with ``#include "..."``, directly
    or through another, as paths under kernels/, in the order first met; a header that does not exist is a
    CatalogError naming the file that includes it. Read once per kernels folder and file in a process (the
    catalog's check and each of a family's variants ask)."""
    return _included(paths.KERNELS, file)


@functools.cache
def _included(kernels: Path, file: str) -> tuple[str, ...]:
    found: list[str] = []
    todo = [file]
    while todo:
        at = todo.pop(0)
        for name in _INCLUDE.findall((kernels / at).read_text()):
            rel = posixpath.normpath(posixpath.join(posixpath.dirname(at), name))
            if not (kernels / rel).is_file():
                raise CatalogError(f"catalog: kernels/{at} includes {name!r}: no file kernels/{rel}")
            if rel != file and rel not in found:
                found.append(rel)
                todo.append(rel)
    return tuple(found)


def read_yaml(text: str, name: str = "<string>"):
    """Parse YAML strictly (a key given twice is an error naming file, line and column: gpumm.setup.yamlfile),
    with libyaml's C parser where PyYAML has it (the catalog is read by every step of the pipeline)."""
    return yamlfile.loads(text, name)


def microbenchmarks(path: Path = paths.CATALOG) -> dict:
    """The catalog's memory micro-benchmarks by name (file, entries), each file checked to exist."""
    micro = copy.deepcopy(_checked(path).get("microbenchmarks", {}))
    for name, m in micro.items():
        if not (paths.KERNELS / m["file"]).is_file():
            raise CatalogError(
                f"catalog: microbenchmarks.{name}: kernel file {paths.KERNELS / m['file']} does not exist"
            )
    return micro


_CHECKED: dict[tuple, dict] = {}  # catalogs already read and checked, by (path, text)
# The fingerprint (catalog and schema text) of the catalog this process checked: the steps it starts
# (Snakemake's jobs, about a hundred of them) inherit it and do not check that same text again
CHECKED_ENV = "GPUMM_CATALOG_CHECKED"


def load(path: Path = paths.CATALOG) -> dict:
    """Read and check the catalog; return its families by name (a copy the caller may change)."""
    return copy.deepcopy(_checked(path)["variants"])


def _checked(path: Path) -> dict:
    """The catalog document, checked; one already checked in this process, with the same text, is not parsed
    or checked again."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise CatalogError(f"cannot read the kernel catalog {path}: {exc}") from exc
    key = (str(path), text)
    if key not in _CHECKED:
        _CHECKED[key] = _check(path, text)
    return _CHECKED[key]


def _check(path: Path, text: str) -> dict:
    try:
        data = read_yaml(text, paths.shown(path))
    except yamlfile.YamlFileError as exc:
        raise CatalogError(f"kernel catalog: {exc}") from None
    schema_text = paths.CATALOG_SCHEMA.read_text()
    fingerprint = hashlib.sha256((text + "\0" + schema_text).encode()).hexdigest()[:32]
    if os.environ.get(CHECKED_ENV) == fingerprint:
        return data
    import jsonschema  # a tenth of a second to import: only where the catalog is checked

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(read_yaml(schema_text, paths.shown(paths.CATALOG_SCHEMA))).iter_errors(data)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise CatalogError(f"kernel catalog: {paths.shown(path)}: {where}: {error.message}")
    families = data["variants"]
    for name, fam in families.items():
        _check_family(name, fam, families)
    os.environ[CHECKED_ENV] = fingerprint
    return data


def _check_family(name: str, fam: dict, families: dict) -> None:
    below = fam.get("rung_below")
    if below is not None and below not in families:
        raise CatalogError(f"catalog: {name}.rung_below: no family {below!r}")
    if fam["kind"] == "cuda" or fam.get("file"):
        if not (paths.KERNELS / fam["file"]).is_file():
            raise CatalogError(f"catalog: {name}: kernel file {paths.KERNELS / fam['file']} does not exist")
        included(fam["file"])  # each header it names must exist
    if fam["kind"] != "cuda":
        if "tune" in fam:
            raise CatalogError(f"catalog: {name}.tune: only a CUDA family can be tuned")
        return
    if "tune" in fam and "params" in fam:
        raise CatalogError(f"catalog: {name}: a family has `tune` or `params`, not both")
    for key, cand in fam.get("tune", {}).items():
        unknown = set(cand) - set(fam.get("defines", {})) - {"needs"}
        if unknown:
            raise CatalogError(f"catalog: {name}.tune.{key}: {sorted(unknown)} are not among the family's defines")
    params = fam.get("params", {})
    allowed = {"M", "N", "K", *params, *fam.get("defines", {})}
    for flag in fam.get("nvcc_flags", []):
        unknown = set(re.findall(r"{(\w+)}", flag)) - set(params)
        if unknown:
            raise CatalogError(f"catalog: {name}.nvcc_flags: {flag!r} names no param {sorted(unknown)}")
    prep = fam.get("prepare", {})
    checks = [("block", fam["block"]), ("grid", fam["grid"]), ("flops", [fam["flops"]]), ("bytes", [fam["bytes"]])]
    checks += [("prepare.block", prep.get("block", [])), ("prepare.grid", prep.get("grid", []))]
    for key, items in checks:
        for text in items:
            try:  # the grid may also name SMS, the GPU's SM count (given at launch)
                unknown = expr.names_in(text) - allowed - ({"SMS"} if key == "grid" else set())
            except SyntaxError as exc:
                raise CatalogError(f"catalog: {name}.{key}: cannot parse {text!r}") from exc
            if unknown:
                raise CatalogError(f"catalog: {name}.{key}: unknown names {sorted(unknown)} in {text!r}")
    for pname, spec in params.items():
        bad = [v for v in spec["default"] if not spec["min"] <= v <= spec["max"]]
        if bad:
            raise CatalogError(f"catalog: {name}.params.{pname}: defaults {bad} outside {spec['min']}..{spec['max']}")


def expand(
    selection: dict[str, dict[str, list[int]]], families: dict | None = None, tune: bool = True
) -> list[Variant]:
    """Turn the config's ``variants`` selection into Variants, checking every value.

    A family with a tuning search (``tune``) gives one variant per candidate, ``family_key``, its defines
    replacing the family's; with ``tune`` false (the config's ``tune: false``) only the first candidate.
    Raises CatalogError naming the config key and what is allowed.
    """
    families = load() if families is None else families
    out: list[Variant] = []
    for name, chosen in selection.items():
        if name not in families:
            raise CatalogError(f"variants.{name}: unknown variant; allowed: {', '.join(sorted(families))}")
        fam, chosen = families[name], chosen or {}
        values = _param_values(name, fam, chosen)
        combos = list(itertools.product(*values.values())) if values else [()]
        candidates = list(fam.get("tune", {}).items())
        if candidates and "_candidate" in chosen:  # from_id: one candidate by its key
            candidates = [(k, c) for k, c in candidates if k == chosen["_candidate"]]
        elif candidates and not tune:
            candidates = candidates[:1]
        for combo, (key, cand) in itertools.product(combos, candidates or [(None, {})]):
            out.append(_variant(name, fam, dict(zip(values.keys(), combo)), key, cand))
    return out


def _param_values(name: str, fam: dict, chosen: dict) -> dict[str, list[int]]:
    """Each of the family's params: the values chosen (else its default), checked against its range."""
    params = fam.get("params", {})
    for pname in chosen:
        if pname == "_candidate" and "tune" in fam:
            continue
        if pname not in params:
            allowed = ", ".join(params) or "none (this variant has no params)"
            raise CatalogError(f"variants.{name}.{pname}: unknown param; allowed: {allowed}")
    values = {}
    for pname, spec in params.items():
        vals = chosen.get(pname, spec["default"])
        for v in vals:
            if not spec["min"] <= v <= spec["max"]:
                raise CatalogError(
                    f"variants.{name}.{pname}: {v} is not allowed; allowed: integers {spec['min']} to {spec['max']}"
                )
        values[pname] = sorted(set(vals))
    return values


def _variant(name: str, fam: dict, chosen_params: dict, key: str | None, cand: dict) -> Variant:
    """One build of family ``name``: its params' values and tuning candidate ``key`` (its defines ``cand``)."""
    vid = name + "".join(f"_{k.lower()}{v}" for k, v in chosen_params.items()) + (f"_{key}" if key else "")
    prep = fam.get("prepare")
    variant = Variant(
        id=vid,
        family=name,
        kind=fam["kind"],
        label=fam["label"],
        flops=fam["flops"],
        bytes=fam["bytes"],
        studies=tuple(fam["studies"]),
        file=fam.get("file"),
        entry=fam.get("entry"),
        block=tuple(fam["block"]) if "block" in fam else None,
        grid=tuple(fam["grid"]) if "grid" in fam else None,
        defines=tuple(chosen_params.items())
        + tuple({**fam.get("defines", {}), **{k: v for k, v in cand.items() if k != "needs"}}.items()),
        includes=included(fam["file"]) if fam.get("file") else (),
        nvcc_flags=tuple(f.format(**chosen_params) for f in fam.get("nvcc_flags", [])),
        prepare=(prep["entry"], tuple(prep["block"]), tuple(prep["grid"])) if prep else None,
        max_size=fam.get("max_size"),
        rung_below=fam.get("rung_below"),
        threads=fam.get("threads"),
        op=fam.get("op", "matmul"),
        arch=fam.get("arch"),
        needs=cand.get("needs", fam.get("needs")),
        sm_blocks=fam.get("sm_blocks"),
    )
    if variant.is_cuda:
        threads = variant.block_dims()[0] * variant.block_dims()[1]
        if threads > MAX_THREADS_PER_BLOCK:
            raise CatalogError(
                f"variants.{name}: {variant.defines_text()} gives {threads} threads per block; "
                f"at most {MAX_THREADS_PER_BLOCK} allowed"
            )
    return variant


def from_id(vid: str, families: dict | None = None) -> Variant:
    """The variant a name such as ``tiled_tile16`` stands for."""
    families = load() if families is None else families
    for name, fam in families.items():
        for key in fam.get("tune", {}):
            if vid == f"{name}_{key}":
                return expand({name: {"_candidate": key}}, families)[0]
        params = list(fam.get("params", {}))
        pattern = re.escape(name) + "".join(f"_{p.lower()}(\\d+)" for p in params)
        m = re.fullmatch(pattern, vid)
        if m and "tune" not in fam:
            return expand({name: {p: [int(g)] for p, g in zip(params, m.groups())}}, families)[0]
    raise CatalogError(f"unknown variant {vid!r}")


def header(family: str, families: dict | None = None) -> str:
    """What a family's kernel file says it is: the first paragraph of the comment it opens with, on one line ("" for
    a library call or a file without one)."""
    fam = (families if families is not None else load()).get(family, {})
    path = paths.KERNELS / fam["file"] if fam.get("file") else None
    if path is None or not path.is_file():
        return ""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("//"):
            break
        text = line[2:].strip()
        if not text and lines:
            break
        if text:
            lines.append(text)
    return " ".join(lines)


EXCERPTS = paths.KERNELS / "excerpts.yaml"


def excerpt(family: str, families: dict | None = None, path: Path = EXCERPTS) -> tuple[str, str]:
    """(the lines of a family's kernel file that are its idea, where they are: "lines 12-14"), as
    ``kernels/excerpts.yaml`` selects them; ("", "") for a family without one. ValueError naming the family where a
    piece's start matches no line or more than one."""
    pieces = yamlfile.load(path).get(family) if path.is_file() else None
    if not pieces:
        return "", ""
    fam = (families if families is not None else load()).get(family, {})
    found = []
    for piece in pieces if isinstance(pieces, list) else [pieces]:
        name = piece.get("file", fam["file"])  # the family's kernel file, or a header of it
        lines = (paths.KERNELS / name).read_text().splitlines()
        at = [i for i, line in enumerate(lines) if re.search(piece["start"], line)]
        if len(at) != 1:
            raise ValueError(
                f"{paths.shown(path)}: {family}: {piece['start']!r} matches {len(at)} lines of kernels/{name}"
                " (one wanted)"
            )
        found.append((name, at[0], at[0] + int(piece["lines"]), lines))
    found.sort(key=lambda f: (f[0] != fam["file"], f[0], f[1]))
    text = "\n    ...\n".join(_dedent(lines[a:b]) for _, a, b, lines in found)
    where = ", ".join(
        ("" if name == fam["file"] else f"{name} ") + (f"line {a + 1}" if b == a + 1 else f"lines {a + 1}-{b}")
        for name, a, b, _ in found
    )
    return text, where


def _dedent(lines: list[str]) -> str:
    """The lines without the indent they share, preprocessor lines (at column 0) left out of the count."""
    indents = [len(x) - len(x.lstrip()) for x in lines if x.strip() and not x.lstrip().startswith("#")]
    cut = min(indents, default=0)
    return "\n".join(x[cut:] if x[:cut].strip() == "" else x.lstrip() for x in lines)


def changed(variant_id: str, recorded: str | None) -> bool:
    """Whether today's code no longer makes the numbers measured under the digest ``recorded`` (None: none was
    recorded) of ``variant_id``: its digest differs, or the catalog no longer has it."""
    try:
        return from_id(variant_id).digest() != recorded
    except CatalogError:
        return True


def runs_on(variant: Variant, gpu_arch: str) -> bool:
    """Whether ``variant`` can run on a GPU of ``gpu_arch`` (sm_90, sm_80, ...): an sm_90a kernel only on sm_90;
    a build that ``needs`` sm_90 (a thread-block cluster) on sm_90 and later."""
    if variant.arch is not None and variant.arch.rstrip("a") != gpu_arch.rstrip("a"):
        return False
    return variant.needs is None or _cc(gpu_arch) >= _cc(variant.needs)


def _cc(arch: str) -> int:
    """sm_90a -> 90."""
    return int(re.sub(r"\D", "", arch))

"""The generated parts of the README and the manual: written from the archives, the schema and the catalog, never
typed, so that they cannot go stale unnoticed (``python -m gpumm docs``; ``--check`` says what differs).

A generated part of a Markdown file sits between two comment lines, ``<!-- BEGIN name: ... -->`` and
``<!-- END name -->``; only the lines between them are written. The README's figure is written with the CSV of
what it draws, and the PNG carries that CSV's SHA-256 in its metadata, so a test can tell that the figure was
drawn from the data without comparing images across matplotlib versions.
"""

import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gpumm.analyse import headlines, paired, tables
from gpumm.archive import reference
from gpumm.report import manual
from gpumm.setup import catalog, paths, yamlfile

README = paths.ROOT / "README.md"
CONFIG = paths.ROOT / "config.yaml"
DOCS = paths.ROOT / "docs"
FIGURE = DOCS / "figures" / "ladder.png"
FIGURE_DATA = DOCS / "figures" / "ladder.csv"
DIGEST_KEY = "Data-SHA256"  # the PNG's text chunk naming the SHA-256 of FIGURE_DATA
BLOCK = re.compile(r"^<!-- BEGIN (?P<name>[\w-]+)(?::[^>]*)? -->\n(?P<body>.*?)^<!-- END (?P=name) -->$", re.M | re.S)


class DocsError(RuntimeError):
    """A file without the generated part it should hold."""


@dataclass
class Archived:
    """One archive's tables, as its replay's collect step would make them, and its run record."""

    name: str
    tables: dict
    provenance: dict
    run: dict


def archived(root: Path = paths.REFERENCE) -> list[Archived]:
    """Every complete archive under ``root``, in name order."""
    found = []
    for folder in reference.available(root):
        if not reference.complete(folder):
            continue
        prov = reference.provenance(folder)
        variants = []
        for vid in prov.get("variant_digests", {}):
            try:
                variants.append(catalog.from_id(vid))
            except catalog.CatalogError:  # a variant the catalog no longer has
                continue
        run = json.loads((folder / "run.json").read_text())
        found.append(Archived(folder.name, tables.make(variants, folder), prov, run))
    return sorted(found, key=lambda a: a.name)


def _gpu(a: Archived) -> str:
    return (a.provenance.get("gpu") or {}).get("name", a.name).replace("NVIDIA ", "")


def _share(b: dict) -> str:
    """A best share as the README's table says it: the share, its 95% interval where it was paired, the kernel."""
    if b["regime"] == paired.PAIRED_REGIME:
        return f"{b['share']:.1%} ± {50 * (b['high'] - b['low']):.1f} (`{b['variant']}`, paired)"
    return f"{b['share']:.1%} (`{b['variant']}`)"


def headline_table(runs: list[Archived]) -> str:
    """The README's table: the headline numbers of every archive, one column each."""
    rows: dict[str, list[str]] = {}

    def put(what: str, k: int, text: str) -> None:
        rows.setdefault(what, ["—"] * len(runs))[k] = text

    for k, a in enumerate(runs):
        t = a.tables
        v = t.get("verdicts")
        for n in (4096, 8192):
            b = headlines.best_share(t["summary"], n, verdicts=v)
            if b:
                what = f"Fastest hand-written FP32 kernel, share of cuBLAS at {n}³"
                put(what, k, _share(b))
        for n in (4096, 8192):  # the race on the tensor cores: "—" for an archive that predates it
            b = headlines.best_share(t["summary"], n, "matmul_bf16", verdicts=v)
            what = f"Fastest hand-written BF16 kernel, share of cuBLAS BF16 at {n}³ (tensor cores)"
            put(what, k, _share(b) if b else "not in this archive")
        for race, op in (("fp32", "FP32"), ("bf16", "BF16")):
            e = headlines.efficiency(v, race)
            if e:
                what = f"Most energy-efficient hand-written {op} kernel, {e['unit']} against the library's"
                put(what, k, f"{e['ratio']:.2f}× (`{e['variant']}`, {e['hand']:,.0f} {e['unit']} at {e['n']}³)")
        g = t["transpose_goal"]
        if len(g) and str(g.measured.iloc[0]) == "True":
            g = g.iloc[0]
            put(
                "Best transpose, share of the device-to-device copy (8192 and 16384)",
                k,
                f"{g.of_device_copy:.1%} (`{g.best}`)",
            )
        h = t["headlines"].set_index("key")
        for key, what in (
            ("rows_over_cols", "Reading a matrix by rows (uncoalesced) against by columns, the matrices in DRAM"),
            ("zero_copy_cublas", "cuBLAS in zero-copy (UVA) memory against device memory"),
            ("cold_managed_cublas", "cuBLAS on a cold managed (unified) run against device memory"),
            ("launch_floor", "Launch floor: an empty kernel in a CUDA graph"),
        ):
            if key in h.index:
                put(what, k, str(h.at[key, "value"]))
        busy, layers = a.run.get("gpu_busy_share"), (a.run.get("seconds_by_step") or {}).get("layers", 0.0)
        wall = f"{a.run['wall_s']:.1f} s" + (f" (GPU busy {busy:.0%})" if busy is not None else "")
        wall += f"; with the model's layers, {layers:.0f} s of it" if layers else ""
        put("The whole study, wall time", k, wall)
    head = [
        f"{_gpu(a)} (`{a.name}`, {a.provenance.get('date', '')[:10]}, {a.provenance.get('git_commit', '')[:7]})"
        for a in runs
    ]
    lines = ["| | " + " | ".join(head) + " |", "| --- |" + " --- |" * len(runs)]
    lines += [f"| {what} | " + " | ".join(cells) + " |" for what, cells in rows.items()]
    return "\n".join(lines)


def _stale(certified: dict[str, str], variant: str) -> bool:
    """Whether today's code no longer makes the archived numbers of ``variant`` (its digest is not the one its
    archive certifies, ``certified``: gpumm.archive.reference.certified)."""
    return catalog.changed(variant, certified.get(variant))


def ladder_data(runs: list[Archived]) -> pd.DataFrame:
    """What the README's figure draws: every GPU family's best build at 4096³ and its share of cuBLAS, per GPU,
    and whether that build is stale for today's code."""
    frames = []
    for a in runs:
        lad = a.tables["ladder"]
        lad = lad[lad.gflops.notna()]
        certified = reference.certified(paths.REFERENCE / a.name)
        frames.append(
            pd.DataFrame(
                {
                    "gpu": _gpu(a),
                    "archive": a.name,
                    "family": lad.family,
                    "variant": lad.best_variant,
                    "tflops": (lad.gflops / 1e3).round(2),
                    "share_of_cublas": (100 * lad.share_of_cublas).round(1),
                    "stale": [_stale(certified, v) for v in lad.best_variant],
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def ladder_csv(runs: list[Archived]) -> bytes:
    return ladder_data(runs).to_csv(index=False, lineterminator="\n").encode()


def ladder_png(data: bytes) -> bytes:
    """The figure: one bar per GPU for each rung, its share of cuBLAS at 4096³; the CSV's digest in its metadata."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = pd.read_csv(io.BytesIO(data))
    order = list(dict.fromkeys(d.family))
    gpus = list(dict.fromkeys(d.gpu))
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(order) + 1.2))
    height = 0.8 / max(len(gpus), 1)
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]
    for k, gpu in enumerate(gpus):
        g = d[d.gpu == gpu].set_index("family").reindex(order)
        y = [i + (k - (len(gpus) - 1) / 2) * height for i in range(len(order))]
        stale = g.stale.fillna(False).astype(bool) if "stale" in g else pd.Series(False, index=g.index)
        bars = ax.barh(y, g.share_of_cublas, height=height * 0.95, color=colours[k % 4], label=gpu)
        for bar, yi, share, old in zip(bars, y, g.share_of_cublas, stale):
            if old:  # numbers today's code does not make: hatched and said
                bar.set_hatch("///")
                bar.set_alpha(0.5)
            if share == share:
                text = f"{share:.0f}%" + (" stale" if old else "")
                ax.annotate(text, (share, yi), xytext=(2, 0), textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(range(len(order)), order, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 112)
    ax.set_xlabel("share of the same run's cuBLAS SGEMM at 4096³ (%), FP32")
    ax.axvline(100, color="grey", lw=0.8, ls=":")
    ax.legend(loc="upper right", fontsize=8, title="archived run", title_fontsize=8)
    ax.set_title("The ladder: each rung's fastest build against cuBLAS, per archived GPU", fontsize=10)
    fig.tight_layout()
    out = io.BytesIO()
    meta = {DIGEST_KEY: hashlib.sha256(data).hexdigest(), "Software": "python -m gpumm docs"}
    fig.savefig(out, format="png", dpi=110, metadata=meta)
    plt.close(fig)
    return out.getvalue()


def png_digest(png: Path) -> str | None:
    """The data digest a figure written by :func:`ladder_png` carries, or None."""
    from PIL import Image

    with Image.open(png) as im:
        return (getattr(im, "text", None) or {}).get(DIGEST_KEY)


def cost_table(runs: list[Archived]) -> str:
    """What the whole study cost on each archive (its run.json)."""
    lines = [
        "| archive | GPU | date | wall time | GPU busy | measuring | profiling | the model's layers "
        "| builds (CPU, beside the GPU) | pages | steps |",
        "| --- |" + " --- |" * 10,
    ]
    for a in runs:
        r, s = a.run, a.run.get("seconds_by_step", {})
        busy = f"{r['gpu_busy_s']:.1f} s ({r['gpu_busy_share']:.0%})" if r.get("gpu_busy_s") is not None else "—"
        sec = [f"{s[k]:.1f} s" if k in s else "—" for k in ("measure", "profile", "layers", "build", "pages")]
        machine = f"{_gpu(a)}, {r['cores']} CPU cores" if r.get("cores") else _gpu(a)
        lines.append(
            f"| `{a.name}` | {machine} | {a.provenance.get('date', '')[:10]} | **{r['wall_s']:.1f} s** | "
            f"{busy} | " + " | ".join(sec) + f" | {r.get('steps', '—')}, {r.get('failed_steps', 0)} failed |"
        )
    return "\n".join(lines)


def _value(v, width: int = 60) -> str:
    """A value of config.yaml as a short flow-style text: a long list or mapping keeps its first items and says how
    many it has."""
    if isinstance(v, dict):
        items, ends = [f"{k}: {_value(x, width)}" for k, x in v.items()], "{}"
    elif isinstance(v, list):
        items, ends = [_value(x, width) for x in v], "[]"
    elif v is None:
        return "null"
    else:
        return str(v).lower() if isinstance(v, bool) else str(v)
    text = ends[0] + ", ".join(items) + ends[1]
    if len(text) <= width:
        return text
    kept: list[str] = []
    for item in items:
        if len(", ".join([*kept, item])) > width - 20:
            break
        kept.append(item)
    if not kept and isinstance(v, dict):  # the keys at least
        return "{" + ", ".join(f"{k}: …" for k in v) + "}"
    return ends[0] + ", ".join([*kept, "…"]) + ends[1] + f" ({len(items)} in all)"


def _range(node: dict) -> str:
    lo = node.get("minimum", node.get("exclusiveMinimum"))
    hi = node.get("maximum")
    if lo is not None and hi is not None:
        return f" {lo} to {hi}"
    if "exclusiveMinimum" in node:
        return f" above {node['exclusiveMinimum']}"
    return f" from {lo}" if lo is not None else ""


def allowed(node: dict, many: bool = False) -> str:
    """What the schema accepts at ``node``, in words (``many``: as the items of a list)."""
    if "enum" in node:
        return ", ".join(f"`{e}`" for e in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(allowed(n, many) for n in node.get("oneOf", node.get("anyOf")))
    kind = node.get("type")
    if kind in ("integer", "number"):
        word = {("integer", False): "an integer", ("integer", True): "integers"}.get((kind, many))
        return (word or ("numbers" if many else "a number")) + _range(node)
    if kind == "boolean":
        return "`true` or `false`"
    if kind == "null":
        return "`null`"
    if kind == "string":
        text = "strings" if many else "a string"
        return f"{text} matching `{node['pattern']}`" if "pattern" in node else text
    if kind == "array":
        lo, hi = node.get("minItems"), node.get("maxItems")
        inner = allowed(node["items"], True) if node.get("items") else "values"
        if lo is not None and lo == hi:
            text = f"{lo} {inner}"
        else:
            text = inner + (f", at least {lo}" if lo else "")
        return f"[{text}]" if many else f"a list of {text}"
    if kind == "object":
        extra = node.get("additionalProperties")
        text = "mappings" if many else "a mapping"
        return text + (f" of names to {allowed(extra)}" if isinstance(extra, dict) else "")
    return "anything"


def _keys(node: dict, prefix: str = ""):
    """(dotted key, schema node) of every key a user sets: an object whose keys all say what they are is opened."""
    for name, child in node.get("properties", {}).items():
        key = f"{prefix}{name}"
        inner = child.get("properties", {})
        if inner and all("description" in c for c in inner.values()):
            yield from _keys(child, key + ".")
        else:
            yield key, child


def config_table(schema: dict | None = None, config: dict | None = None) -> str:
    """Every key of the configuration: its value in config.yaml, what the schema allows, what it means."""
    schema = schema or yamlfile.load(paths.SCHEMAS / "config.schema.yaml")
    config = config if config is not None else yamlfile.load(CONFIG)
    lines = ["| key | in `config.yaml` | allowed | meaning |", "| --- | --- | --- | --- |"]
    for key, node in _keys(schema):
        value: object = config
        for part in key.split("."):
            value = value.get(part, KeyError) if isinstance(value, dict) else KeyError
        shown = f"`{_value(value)}`" if value is not KeyError else f"not set (default `{_value(node.get('default'))}`)"
        cells = [f"`{key}`", shown, allowed(node), node.get("description", "")]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def _file_link(fam: dict) -> str:
    if fam.get("file"):
        return f"[`{fam['file']}`](../kernels/{fam['file']})"
    if fam.get("kind") == "cublas":
        return "cuBLAS, called in [`run/cublas.py`](../src/gpumm/run/cublas.py)"
    return "NumPy's BLAS, called in [`run/launch.py`](../src/gpumm/run/launch.py)"


def _builds(fam: dict, chosen: dict) -> str:
    """The builds of a family: its tuning candidates, or each param's values (config.yaml's, else the catalog's)."""
    if fam.get("tune"):
        return "tuning candidates " + ", ".join(f"`{k}`" for k in fam["tune"])
    params = fam.get("params", {})
    if params:
        return "; ".join(
            f"{p} " + ", ".join(str(x) for x in chosen.get(p, spec["default"])) for p, spec in params.items()
        )
    return "1"


def kernel_table(families: dict | None = None, config: dict | None = None) -> str:
    """Every family of the catalog, in its order: the file, the builds config.yaml asks for, what it is, the rung
    below, study IDs."""
    families = families if families is not None else catalog.load()
    config = config if config is not None else yamlfile.load(CONFIG)
    lines = ["| family | op | file | builds | what it is | improves on | study IDs |", "| --- |" + " --- |" * 6]
    for name, fam in families.items():
        chosen = (config.get("variants") or {}).get(name) or {}
        below = f"`{fam['rung_below']}`" if fam.get("rung_below") else ""
        lines.append(
            f"| `{name}` | {fam.get('op', 'matmul')} | {_file_link(fam)} | {_builds(fam, chosen)} | "
            f"{fam.get('label', '')} | {below} | {', '.join(fam.get('studies', []))} |"
        )
    return "\n".join(lines)


def blocks(runs: list[Archived]) -> dict[Path, dict[str, str]]:
    """Every generated part: file -> block name -> its lines."""
    png, csv = (f.relative_to(README.parent).as_posix() for f in (FIGURE, FIGURE_DATA))
    figure = (
        f"![Each rung's share of cuBLAS at 4096³ on each archived GPU]({png})\n\n"
        f"*The figure and the table are written from the archives by `python -m gpumm docs` "
        f"(the figure's numbers: [`{csv}`]({csv})).*"
    )
    return {
        README: {"headlines": headline_table(runs) + "\n\n" + figure},
        DOCS / "running.md": {"study-cost": cost_table(runs)},
        DOCS / "configuration.md": {"config-keys": config_table()},
        DOCS / "kernels.md": {"kernel-families": kernel_table()},
        DOCS / "tables.md": {"rules": manual.rules_table(), "tables": manual.tables_page(_columns(runs))},
        DOCS / "sources.md": {"sources": manual.sources_table()},
    }


def _columns(runs: list[Archived]) -> dict[str, list[str]]:
    """Each table's columns, from the newest archive's tables; a column named for that run's GPU is named
    ``<this run's GPU>`` (the page is the same whichever archive is newest)."""
    newest = max(runs, key=lambda a: str(a.provenance.get("date", "")), default=None)
    gpu = str((newest.provenance.get("gpu") or {}).get("name", "")) if newest else ""
    name = {gpu: "<this run's GPU>"} if gpu else {}
    return {table: [name.get(c, c) for c in df.columns] for table, df in (newest.tables if newest else {}).items()}


def fill(text: str, generated: dict[str, str], where: str) -> str:
    """``text`` with each named block's lines replaced by ``generated``'s."""
    found = {m.group("name") for m in BLOCK.finditer(text)}
    missing = set(generated) - found
    if missing:
        raise DocsError(
            f"{where}: no generated part named {', '.join(sorted(missing))} (<!-- BEGIN name --> ... <!-- END name -->)"
        )

    def put(m: re.Match) -> str:
        name = m.group("name")
        if name not in generated:
            return m.group(0)
        begin = m.group(0).split("\n", 1)[0]
        return f"{begin}\n{generated[name].rstrip()}\n<!-- END {name} -->"

    return BLOCK.sub(put, text)


def stale(runs: list[Archived]) -> list[str]:
    """One line per generated part that differs from what would be written now; [] when all are current."""
    out = []
    for path, parts in blocks(runs).items():
        text = path.read_text()
        if fill(text, parts, paths.shown(path)) != text:
            names = [n for n in parts if fill(text, {n: parts[n]}, paths.shown(path)) != text]
            out.append(
                f"{paths.shown(path)}: {', '.join(names)} differ from what the archives, schema and catalog give now"
            )
    data = ladder_csv(runs)
    if not FIGURE_DATA.is_file() or FIGURE_DATA.read_bytes() != data:
        out.append(f"{paths.shown(FIGURE_DATA)}: differs from the archives' ladders")
    if not FIGURE.is_file() or png_digest(FIGURE) != hashlib.sha256(data).hexdigest():
        out.append(f"{paths.shown(FIGURE)}: not drawn from the archives' ladders as they are now")
    return out


def write(runs: list[Archived]) -> list[Path]:
    """Write every generated part, the figure and its data; the files that changed."""
    changed = []
    for path, parts in blocks(runs).items():
        text = path.read_text()
        new = fill(text, parts, paths.shown(path))
        if new != text:
            path.write_text(new)
            changed.append(path)
    data = ladder_csv(runs)
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    if not FIGURE_DATA.is_file() or FIGURE_DATA.read_bytes() != data:
        FIGURE_DATA.write_bytes(data)
        changed.append(FIGURE_DATA)
    if not FIGURE.is_file() or png_digest(FIGURE) != hashlib.sha256(data).hexdigest():
        FIGURE.write_bytes(ladder_png(data))
        changed.append(FIGURE)
    return changed

"""The manual's reference pages, written from the code (``python -m gpumm docs``): every table of
results/tables/ with its columns, the module and rule that make it and the pages that read it; every rule of
the workflow with the step it runs; the sources, their artefact IDs and where each is reproduced."""

import csv
import json
import re
from pathlib import Path

from gpumm.report.pages import PAGES
from gpumm.setup import paths
from gpumm.setup.table_index import TABLES

RULES = paths.ROOT / "workflow" / "rules"
_RULE = re.compile(r"^((?:#[^\n]*\n)*)(?:\n)?rule (\w+):\n(.*?)(?=^\S|\Z)", re.M | re.S)
_STEP = re.compile(r"python -m gpumm (?:--seal '\{output\}' )?(?:--seal-also \S+ )?([\w-]+)")


def readers() -> dict[str, list[str]]:
    """table -> the pages (notebooks) and report modules that read it: ``t["name"]`` or ``tables["name"]`` in a
    page's code cells, ``tables["name"]`` or ``_read(tables, "name")`` in src/gpumm/report/."""
    pattern = re.compile(r"""\b(?:t|tables)\[["']([a-z_0-9]+)["']\]|_read\(tables, ["']([a-z_0-9]+)["']""")
    found: dict[str, list[str]] = {name: [] for name in TABLES}
    sources = [(f"page {p['notebook']}", paths.NOTEBOOKS / f"{p['notebook']}.ipynb") for p in PAGES]
    sources += [(f"`report/{f.name}`", f) for f in sorted((paths.ROOT / "src" / "gpumm" / "report").glob("*.py"))]
    for who, f in sources:
        text = f.read_text()
        if f.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "code")
        for m in pattern.finditer(text):
            name = m.group(1) or m.group(2)
            if name in found and who not in found[name]:
                found[name].append(who)
    return found


def tables_page(columns: dict[str, list[str]]) -> str:
    """One section per table: what a row holds, its columns (``columns``: from an archive's tables), who makes
    it and who reads it."""
    read = readers()
    out = []
    for name, (module, holds) in TABLES.items():
        cols = ", ".join(f"`{c}`" for c in columns.get(name, [])) or "(none in the archive)"
        maker = f"`{module}`" if module.startswith("gpumm") else f"a copy of `{module}`"
        out += [
            f"### `{name}.csv`",
            "",
            f"{holds[0].upper()}{holds[1:]}. Made by {maker}, in rule `collect`; read by "
            f"{', '.join(read[name]) or 'no page (a CSV for the reader)'}.",
            "",
            f"Columns: {cols}.",
            "",
        ]
    return "\n".join(out).rstrip()


def rules_table() -> str:
    """Every rule of workflow/rules/*.smk: its file, the `python -m gpumm` step it runs and the comment above it."""
    lines = ["| rule | file | step | what it does |", "| --- | --- | --- | --- |"]
    for f in sorted(RULES.glob("*.smk")):
        for m in _RULE.finditer(f.read_text()):
            comment = " ".join(x.lstrip("# ").strip() for x in m.group(1).splitlines()).strip()
            step = _STEP.search(m.group(3))
            lines.append(
                f"| `{m.group(2)}` | [`{f.name}`](../workflow/rules/{f.name}) | "
                f"{'`' + step.group(1) + '`' if step else ''} | {comment.replace('|', '/')} |"
            )
    return "\n".join(lines)


def sources_table(studies: Path = paths.STUDIES) -> str:
    """Each source of data/studies.csv, its artefacts (ID, artefact, what it shows) and the page reproducing it."""
    rows = list(csv.DictReader(studies.open(newline="")))
    out, source = [], None
    for r in rows:
        name = r["source"].split(" (")[0]
        if name != source:
            source = name
            out += ["", f"### {r['source']}", "", "| ID | artefact | shows | page |", "| --- | --- | --- | --- |"]
        out.append(f"| {r['id']} | {r['artefact']} | {r['shows']} | {r['page']} |")
    return "\n".join(out).strip()

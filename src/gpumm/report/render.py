"""Render an executed page notebook to the report's HTML: no code, images embedded, the page's title in the
browser tab, tables that never run wider than the page."""

from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from gpumm.report.pages import PAGES

# wide tables scroll inside the page instead of widening it; links and numbers stay on one line
CSS = """<style>
.jp-RenderedHTMLCommon table, .jp-OutputArea-output table { display: block; max-width: 100%; overflow-x: auto; }
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th { white-space: nowrap; }
.jp-RenderedHTMLCommon td:last-child { white-space: normal; }
p.csv { font-size: 0.85em; margin-top: 0.2em; }
</style>
"""


def title(page: str) -> str:
    return next((p["title"] for p in PAGES if p["notebook"] == page), page)


def render(notebook: Path, out: Path) -> None:
    """Write ``out`` from the executed ``notebook`` (whole or not at all)."""
    nb = nbformat.read(notebook, as_version=4)
    nb.metadata["title"] = title(notebook.stem)
    body, _ = HTMLExporter(
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    ).from_notebook_node(nb)
    body = body.replace("</head>", CSS + "</head>", 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(body)
    tmp.replace(out)

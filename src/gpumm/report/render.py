"""Render an executed page notebook to the report's HTML: no code, images embedded, the page's title in the
browser tab, tables that wrap rather than run wider than the page, and nothing fetched from the network.

nbconvert's template loads require.js and MathJax from a CDN; the pages need neither (no widgets, no
formulas), so those scripts are left out and a page opens offline: on a laptop with no network, or on a
cluster's login node.
"""

import re
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from gpumm.report.pages import PAGES

# tables wrap their headers and long text to fit the page (a table wider than the page is a bug the browser test
# catches, not something to scroll); numbers stay on one line; figures carry their captions
CSS = """<style>
.jp-RenderedHTMLCommon table { max-width: 100%; table-layout: auto; }
.jp-RenderedHTMLCommon th { white-space: normal; overflow-wrap: break-word; vertical-align: bottom; }
.jp-RenderedHTMLCommon td { white-space: normal; overflow-wrap: break-word; }
table.gpumm td:first-child, table.t td:first-child { white-space: nowrap; }
p.csv { font-size: 0.85em; margin-top: 0.2em; }
p.banner { background: #fff3cd; border: 1px solid #e0c060; padding: .4em .8em; }
figure.gpumm { margin: 1em 0; max-width: 100%; }
figure.gpumm img { max-width: 100%; height: auto; }
figure.gpumm figcaption { font-size: 0.9em; color: #333; max-width: 60em; }
</style>
"""
# <script src="http..."> of nbconvert's template (require.js, MathJax): fetched from the network, not needed
REMOTE_SCRIPT = re.compile(r"<script[^>]*\ssrc=[\"']https?://[^>]*>\s*</script>\s*", re.I)
# the inline scripts that configure MathJax and require.js, or import a module from the network (mermaid)
INLINE_CONFIG = re.compile(
    r"<script[^>]*>(?:(?!</script>).)*?(?:MathJax|requirejs|mermaid|https?://)(?:(?!</script>).)*?</script>\s*", re.S
)


def offline(body: str) -> str:
    """The page without the scripts it would fetch from the network, or that configure them."""
    return INLINE_CONFIG.sub("", REMOTE_SCRIPT.sub("", body))


def title(page: str) -> str:
    return next((p["title"] for p in PAGES if p["notebook"] == page), page)


def render(notebook: Path, out: Path) -> None:
    """Write ``out`` from the executed ``notebook`` (whole or not at all)."""
    nb = nbformat.read(notebook, as_version=4)
    nb.metadata["title"] = title(notebook.stem)
    body, _ = HTMLExporter(
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    ).from_notebook_node(nb)
    body = offline(body).replace("</head>", CSS + "</head>", 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(body)
    tmp.replace(out)

"""Render an executed page notebook to the report's HTML: no code, images embedded, the page's title in the
browser tab, the report's one page shell and style (:mod:`gpumm.report.style`), and nothing fetched from the network.

nbconvert's basic template gives the cells' HTML alone (no JupyterLab style sheet, no scripts); the pages need no
require.js or MathJax (no widgets, no formulas), and any script that would fetch from the network is left out, so
a page opens offline: on a laptop with no network, or on a cluster's login node.
"""

import re
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from gpumm.report import style
from gpumm.report.pages import PAGES
from gpumm.setup import files

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
        template_name="basic", exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    ).from_notebook_node(nb)
    files.write_text(out, style.page(nb.metadata["title"], offline(body)))

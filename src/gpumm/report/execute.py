"""Execute the report's page notebooks with papermill in one Jupyter kernel, and render each to HTML.

Starting a kernel and importing pandas, matplotlib and seaborn into it costs seconds on a small machine, more
than most pages take to compute. The pages therefore share one kernel, started for the first page: their
imports stay loaded, and every page starts from an emptied namespace (``%reset -f``, run before its first
cell and removed from the executed notebook), so it reads nothing another page defined. Each page sets the
plot style itself (``figures.header``).

Every file is written whole or not at all; a page that fails writes nothing, the other pages run, and the error
names every failed page and its cell.
"""

import sys
import tempfile
import time
from pathlib import Path

import nbformat

from gpumm.report import render
from gpumm.setup import paths

KERNEL = "python3"
RESET_TAG = "gpumm-reset"
# close what a page left open, then forget every name it defined (modules stay imported)
RESET = 'import matplotlib.pyplot\nmatplotlib.pyplot.close("all")\n%reset -f'


# Seconds each page took on one kernel (a replay on the 2-core CI machine, 2026-11-23): how the pages are split
# into groups of about equal work when they run side by side; a page not listed counts as 2 (the tensor
# page, added after that replay, is not timed here).
WEIGHT = {
    "ladder": 3,
    "seed000": 3,
    "seed001": 2,
    "seed002": 3,
    "transpose": 1.5,
    "seed003": 2,
    "coalescing": 1.5,
    "memory_modes": 4.5,
    "compare": 1.5,
    "profiles": 1.5,
}


def groups(pages: list[str], n: int) -> list[list[str]]:
    """``pages`` in at most ``n`` groups of about equal weight (the heaviest page first into the lightest group),
    each group in the pages' own order."""
    n = max(1, min(n, len(pages)))
    bins: list[list[str]] = [[] for _ in range(n)]
    load = [0.0] * n
    for page in sorted(pages, key=lambda p: -WEIGHT.get(p, 2)):
        i = load.index(min(load))
        bins[i].append(page)
        load[i] += WEIGHT.get(page, 2)
    order = {p: k for k, p in enumerate(pages)}
    return [sorted(b, key=order.get) for b in bins if b]


class PageError(RuntimeError):
    """Page notebooks failed; the message names each and its failing cell's error (``failed``: page -> that line;
    the first failure's traceback is the cause)."""

    def __init__(self, failed: dict[str, str]):
        super().__init__("; ".join(failed.values()))
        self.failed = failed


class Unreadable(ValueError):
    """A page notebook that is not a notebook (cut, not JSON): the message names its file, line and column."""


def read(notebook: Path) -> nbformat.NotebookNode:
    """A page notebook, or Unreadable naming the file and, for JSON that does not parse, the parser's line and
    column."""
    import json

    try:
        text = notebook.read_text()
        json.loads(text)
        return nbformat.reads(text, as_version=4)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"{paths.shown(notebook)}:{exc.lineno}:{exc.colno}: not a notebook ({exc.msg})") from None
    except (OSError, UnicodeDecodeError, nbformat.reader.NotJSONError, nbformat.ValidationError) as exc:
        raise Unreadable(f"{paths.shown(notebook)}: not a notebook ({type(exc).__name__}: {exc})") from None


def _with_reset(notebook: Path) -> nbformat.NotebookNode:
    nb = read(notebook)
    cell = nbformat.v4.new_code_cell(RESET)
    cell.metadata["tags"] = [RESET_TAG]
    nb.cells.insert(0, cell)
    return nb


def _without_reset(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.cells = [c for c in nb.cells if RESET_TAG not in c.get("metadata", {}).get("tags", [])]
    return nb


def _cell(notebook: Path, source: str) -> str:
    """Which cell of the notebook as committed ran ``source``: its number, counting from 1, and first line (the
    kernel's execution count would mislead: it goes on from page to page)."""
    cells = nbformat.read(notebook, as_version=4).cells
    number = next((i for i, c in enumerate(cells, 1) if c.source == source), None)
    first = next((line for line in source.splitlines() if line.strip()), "")
    return f"{'cell ' + str(number) if number else 'a cell'} (the one starting {first.strip()!r})"


def _write(nb: nbformat.NotebookNode, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)


def run(
    notebooks: list[Path], executed_dir: Path, html_dir: Path | None, parameters: dict, cwd: Path = Path(".")
) -> list[tuple[str, float]]:
    """Execute each notebook (in this order, one kernel) into ``executed_dir``, then render it into ``html_dir``
    (None: no HTML). Returns (page, seconds) per page. A page that fails writes nothing and the next pages run;
    PageError names every failed page at the end."""
    import papermill as pm
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    sockets = tempfile.TemporaryDirectory(prefix="gpumm-kernel-")  # the kernel talks over local sockets, not TCP
    km = AsyncKernelManager(kernel_name=KERNEL, transport="ipc", ip=str(Path(sockets.name) / "kernel"))
    times = []
    failed, first = {}, None
    try:
        for i, notebook in enumerate(notebooks, 1):
            t0 = time.perf_counter()
            try:
                page = _with_reset(notebook)
            except Unreadable as exc:
                failed[notebook.stem] = f"page {notebook.stem} cannot be read: {exc}"
                print(f"page {i}/{len(notebooks)} {notebook.stem}: cannot be read", file=sys.stderr, flush=True)
                continue
            try:
                nb = pm.execute_notebook(
                    page,
                    None,  # papermill writes nothing; the page is written below, once it has run
                    parameters=parameters,
                    kernel_name=KERNEL,
                    cwd=str(cwd),
                    progress_bar=False,
                    km=km,
                )
            except pm.PapermillExecutionError as exc:
                failed[notebook.stem] = (
                    f"page {notebook.stem} ({notebook}) failed in {_cell(notebook, exc.source)}: "
                    f"{exc.ename}: {exc.evalue}"
                )
                first = first or exc
                print(f"page {i}/{len(notebooks)} {notebook.stem}: failed", file=sys.stderr, flush=True)
                continue
            _write(_without_reset(nb), executed_dir / notebook.name)
            if html_dir is not None:
                render.render(executed_dir / notebook.name, html_dir / f"{notebook.stem}.html")
            times.append((notebook.stem, time.perf_counter() - t0))
            print(f"page {i}/{len(notebooks)} {notebook.stem}: {times[-1][1]:.1f} s", file=sys.stderr, flush=True)
    finally:
        if run_sync(km.is_alive)():
            run_sync(km.shutdown_kernel)(now=True)
        sockets.cleanup()
    if failed:
        raise PageError(failed) from first
    return times

"""The report steps: the pages (papermill, nbconvert) and the front page.

Each step is ``python -m gpumm STEP``; ``gpumm.cli`` collects every stage's steps (:func:`register`).
"""

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from gpumm.setup import paths


def _pages_side_by_side(args, pages: list[str]) -> int:
    """The pages in ``args.jobs`` groups, each a `gpumm pages` process with a kernel of its own, side by side (where
    the machine has the cores, a kernel's start and imports cost less than the pages after the first)."""
    import subprocess
    import tempfile

    from gpumm.report import execute

    groups = execute.groups(pages, args.jobs)
    t0 = time.perf_counter()
    procs = []
    with tempfile.TemporaryDirectory(prefix="gpumm-pages-") as tmp:
        for k, group in enumerate(groups):
            cmd = [sys.executable, "-m", "gpumm", "pages", "--pages", ",".join(group), "--tables", args.tables]
            cmd += ["--notebooks-out", args.notebooks_out, "--out", args.out, "--jobs", "1"]
            cmd += ["--status", str(Path(tmp) / f"{k}.json")] if args.status else []
            env = {k: v for k, v in os.environ.items() if k != "GPUMM_RUN_LOG"}  # the step is recorded once, here
            procs.append(subprocess.Popen(cmd, env=env))
        crashed = [",".join(g) for g, p in zip(groups, procs) if p.wait() != 0]
        failed = {}
        for k in range(len(groups)) if args.status else []:
            with contextlib.suppress(OSError, ValueError):
                failed |= json.loads((Path(tmp) / f"{k}.json").read_text())["failed"]
    if crashed:
        print(f"gpumm pages: the group of {'; '.join(crashed)} failed (see above)", file=sys.stderr)
        return 1
    if args.status:
        _status(Path(args.status), failed)
    print(f"{len(pages)} pages in {len(groups)} kernels side by side in {time.perf_counter() - t0:.1f} s")
    return 0


def _status(path: Path, failed: dict[str, str]) -> None:
    """Write the pages' status (``failed``: page -> the line naming its notebook, cell and error), whole."""
    from gpumm.setup import files

    files.write_text(path, files.json_text({"failed": failed}, indent=1))


def _failed_page(notebook: Path, notebooks_out: Path, out: Path, line: str) -> None:
    """In place of a page that failed: its notebook as committed, and an HTML page that names the failure."""
    import html

    import nbformat

    from gpumm.report import execute, render, style
    from gpumm.setup import files

    notebooks_out.mkdir(parents=True, exist_ok=True)
    try:
        nb = execute.read(notebook)
    except execute.Unreadable:  # in its place, a notebook that says why
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"This page could not be made: {line}")])
    nbformat.write(nb, notebooks_out / notebook.name)
    body = (
        f'<h1>{html.escape(render.title(notebook.stem))}</h1><p class="banner"><b>This page could not be made.</b> '
        f"{html.escape(line)}. The other pages of the report were made; fix the notebook and run the report "
        'again. <a href="index.html">Report index</a></p>'
    )
    files.write_text(out / f"{notebook.stem}.html", style.page(render.title(notebook.stem), body))


TABLES_REMEDY = "run snakemake again, which makes the tables again (python -m gpumm collect by hand)"


def _tables(folder: str) -> Path:
    """The tables folder, checked: collect's tables are there and match its manifest (one line naming a file)."""
    from gpumm.setup import manifest

    d = Path(folder)
    if not (d / "source.json").is_file():
        raise FileNotFoundError(f"{folder}: no tables here (no source.json): run snakemake, or python -m gpumm collect")
    manifest.require(d, TABLES_REMEDY)
    return d


def cmd_pages(args):
    from gpumm.report import execute

    _tables(args.tables)
    notebooks = [paths.ROOT / "notebooks" / f"{page}.ipynb" for page in args.pages.split(",") if page]
    for nb in notebooks:
        if not nb.is_file():
            raise FileNotFoundError(f"no page notebook {nb}")
    from gpumm.report import figures

    for nb in notebooks:  # a page's CSVs are those it writes now (a figure removed or renamed leaves none)
        figures.clear_data(Path(args.tables).parent / "report" / "data", nb.stem)
    if args.jobs > 1 and len(notebooks) > 1:
        return _pages_side_by_side(args, [nb.stem for nb in notebooks])
    try:
        times = execute.run(notebooks, Path(args.notebooks_out), Path(args.out), {"tables_dir": args.tables})
    except execute.PageError as exc:
        print(exc.__cause__, file=sys.stderr)  # the first failing cell's traceback
        for line in exc.failed.values():
            print(f"gpumm pages: {line}", file=sys.stderr)
        if not args.status:
            return 1
        for nb in notebooks:  # the workflow's run: the other pages stay, a failed one says why in its place
            if nb.stem in exc.failed:
                _failed_page(nb, Path(args.notebooks_out), Path(args.out), exc.failed[nb.stem])
        _status(Path(args.status), exc.failed)
        return 0
    if args.status:
        _status(Path(args.status), {})
    print(f"{len(times)} pages in {sum(t for _, t in times):.1f} s")
    return 0


def cmd_pages_check(args):
    """The run's last step: one line per page that could not be made (exit 1), else nothing."""
    failed = json.loads(Path(args.status).read_text()).get("failed") or {}
    for page, line in failed.items():
        print(
            f"gpumm: {line}; the report's other pages were made, this one says why in its place "
            f"(results/report/{page}.html): fix notebooks/{page}.ipynb and run again",
            file=sys.stderr,
        )
    return 1 if failed else 0


def cmd_index(args):
    import pandas as pd

    from gpumm.report import index as report
    from gpumm.report import runpage

    _tables(args.tables)
    out = Path(args.out).parent
    report.write(Path(args.tables), out, pd.read_csv(paths.STUDIES), Path(args.status) if args.status else None)
    runpage.write(Path(args.tables), out)


def cmd_docs(args):
    from gpumm.report import docs

    runs = docs.archived()
    if not runs:
        print("gpumm docs: no complete archive under data/reference/ to write the numbers from", file=sys.stderr)
        return 1
    if args.check:
        found = docs.stale(runs)
        for line in found:
            print(f"gpumm docs: {line}; run python -m gpumm docs", file=sys.stderr)
        return 1 if found else 0
    changed = docs.write(runs)
    said = ", ".join(paths.shown(p) for p in changed) if changed else "nothing: every part was current"
    print(f"gpumm docs: from {len(runs)} archives ({', '.join(r.name for r in runs)}) wrote {said}")
    return 0


def register(sub) -> None:
    """Add this stage's steps to the command line's subparsers."""
    s = sub.add_parser(
        "pages", help="execute the page notebooks (papermill, one kernel) and render each to the report's HTML"
    )
    s.add_argument("--pages", required=True, help="page names in order, comma-separated (notebooks/<page>.ipynb)")
    s.add_argument("--tables", required=True, help="the tidy tables the notebooks read (results/tables)")
    s.add_argument("--notebooks-out", required=True, help="where the executed notebooks go (results/notebooks)")
    s.add_argument("--out", required=True, help="where the HTML pages go (results/report)")
    s.add_argument(
        "--jobs", type=int, default=1, help="kernels side by side, each running a group of the pages (default 1)"
    )
    s.add_argument(
        "--status",
        default="",
        help="the workflow's run: write which pages failed to this JSON file, put a page that says why in the place "
        "of each, and end well (pages-check reports them); by hand, without it, a failed page ends the step with 1",
    )
    s.set_defaults(fn=cmd_pages)

    s = sub.add_parser("pages-check", help="name every page the pages step could not make (exit 1 if any)")
    s.add_argument("--status", required=True, help="the pages' status file (results/notebooks/pages.json)")
    s.set_defaults(fn=cmd_pages_check)

    s = sub.add_parser("index", help="the report's front page")
    s.add_argument("--tables", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--status", default="", help="the pages' status file: pages that could not be made are named")
    s.set_defaults(fn=cmd_index)

    s = sub.add_parser(
        "docs",
        help="write the generated parts of README.md and docs/ (headline table, figure, costs, config keys, "
        "kernel families) from the archives, the config schema and the catalog",
    )
    s.add_argument("--check", action="store_true", help="write nothing; name each part that differs (exit 1)")
    s.set_defaults(fn=cmd_docs)

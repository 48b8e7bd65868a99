"""The report's front page, and the data-source line and links every page starts with.

- ``index.html`` leads: what the study is, the run (GPU, date, commit, what it cost), the headline numbers
  (each from the tables, linked to the section that shows it), a short path through the pages, every page and
  study ID linked to its section.
- ``run.html``, the bookkeeping, is :mod:`gpumm.report.runpage`'s.
"""

import csv
import functools
import html
import json
import math
import os
from pathlib import Path

import pandas as pd

from gpumm.analyse import claims, tensor
from gpumm.archive import runrecord
from gpumm.report import labels, style
from gpumm.report.pages import PAGES
from gpumm.setup import files, paths

START_HERE = [
    ("ladder", "race", "how far hand-written FP32 kernels get against cuBLAS, rung by rung, and why"),
    ("tensor", "DC-TENSOR", "the same memory lessons on the tensor cores, at {ratio} the FP32 peak's arithmetic rate"),
    ("model", "DC-MODEL", "where one token streams the weights from DRAM and a prompt races the tensor cores"),
    ("seed001", "S1-C1", "seed 001's claims, tested on this GPU"),
    ("memory_modes", "S1-C2", "what zero-copy and unified memory cost against explicit copies"),
    ("coalescing", "S0-T2", "reading along rows against along columns, the effect behind every rung"),
    ("transpose", "S2-TR", "the same memory lessons on a kernel with no arithmetic"),
    ("profiles", "launch-floor", "the counters behind all of it, and the launch-overhead floor"),
]


def banner(source: dict) -> str:
    """One sentence: where the numbers come from (measured here, or replayed from which archive, GPU, date)."""
    gpu = source.get("gpu", {}).get("name", "unknown GPU")
    date = source.get("date", "unknown date")[:10]
    ds = source.get("data_source", {})
    if ds.get("mode") == "replay":
        return (
            f"Data source: REPLAYED from the archived run {ds.get('archive')} — measured on {gpu} on {date}; "
            "nothing was measured on this machine."
        )
    commit = source.get("git_commit", "unknown")[:12]
    return f"Data source: MEASURED in this run on {gpu} on {date} at commit {commit}."


def run_words(source: dict) -> str:
    """'NVIDIA H200, 2026-11-23, archive h200' (or 'this run'): which run a figure shows, for its caption."""
    gpu = source.get("gpu", {}).get("name", "unknown GPU")
    date = source.get("date", "unknown date")[:10]
    ds = source.get("data_source", {})
    where = f"archive {Path(str(ds.get('archive'))).name}" if ds.get("mode") == "replay" else "this run"
    return f"{gpu}, {date}, {where}"


def banner_html(source: dict) -> str:
    return (
        f'<p class="banner" id="data-source"><b>{html.escape(banner(source))}</b> '
        '<a href="run.html">How these numbers were taken</a></p>'
    )


@functools.cache
def _home_pages() -> dict[str, str]:
    """Each study ID's own page, from data/studies.csv (a study shown on two pages has one home)."""
    with paths.STUDIES.open() as f:
        return {row["id"]: row["page"] for row in csv.DictReader(f)}


def page_of(study_id: str) -> str | None:
    """The page that is a study ID's home (data/studies.csv), else the first page that lists it."""
    return _home_pages().get(study_id) or next((p["notebook"] for p in PAGES if study_id in p["ids"]), None)


def id_links(ids) -> str:
    """Study IDs as links to the sections that show them (page#ID)."""
    out = []
    for sid in str(ids).split():
        page = page_of(sid)
        out.append(f'<a href="{page}.html#{sid}">{html.escape(sid)}</a>' if page else html.escape(sid))
    return " ".join(out)


def table_html(df: pd.DataFrame, raw_html: tuple[str, ...] = (), classes: str = "t") -> str:
    """A readable table (gpumm.report.labels), with the columns in ``raw_html`` kept as the HTML they hold."""
    shown = labels.for_reader(df.drop(columns=list(raw_html))).map(lambda v: html.escape(str(v)))
    for c in raw_html:
        shown.insert(list(df.columns).index(c), labels.label(c), df[c])
    return style.table(shown, classes=classes)


def replayed(source: dict) -> bool:
    """Whether the run's numbers are an archive's, replayed (else measured here)."""
    return source.get("data_source", {}).get("mode") == "replay"


def page_html(title: str, source: dict, body: str) -> str:
    """A page of the report with the data-source line and the links every page starts with."""
    links = " · ".join(f'<a href="{p["notebook"]}.html">{html.escape(p["short"])}</a>' for p in PAGES)
    nav = f'<nav><a href="index.html">Report index</a> · <a href="run.html">This run</a> · {links}</nav>'
    return style.page(title, f"{banner_html(source)}\n{nav}\n{body}")


def read_table(t: Path, name: str) -> pd.DataFrame:
    try:
        return pd.read_csv(t / f"{name}.csv")
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def study_cost(costs: pd.DataFrame | None) -> str:
    """What the whole study costs on each archived GPU (their run.json)."""
    if costs is None or costs.empty:
        return "<p>No archived run records what it cost (run.json).</p>"
    rows = costs.drop(columns=["steps"], errors="ignore").assign(
        gpu_busy_share=[f"{x:.0%}" if x == x else "" for x in pd.to_numeric(costs.gpu_busy_share, errors="coerce")],
        gpu_worker=["yes" if str(w) == "True" else "no" for w in costs.gpu_worker],
    )
    rows = rows.rename(
        columns={
            "gpu": "GPU",
            "wall_s": "wall time (s, first step to the report)",
            "gpu_busy_s": "GPU busy (s)",
            "gpu_busy_share": "GPU busy (share of wall time)",
            "gpu_worker": "GPU worker",
            "model_s": "of it the model's layers (s)",
        }
    )
    return (
        "<p>The whole study, <code>snakemake --cores all</code> from a tree with nothing built to this "
        "report, as each archived run recorded it (<code>run.json</code>, written by "
        "<code>src/gpumm/archive/runrecord.py</code>); where a run timed the model's layers too (opt-in: "
        "<code>--configfile workflow/configs/model.yaml</code>), the seconds of its two steps:</p>" + table_html(rows)
    )


def _this_run(source: dict, costs: pd.DataFrame) -> str:
    gpu = source.get("gpu", {})
    ds = source.get("data_source", {})
    if replayed(source):  # what the archived run cost, from its run.json
        where = f"replayed from <code>{html.escape(str(ds.get('archive')))}</code>, measured"
        archive = Path(str(ds.get("archive", ""))).name
        cost = costs[costs.archive == archive] if len(costs) and "archive" in costs else pd.DataFrame()
        spent = (
            f" The whole study took {cost.wall_s.iloc[0]:.0f} s there, the GPU busy "
            f"{cost.gpu_busy_share.iloc[0]:.0%} of it."
            if len(cost)
            else ""
        )
    else:
        where, spent = "measured in this run", _measured_cost()
    return (
        f"<p>The numbers are {where} on an <b>{html.escape(str(gpu.get('name', '?')))}</b> "
        f"({gpu.get('sm_count', '?')} SMs, driver {html.escape(str(gpu.get('driver', '?')))}) on "
        f"{html.escape(source.get('date', '?')[:10])}, commit <code>{html.escape(source.get('git_commit', '?')[:12])}"
        f'</code>.{spent} <a href="run.html">How they were taken</a>.</p>'
    )


def _measured_cost() -> str:
    """What this measured run cost, in a sentence: the steps its invocation ran before this page (the step log
    ``$GPUMM_RUN_LOG``, lines of ``$GPUMM_RUN_ID``); where that invocation measured nothing (pages made again),
    the record of the run that did (results/run.json), if it is there."""
    log, run = os.environ.get(runrecord.LOG_ENV, ""), os.environ.get(runrecord.RUN_ID_ENV, "")
    s = runrecord.summarise(runrecord.read(Path(log), run)) if log and run else {}
    if s and s["gpu_busy_s"] > 0:
        return (
            f" It took {s['wall_s']:.0f} s from its first step to this page, the GPU busy {s['gpu_busy_s']:.0f} s "
            f"({s['gpu_busy_share']:.0%}), over {s['steps']} steps (<code>results/run.json</code> keeps the whole "
            "record when the run ends)."
        )
    done = paths.RESULTS / "run.json"
    r = json.loads(done.read_text()) if done.is_file() else {}
    if r.get("wall_s"):
        return (
            f" The run that measured them took {r['wall_s']:.0f} s, the GPU busy {r['gpu_busy_s']:.0f} s "
            f"(<code>results/run.json</code>, from {html.escape(str(r.get('first_step', '?'))[:10])})."
        )
    return " No record of what measuring them cost is left (<code>results/run.json</code> is missing)."


def _headlines(h: pd.DataFrame) -> str:
    if h.empty:
        return "<p>This run has none of the numbers the headlines read.</p>"
    short = {p["notebook"]: p["short"] for p in PAGES}
    rows = "\n".join(
        f'<tr data-key="{html.escape(r.key)}"><td>{html.escape(r.what)}</td><td>{html.escape(r.value)}</td>'
        f'<td><a href="{"" if r.page == "index" else r.page + ".html"}#{r.anchor}">'
        f"{html.escape('below' if r.page == 'index' else short.get(r.page, r.page))}</a></td></tr>"
        for r in h.itertuples()
    )
    return (
        '<div class="scroll"><table class="t headline"><thead><tr><th>what</th><th>this run</th><th>shown on</th>'
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _claims(v: pd.DataFrame) -> str:
    """Every statement of the sources' claims with its verdict, as the pages test them, and the count the headline
    gives."""
    if v.empty:
        return "<p>No claim of the sources could be tested on this run.</p>"
    short = {p["notebook"]: p["short"] for p in PAGES}
    rows = "\n".join(
        f'<tr data-claim="{html.escape(r.claim)}{html.escape(r.part)}"><td><a href="{r.page}.html#{r.anchor}">'
        f"{html.escape(r.claim)}</a></td><td>“{html.escape(r.statement)}”</td><td><b>{html.escape(r.verdict)}</b>"
        f"</td><td>{html.escape(r.detail)}</td><td>{html.escape(short.get(r.page, r.page))}</td></tr>"
        for r in v.itertuples()
    )
    return (
        "<p>Every statement of the claims the sources make (seed 001's S1-C1 and S1-C2; seed 002's transpose, CPU "
        f"against GPU and computation-to-memory ratio), tested on this run at every "
        f"size and kernel the source makes it for and this run measured, on unrounded values. A statement "
        f"<i>holds</i> where every case of it holds, <i>holds in part</i> where some do; each is counted once: "
        f"{html.escape(claims.counted(v))} (of {len(v)} statements in all).</p>"
        '<div class="scroll"><table class="t claims"><thead><tr><th>claim</th><th>statement</th><th>verdict</th>'
        f"<th>where it holds and where not</th><th>page</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _failed_pages(status: Path | None) -> str:
    """A box naming every page the pages step could not make, and why (its status file), or nothing."""
    try:
        failed = json.loads(status.read_text()).get("failed") or {} if status else {}
    except (OSError, ValueError):
        return ""
    if not failed:
        return ""
    items = "".join(
        f'<li><a href="{html.escape(page)}.html">{html.escape(page)}</a>: {html.escape(line)}</li>'
        for page, line in failed.items()
    )
    return (
        '<div class="banner"><p><b>Pages that could not be made</b> (each says why in its place):</p>'
        f"<ul>{items}</ul></div>"
    )


def _peak_ratio(gpu: dict) -> str:
    """The tensor-core BF16 peak over the FP32 peak of the run's GPU, both at its recorded clock ('16×'), the one
    number every page gives for it; 'many times' for a GPU whose tensor peak is not known."""
    r = tensor.roofs(gpu, math.nan)["ratio"]
    return f"{r:.0f}×" if r == r else "many times"


def write(tables: Path, out_dir: Path, studies: pd.DataFrame, status: Path | None = None) -> None:
    """results/report/index.html from the tables (run.html: gpumm.report.runpage); ``status``: the pages step's
    record of the pages it could not make (named at the top of the front page)."""
    source = json.loads((tables / "source.json").read_text())
    costs = read_table(tables, "study_cost")
    heads = read_table(tables, "headlines")
    start = "\n".join(
        f'<li><a href="{page}.html#{anchor}">{html.escape(next(p["title"] for p in PAGES if p["notebook"] == page))}'
        f"</a>: {html.escape(why.format(ratio=_peak_ratio(source.get('gpu', {}))))}</li>"
        for page, anchor, why in START_HERE
    )
    links = "\n".join(
        f'<li><a href="{p["notebook"]}.html">{html.escape(p["title"])}</a> — {id_links(" ".join(p["ids"]))}</li>'
        for p in PAGES
    )
    st = studies.copy()
    st["id"] = [id_links(i) for i in st.id]
    st["page"] = [
        f'<a href="{p}.html">{html.escape(next(x["short"] for x in PAGES if x["notebook"] == p))}</a>' for p in st.page
    ]
    body = f"""{_failed_pages(status)}<h1>How memory decides the speed of GPU matrix multiply</h1>
<p>Four classic studies of GPU matrix multiply and transpose, rebuilt: every kernel variant built, checked,
timed and profiled on one GPU, every table and figure under the ID of the artefact it reproduces, beside the
source's published numbers; then past the sources, a race of hand-written FP32 kernels against cuBLAS, a
second on the tensor cores (BF16) against cuBLAS BF16, and, where the run timed them, a real model's linear layers
from decoding one token to a prompt.</p>
<h2 id="run">This run</h2>
{_this_run(source, costs)}
<h2 id="headlines">Headline numbers</h2>
{_headlines(heads)}
<h2 id="claims">The sources' claims, tested</h2>
{_claims(read_table(tables, "claim_verdicts"))}
<h2 id="start">Start here</h2>
<ol>
{start}
</ol>
<h2 id="pages">Pages</h2>
<ul>
{links}
</ul>
<h2 id="studies">The studies</h2>
<p>Every artefact of the four sources and the design card, with its ID, linked to its section.</p>
{table_html(st, ("id", "page"))}
<h2 id="cost">What the study costs</h2>
{study_cost(costs)}
"""
    title = "How memory decides the speed of GPU matrix multiply — report"
    files.write_text(out_dir / "index.html", page_html(title, source, body))

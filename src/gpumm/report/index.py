"""The report's front page and its run page, and the data-source line every page starts with.

- ``index.html`` leads: what the study is, the run (GPU, date, commit, what it cost), the headline numbers
  (each from the tables, linked to the section that shows it), a short path through the pages, every page and
  study ID linked to its section.
- ``run.html`` holds the bookkeeping: how the numbers were taken (written from the run's own records,
  :mod:`gpumm.report.method`), the settings a replay did not use, the variants, the profiles' status, the
  provenance and the digests.
"""

import csv
import functools
import html
import json
import re
from pathlib import Path

import pandas as pd

from gpumm.analyse import claims
from gpumm.report import labels, method, style
from gpumm.report.pages import PAGES
from gpumm.setup import files, hardware, paths

START_HERE = [
    ("ladder", "race", "how far hand-written FP32 kernels get against cuBLAS, rung by rung, and why"),
    ("tensor", "DC-TENSOR", "the same memory lessons on the tensor cores, at {ratio} the FP32 peak's arithmetic rate"),
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


def _table(df: pd.DataFrame, raw_html: tuple[str, ...] = (), classes: str = "t") -> str:
    """A readable table (gpumm.report.labels), with the columns in ``raw_html`` kept as the HTML they hold."""
    shown = labels.for_reader(df.drop(columns=list(raw_html))).map(lambda v: html.escape(str(v)))
    for c in raw_html:
        shown.insert(list(df.columns).index(c), labels.label(c), df[c])
    return style.table(shown, classes=classes)


def _page(title: str, source: dict, body: str) -> str:
    links = " · ".join(f'<a href="{p["notebook"]}.html">{html.escape(p["short"])}</a>' for p in PAGES)
    nav = f'<nav><a href="index.html">Report index</a> · <a href="run.html">This run</a> · {links}</nav>'
    return style.page(title, f"{banner_html(source)}\n{nav}\n{body}")


def _read(t: Path, name: str) -> pd.DataFrame:
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
        }
    )
    return (
        "<p>The whole default study, <code>snakemake --cores all</code> from a tree with nothing built to this "
        "report, as each archived run recorded it (<code>run.json</code>, written by "
        "<code>src/gpumm/archive/runrecord.py</code>):</p>" + _table(rows)
    )


def _this_run(source: dict, costs: pd.DataFrame) -> str:
    gpu = source.get("gpu", {})
    ds = source.get("data_source", {})
    archive = Path(str(ds.get("archive", ""))).name
    cost = costs[costs.archive == archive] if len(costs) and "archive" in costs else pd.DataFrame()
    spent = (
        f" The whole study took {cost.wall_s.iloc[0]:.0f} s there, the GPU busy {cost.gpu_busy_share.iloc[0]:.0%} "
        "of it."
        if len(cost)
        else ""
    )
    where = (
        f"replayed from <code>{html.escape(str(ds.get('archive')))}</code>, measured"
        if ds.get("mode") == "replay"
        else "measured in this run"
    )
    return (
        f"<p>The numbers are {where} on an <b>{html.escape(str(gpu.get('name', '?')))}</b> "
        f"({gpu.get('sm_count', '?')} SMs, driver {html.escape(str(gpu.get('driver', '?')))}) on "
        f"{html.escape(source.get('date', '?')[:10])}, commit <code>{html.escape(source.get('git_commit', '?')[:12])}"
        f'</code>.{spent} <a href="run.html">How they were taken</a>.</p>'
    )


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
    r = hardware.tensor_bf16_peak(gpu) / hardware.fp32_peak(gpu)
    return f"{r:.0f}×" if r == r else "many times"


def write(tables: Path, out_dir: Path, studies: pd.DataFrame, status: Path | None = None) -> None:
    """results/report/index.html and run.html from the tables; ``status``: the pages step's record of the pages it
    could not make (named at the top of the front page)."""
    source = json.loads((tables / "source.json").read_text())
    costs = _read(tables, "study_cost")
    heads = _read(tables, "headlines")
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
source's published numbers; then past the sources, a race of hand-written FP32 kernels against cuBLAS, and a
second on the tensor cores (BF16) against cuBLAS BF16.</p>
<h2 id="run">This run</h2>
{_this_run(source, costs)}
<h2 id="headlines">Headline numbers</h2>
{_headlines(heads)}
<h2 id="claims">The sources' claims, tested</h2>
{_claims(_read(tables, "claim_verdicts"))}
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
{_table(st, ("id", "page"))}
<h2 id="cost">What the study costs</h2>
{study_cost(costs)}
"""
    title = "How memory decides the speed of GPU matrix multiply — report"
    files.write_text(out_dir / "index.html", _page(title, source, body))
    files.write_text(
        out_dir / "run.html", _page("This run: how the numbers were taken", source, run_page(tables, source))
    )


def _anchor(heading: str) -> str:
    """A method note's anchor: its heading's first word, lower case (#power, #clocks, #timing)."""
    return heading.split()[0].lower().strip(",:")


def _settings_not_used(ds: dict) -> str:
    """The settings of this configuration the archived run did not use, as a section ('' where none)."""
    differs = ds.get("config_differs") or []
    if not differs:
        return ""
    return (
        '<h2 id="settings">Settings this report does not reflect</h2><p>This configuration asks for settings the '
        "archived run did not use; the pages show the archived run's numbers, made with its own settings:</p><ul>"
        + "".join(f"<li><code>{html.escape(d)}</code></li>" for d in differs)
        + "</ul>"
    )


def _why_these_numbers(ds: dict) -> str:
    """Why the numbers are measured or replayed, in a sentence ('' where the run says nothing)."""
    reason = re.sub(r"^mode: ", "", str(ds.get("why", "")))
    reason = re.sub(r"\(([^()]*) \(([^()]*)\)\)", r"(\1: \2)", reason)  # "(a (b))" reads "(a: b)"
    if reason == "replay (set in the config)":
        reason = "the configuration asks for a replay (mode: replay), whatever GPU this machine has"
    if not reason:
        return ""
    return (
        f"<p><b>Why these numbers are {'replayed' if ds.get('mode') == 'replay' else 'measured'}:</b> "
        f"{html.escape(reason)}.</p>"
    )


def _variants_shown(variants: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """(the variants table as the run page shows it, whether any variant is stale or not measured)."""
    v = variants.copy()
    v["note"] = [
        "stale" if str(s) == "True" else ("not measured" if o == "not measured" else "")
        for s, o in zip(v.get("stale", []), v.get("origin", []))
    ]
    noted = bool(v["note"].astype(bool).any())
    cols = ["variant", "label", "op", "defines"] + (["note"] if noted else [])
    if "defines" in v:
        v["defines"] = v.defines.fillna("none")  # a kernel without compile-time defines, or a library call
    shown = v[[c for c in cols if c in v]].rename(columns={"op": "computes"})
    shown["studies"] = [id_links(s) for s in variants["studies"].fillna("")]  # the family's study IDs
    return shown, noted


def _profiles_shown(prof: pd.DataFrame) -> pd.DataFrame:
    """One row per variant: its profile taken, or why it is missing."""
    if not len(prof):
        return prof
    prof = prof.drop_duplicates("variant")[["variant", "status", "reason"]]
    taken = [
        "taken" if st == "ok" else (str(r) if r == r and str(r) else f"missing ({st})")
        for st, r in zip(prof.status, prof.reason)
    ]
    return pd.DataFrame({"variant": prof.variant, "profile": taken})


def _provenance_rows(source: dict) -> str:
    """The provenance's table rows: date, commit, software, configuration digest, host, and the GPU's fields."""
    prov = {k: source.get(k) for k in ("date", "git_commit", "cupy", "nvcc", "python", "config_digest", "host")}
    prov.update({f"gpu: {k}": val for k, val in source.get("gpu", {}).items()})
    return "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(labels.number(val) if isinstance(val, float) else str(val))}"
        "</td></tr>"
        for k, val in prov.items()
        if val is not None
    )


def _digests(source: dict) -> pd.DataFrame:
    """Each variant's digest as the archive certifies it, beside this checkout's."""
    digests, now = source.get("variant_digests", {}), source.get("variant_digests_now", {})
    return pd.DataFrame(
        [
            {"variant": k, "digest (the archive certifies)": d, "digest (this checkout)": now.get(k, "")}
            for k, d in digests.items()
        ]
    )


def run_page(tables: Path, source: dict) -> str:
    """The run page's body: method notes, settings a replay did not use, variants, profiles, provenance."""
    names = ("samples", "summary", "verification", "profile_summary", "overhead", "variants", "verdicts")
    t = {name: _read(tables, name) for name in names}  # variants: what each profiled kernel computes
    t["source"] = source
    notes = "\n".join(
        f'<h3 id="{_anchor(h)}">{html.escape(h)}</h3><p>{html.escape(text)}</p>'
        for h, text in method.all_notes(t)
        if text
    )
    ds = source.get("data_source", {})
    config_note, why = _settings_not_used(ds), _why_these_numbers(ds)
    shown, noted = _variants_shown(t["variants"])
    prof, prov_rows, dig = _profiles_shown(_read(tables, "profiles")), _provenance_rows(source), _digests(source)
    return f"""<h1>This run: how the numbers were taken</h1>
{why}
<h2 id="method">Method, as this run recorded it</h2>
{notes}
{config_note}
<h2 id="variants">Variants</h2>
<p>In the ladder's order, each with the study IDs of its family (a family's builds share them). <i>stale</i>: the
variant's code, catalog entry or the method's version changed since the archived run, so its numbers are for the
old code; <i>not measured</i>: not in the archived run, no numbers.
{"" if noted else "Every variant here is neither."}</p>
{_table(shown, ("studies",))}
<h2 id="profiles">Profiles</h2>
{_table(prof) if len(prof) else "<p>(none)</p>"}
<h2 id="provenance">Provenance</h2>
<div class="scroll"><table class="p">
{prov_rows}
</table></div>
<h3>Variant digests</h3>
<p>A digest covers a variant's code (its source and includes, comments and blank space left out), its catalog
entry and the measurement method's version; one that differs from the digest the archive certifies marks the
variant stale.</p>
{_table(dig) if len(dig) else "<p>(none recorded)</p>"}
"""

"""The report's front page, and the data-source line every page starts with."""

import html
from pathlib import Path

import pandas as pd

from gpumm.report import labels
from gpumm.report.pages import PAGES


def banner(source: dict) -> str:
    """One sentence: where the numbers come from (GPU, date, commit, measured or replayed)."""
    gpu = source.get("gpu", {}).get("name", "unknown GPU")
    date = source.get("date", "unknown date")[:10]
    commit = source.get("git_commit", "unknown")[:12]
    ds = source.get("data_source", {})
    if ds.get("mode") == "replay":
        return (
            f"Data source: REPLAYED from the archived run {ds.get('archive')} — measured on {gpu} on {date} "
            f"at commit {commit}; nothing was measured on this machine ({ds.get('why', '')})."
        )
    return f"Data source: MEASURED in this run on {gpu} on {date} at commit {commit}."


def page_of(study_id: str) -> str | None:
    """The notebook whose page shows a study ID."""
    return next((p["notebook"] for p in PAGES if study_id in p["ids"]), None)


def id_links(ids) -> str:
    """Study IDs as links to the pages that show them."""
    out = []
    for sid in str(ids).split():
        page = page_of(sid)
        out.append(f'<a href="{page}.html">{html.escape(sid)}</a>' if page else html.escape(sid))
    return " ".join(out)


def _table(df: pd.DataFrame, raw_html: tuple[str, ...] = ()) -> str:
    """A readable table (gpumm.report.labels), with the columns in ``raw_html`` kept as the HTML they hold."""
    shown = labels.for_reader(df.drop(columns=list(raw_html)))
    for c in raw_html:
        shown.insert(list(df.columns).index(c), labels.label(c), df[c])
    return shown.to_html(index=False, border=0, classes="t", escape=False)


def _esc(df: pd.DataFrame) -> pd.DataFrame:
    return df.map(lambda v: html.escape(v) if isinstance(v, str) else v)


def study_cost(costs: pd.DataFrame | None) -> str:
    """The index's section on what the whole study costs on each archived GPU (their run.json)."""
    if costs is None or costs.empty:
        return "<p>No archived run records what it cost (run.json).</p>"
    rows = costs.drop(columns=["steps"], errors="ignore").assign(
        gpu_busy_share=[f"{x:.0%}" if x == x else "" for x in pd.to_numeric(costs.gpu_busy_share, errors="coerce")],
        gpu_worker=["yes" if str(w) == "True" else "no" for w in costs.gpu_worker],
    )
    rows = _esc(rows).rename(
        columns={
            "archive": "archive",
            "gpu": "GPU",
            "date": "date",
            "wall_s": "wall time (s, first step to the report)",
            "gpu_busy_s": "GPU busy (s)",
            "gpu_busy_share": "GPU busy (share of wall time)",
            "cores": "cores",
            "gpu_worker": "GPU worker",
        }
    )
    return (
        "<p>The whole default study, <code>snakemake --cores all</code> from a tree with nothing built to this "
        "report, as each archived run recorded it (<code>run.json</code>, written by "
        "<code>src/gpumm/archive/runrecord.py</code>):</p>" + rows.to_html(index=False, border=0, classes="t")
    )


def index(
    source: dict,
    variants: pd.DataFrame,
    profiles: pd.DataFrame,
    out: Path,
    studies: pd.DataFrame,
    costs: pd.DataFrame | None = None,
) -> None:
    """Write results/report/index.html: data source, the settings a replay did not use, pages, what the study
    costs, studies, variants, profiles, provenance."""
    gpu = source.get("gpu", {})
    ds = source.get("data_source", {})
    links = "\n".join(
        f'<li><a href="{p["notebook"]}.html">{html.escape(p["title"])}</a> — {id_links(" ".join(p["ids"]))}</li>'
        for p in PAGES
    )
    differs = ds.get("config_differs") or []
    config_note = ""
    if differs:
        items = "".join(f"<li><code>{html.escape(d)}</code></li>" for d in differs)
        config_note = (
            "<h2>Settings this report does not reflect</h2><p>This configuration asks for settings the archived "
            "run did not use; the pages show the archived run's numbers, made with its own settings:</p>"
            f"<ul>{items}</ul>"
        )
    st = studies.copy()
    st["id"] = [id_links(i) for i in st.id]
    st["page"] = [
        f'<a href="{p}.html">{html.escape(next(x["short"] for x in PAGES if x["notebook"] == p))}</a>' for p in st.page
    ]
    v = variants.copy()
    v["note"] = [
        "stale" if str(s) == "True" else ("not measured" if o == "not measured" else "")
        for s, o in zip(v["stale"], v["origin"])
    ]
    cols = ["variant", "label", "op", "defines", "studies", "note"]
    v = _esc(v[[c for c in cols if c in v]].rename(columns={"op": "computes"}))
    v["studies"] = [id_links(s) for s in variants["studies"].fillna("")]
    prof = profiles.drop_duplicates("variant")[["variant", "status", "reason"]]
    prov = {k: source.get(k) for k in ("date", "git_commit", "cupy", "nvcc", "python", "config_digest", "host")}
    prov.update({f"gpu: {k}": val for k, val in gpu.items()})
    prov_rows = "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(labels.number(val) if isinstance(val, float) else str(val))}"
        "</td></tr>"
        for k, val in prov.items()
        if val is not None
    )
    digests = source.get("variant_digests", {})
    now = source.get("variant_digests_now", {})
    dig = pd.DataFrame(
        [
            {"variant": k, "digest (archived run)": d, "digest (this checkout)": now.get(k, "")}
            for k, d in digests.items()
        ]
    )
    title = "How memory decides the speed of GPU matrix multiply — report"
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:1em auto;padding:0 1em;line-height:1.4}}
.banner{{background:#fff3cd;border:1px solid #e0c060;padding:.6em 1em;margin-top:0}}
table.t,table.p{{border-collapse:collapse;font-size:.92em}}
.t td,.t th,.p td,.p th{{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}}
.t a{{white-space:nowrap}}</style>
</head><body>
<p class="banner" id="data-source"><b>{html.escape(banner(source))}</b></p>
<h1>How memory decides the speed of GPU matrix multiply</h1>
<p>Four classic studies of GPU matrix multiply and transpose, rebuilt on this run's GPU: every table and figure
under the ID of the artefact it reproduces (the study list below), beside the source's published numbers.</p>
{config_note}
<h2>Pages</h2>
<ul>
{links}
</ul>
<h2>What the study costs</h2>
{study_cost(costs)}
<h2>The studies</h2>
<p>Every artefact of the four sources and the design card, with its ID and the page that shows it.</p>
{_table(st, ("id", "page"))}
<h2>Variants</h2>
<p>In the ladder's order. <i>stale</i>: the variant's source, catalog entry or launch code changed since the
archived run, so its numbers are for the old code; <i>not measured</i>: not in the archived run, no numbers.</p>
{_table(v, ("studies",))}
<h2>Profiles</h2>
{_table(_esc(prof))}
<h2>Provenance</h2>
<table class="p">
{prov_rows}
</table>
<h3>Variant digests</h3>
<p>A digest covers a variant's source, its catalog entry and the launch code; one that differs from the archived
run's marks the variant stale.</p>
{_table(dig) if len(dig) else "<p>(none recorded)</p>"}
</body></html>
"""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page)
    tmp.replace(out)

"""The report's front page, and the data-source line every page starts with."""

import html
import json
from pathlib import Path

import pandas as pd

from gpumm.pages import PAGES


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


def _table(df: pd.DataFrame) -> str:
    return df.to_html(index=False, border=0, classes="t", na_rep="", escape=True)


def index(source: dict, variants: pd.DataFrame, profiles: pd.DataFrame, out: Path) -> None:
    """Write results/report/index.html: data source, pages, variants, provenance."""
    gpu = source.get("gpu", {})
    links = "\n".join(
        f'<li><a href="{p["notebook"]}.html">{html.escape(p["title"])}</a> — {", ".join(p["ids"])}</li>' for p in PAGES
    )
    v = variants[["variant", "label", "defines", "origin", "stale", "studies"]].copy()
    v["note"] = [
        "source changed since the archived run: numbers are for the old source"
        if s
        else ("no numbers: not in the archive" if o == "not measured" else "")
        for s, o in zip(v["stale"], v["origin"])
    ]
    prof = profiles.drop_duplicates("variant")[["variant", "status", "reason"]]
    prov = {k: source.get(k) for k in ("date", "git_commit", "cupy", "nvcc", "python", "config_digest")}
    prov.update({f"gpu.{k}": val for k, val in gpu.items()})
    prov_rows = "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(val))}</td></tr>" for k, val in prov.items()
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpumm report</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}}
.banner{{background:#fff3cd;border:1px solid #e0c060;padding:.6em 1em}}
table.t,table.p{{border-collapse:collapse}}
.t td,.t th,.p td,.p th{{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left}}</style>
</head><body>
<p class="banner" id="data-source">{html.escape(banner(source))}</p>
<h1>How memory decides the speed of GPU matrix multiply</h1>
<h2>Pages</h2>
<ul>
{links}
</ul>
<h2>Variants</h2>
{_table(v)}
<h2>Profiles</h2>
{_table(prof)}
<h2>Provenance</h2>
<table class="p">
{prov_rows}
</table>
<p>Variant digests: <code>{html.escape(json.dumps(source.get("variant_digests", {})))}</code></p>
</body></html>
"""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page)
    tmp.replace(out)

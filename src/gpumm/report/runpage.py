"""The run page (results/report/run.html): how this run's numbers were taken, as the run recorded it: the method
notes, the settings a replay did not use, the variants, the profiles, the provenance and each variant's digest.
A replay's page says which variants are stale for this checkout; a measured run's page has no such column.
"""

import html
import json
import re
from pathlib import Path

import pandas as pd

from gpumm.report import labels, method
from gpumm.report.index import id_links, page_html, read_table, replayed, table_html
from gpumm.setup import files


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
    """Each variant's digest: in a replay as the archive certifies it, beside this checkout's; in a measured run
    the one it was measured with (the checkout's own: no second column to compare)."""
    digests, now = source.get("variant_digests", {}), source.get("variant_digests_now", {})
    if not replayed(source):
        return pd.DataFrame([{"variant": k, "digest (measured with)": d} for k, d in digests.items()])
    return pd.DataFrame(
        [
            {"variant": k, "digest (the archive certifies)": d, "digest (this checkout)": now.get(k, "")}
            for k, d in digests.items()
        ]
    )


def _variant_words(source: dict, noted: bool) -> str:
    """What the variants table's notes mean: stale and not measured exist only in a replay."""
    if not replayed(source):
        return (
            "In the ladder's order, each with the study IDs of its family (a family's builds share them), all "
            "measured in this run."
        )
    return (
        "In the ladder's order, each with the study IDs of its family (a family's builds share them). <i>stale</i>: "
        "the variant's code, catalog entry or the method's version changed since the archived run, so its numbers "
        "are for the old code; <i>not measured</i>: not in the archived run, no numbers."
        + ("" if noted else " Every variant here is neither.")
    )


def _digest_words(source: dict) -> str:
    if not replayed(source):
        return (
            "A digest covers a variant's code (its source and includes, comments and blank space left out), its "
            "catalog entry and the measurement method's version: an archive of this run certifies its numbers for "
            "this digest."
        )
    return (
        "A digest covers a variant's code (its source and includes, comments and blank space left out), its catalog "
        "entry and the measurement method's version; one that differs from the digest the archive certifies marks "
        "the variant stale."
    )


def body(tables: Path, source: dict) -> str:
    """The run page's body: method notes, settings a replay did not use, variants, profiles, provenance."""
    names = ("samples", "summary", "verification", "profile_summary", "overhead", "variants", "verdicts")
    t = {name: read_table(tables, name) for name in names}  # variants: what each profiled kernel computes
    t["source"] = source
    notes = "\n".join(
        f'<h3 id="{_anchor(h)}">{html.escape(h)}</h3><p>{html.escape(text)}</p>'
        for h, text in method.all_notes(t)
        if text
    )
    ds = source.get("data_source", {})
    config_note, why = _settings_not_used(ds), _why_these_numbers(ds)
    shown, noted = _variants_shown(t["variants"])
    prof, prov_rows, dig = _profiles_shown(read_table(tables, "profiles")), _provenance_rows(source), _digests(source)
    return f"""<h1>This run: how the numbers were taken</h1>
{why}
<h2 id="method">Method, as this run recorded it</h2>
{notes}
{config_note}
<h2 id="variants">Variants</h2>
<p>{_variant_words(source, noted)}</p>
{table_html(shown, ("studies",))}
<h2 id="profiles">Profiles</h2>
{table_html(prof) if len(prof) else "<p>(none)</p>"}
<h2 id="provenance">Provenance</h2>
<div class="scroll"><table class="p">
{prov_rows}
</table></div>
<h3>Variant digests</h3>
<p>{_digest_words(source)}</p>
{table_html(dig) if len(dig) else "<p>(none recorded)</p>"}
"""


def write(tables: Path, out_dir: Path) -> None:
    """results/report/run.html from the tables."""
    source = json.loads((tables / "source.json").read_text())
    files.write_text(
        out_dir / "run.html", page_html("This run: how the numbers were taken", source, body(tables, source))
    )

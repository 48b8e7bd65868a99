"""Helpers the notebooks share: read the tidy tables, say where they come from."""

import json
from pathlib import Path

import pandas as pd
import seaborn as sns
from IPython.display import Markdown, display

from gpumm.report import banner


def load(tables_dir: str) -> dict:
    """Every table of a run, by name (samples, summary, profiles, resources, variants, published, source)."""
    d = Path(tables_dir)
    out = {p.stem: pd.read_csv(p) for p in sorted(d.glob("*.csv"))}
    out["source"] = json.loads((d / "source.json").read_text())
    return out


def header(tables: dict) -> None:
    """Show the data-source sentence; every page starts with it."""
    sns.set_theme(style="whitegrid", context="notebook")
    display(Markdown(f"**{banner(tables['source'])}**"))
    stale = tables["variants"].query("stale")["variant"].tolist()
    missing = tables["variants"].query("origin == 'not measured'")["variant"].tolist()
    if stale:
        display(
            Markdown(
                f"**Stale:** {', '.join(stale)} changed since the archived run; their numbers are for the old source."
            )
        )
    if missing:
        display(Markdown(f"**Not measured:** {', '.join(missing)} (not in the archive; no numbers shown)."))

"""Helpers the notebooks share: read the tidy tables, say where they come from, draw and show."""

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import Markdown, display

from gpumm.report import banner


def load(tables_dir: str) -> dict:
    """Every table of a run, by name (samples, summary, ..., published, source)."""
    d = Path(tables_dir)
    out = {p.stem: _read(p) for p in sorted(d.glob("*.csv"))}
    out["source"] = json.loads((d / "source.json").read_text())
    return out


def _read(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:  # a table with no rows and no columns
        return pd.DataFrame()


def header(tables: dict) -> None:
    """Show the data-source sentence; every page starts with it."""
    sns.set_theme(style="whitegrid", context="notebook")
    display(Markdown(f"**{banner(tables['source'])}**"))
    stale = tables["variants"].query("stale")["variant"].tolist()
    missing = tables["variants"].query("origin == 'not measured'")["variant"].tolist()
    if stale:
        display(
            Markdown(f"**Stale:** {', '.join(stale)} changed since the archived run; numbers are for the old source.")
        )
    if missing:
        display(Markdown(f"**Not measured:** {', '.join(missing)} (not in the archive; no numbers shown)."))


def md(text: str) -> None:
    display(Markdown(text))


def show(df: pd.DataFrame, precision: int = 1, **formats) -> None:
    """A table without its index, numbers rounded, missing values as a dash."""
    if df.empty:
        md("*(nothing in this run)*")
        return
    display(df.style.hide(axis="index").format(formats or None, precision=precision, na_rep="—"))


def square(summary: pd.DataFrame, timed: str = "kernel", mode: str = "device") -> pd.DataFrame:
    """Rows of square shapes (M = N = K) timed as ``timed`` under memory ``mode``."""
    s = summary[(summary.M == summary.N) & (summary.N == summary.K) & (summary.timed == timed)]
    return s[s.memory_mode == mode] if mode else s


def published(tables: dict, study_id: str) -> pd.DataFrame:
    p = tables["published"]
    return p[p.study_id == study_id]


def size_plot(
    samples: pd.DataFrame,
    variants: list[str],
    title: str,
    y: str = "gflops",
    timed: str = "kernel",
    scale: float = 1.0,
    ylabel: str = "GFLOP/s",
    ax=None,
    mode: str | None = "device",
):
    """Median (IQR band) of ``y`` against square size, one line per variant, log-log; memory ``mode`` only."""
    d = samples[
        (samples.status == "ok")
        & (samples.M == samples.N)
        & (samples.N == samples.K)
        & (samples.timed == timed)
        & samples.variant.isin(variants)
    ].copy()
    if mode is not None:
        d = d[d.memory_mode.isin([mode, "host"])]  # the CPU baselines run in host memory
    if d.empty:
        md(f"*No timed samples for {title}.*")
        return None
    d["value"] = d[y] * scale
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5))
    order = [v for v in variants if v in set(d.variant)]
    sns.lineplot(
        data=d,
        x="M",
        y="value",
        hue="variant",
        hue_order=order,
        estimator="median",
        errorbar=("pi", 50),
        marker="o",
        ax=ax,
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = [int(n) for n in sorted(d.M.unique()) if int(n) & (int(n) - 1) == 0]  # powers of two only
    ax.set_xticks(ticks, labels=[str(n) for n in ticks])
    if len(ticks) > 7:
        ax.tick_params(axis="x", labelrotation=60)
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set(xlabel="size n (all matrices n × n)", ylabel=ylabel, title=title)
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1), fontsize="small", title=None)
    return ax

"""Helpers the notebooks share: read the tidy tables, say where they come from, draw and show.

Every table and figure a page shows is also written, as the tidy CSV it was
drawn from, to ``results/report/data/<page>-<n>.csv``, and linked under it.
"""

import html
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import HTML, Markdown, display

from gpumm.report import labels
from gpumm.report.index import banner
from gpumm.report.pages import PAGES
from gpumm.setup import files

_PAGE = {"name": "page", "count": 0, "data": None, "plot": None}


def load(tables_dir: str) -> dict:
    """Every table of a run, by name (samples, summary, ..., published, source)."""
    d = Path(tables_dir)
    out = {p.stem: _read(p) for p in sorted(d.glob("*.csv"))}
    for name in ("samples", "summary"):  # a variant the archive lacks has one placeholder row with no shape
        df = out.get(name)
        if df is not None and "M" in df:
            out[name] = df[df.M.notna()].reset_index(drop=True)
    out["source"] = json.loads((d / "source.json").read_text())
    _PAGE["data"] = d.parent / "report" / "data"
    return out


def link(page: str, text: str | None = None) -> str:
    """A Markdown link to another page of the report, by notebook name."""
    title = next((p["title"] for p in PAGES if p["notebook"] == page), page)
    return f"[{text or title}]({page}.html)"


def nav(page: str | None) -> str:
    """The line under the data source: back to the index, and every other page."""
    others = " · ".join(link(p["notebook"], p["short"]) for p in PAGES if p["notebook"] != page)
    return f"[← Report index](index.html) · {others}"


def _read(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:  # a table with no rows and no columns
        return pd.DataFrame()


def batched(tables: dict) -> bool:
    """Whether this run's kernel times are batched (CUDA graphs), or one launch per event pair (older runs)."""
    s = tables["samples"]
    return "method" in s and s.loc[s.status == "ok", "method"].notna().any()


def launch_floor_ms(tables: dict) -> float:
    """Per-launch time of an empty kernel in a CUDA graph on this run's GPU (NaN where not measured)."""
    from gpumm.analyse.floor import launch_floor_ms as floor

    return floor(tables.get("overhead", pd.DataFrame()))


def regime_note(tables: dict) -> str:
    """One sentence: how the kernel times of this run were taken, and what their floor is."""
    if not batched(tables):
        return (
            "**Timing regime:** this run timed each launch between its own pair of CUDA events (before batched "
            "timing), so any kernel time below about 10–25 µs is the host's launch overhead (CuPy's dispatch for "
            "cuBLAS), not the kernel; small sizes run from the L2."
        )
    floor = launch_floor_ms(tables)
    at = f" {floor * 1e3:.2f} µs per launch on this GPU" if floor == floor else " measured on the profiles page"
    s = tables["samples"]
    adaptive = "stop" in s and s["stop"].notna().any() and (s["stop"].astype(str) != "").any()
    t = {"min_samples": 5, "max_noise_pct": 0.5, "max_samples": 20, "timeout_s": 2.0}
    t.update(((tables.get("source") or {}).get("config") or {}).get("timing") or {})
    how = (
        f" Each set takes samples until it is quiet (at least {t['min_samples']}; it stops once its interquartile "
        f"range is at most {t['max_noise_pct']:g}% of its median, at {t['max_samples']} samples, or after "
        f"{t['timeout_s']:g} s of sampling: `src/gpumm/run/sampling.py`); the tables give each set's samples and "
        "spread."
        if adaptive
        else ""
    )
    return (
        "**Timing regime:** every kernel time is per launch, from CUDA graphs of back-to-back launches (each "
        f"sample lasts at least 2 ms); the floor of that method, an empty kernel, is{at}. Inputs stay resident "
        "between launches, so sizes whose matrices fit in the L2 run from the cache." + how
    )


def header(tables: dict, page: str | None = None) -> None:
    """The top of every page: the data-source sentence (its first line), the links to the index and the
    other pages, the page's title, then how the numbers were taken."""
    sns.set_theme(style="whitegrid", context="notebook")
    _PAGE.update(name=page or "page", count=0)
    display(Markdown(f"**{banner(tables['source'])}**"))
    display(Markdown(nav(page)))
    this = next((p for p in PAGES if p["notebook"] == page), None)
    if this:
        display(Markdown(f"# {this['title']}"))
        display(
            Markdown("Studies on this page: " + ", ".join(this["ids"]) + " (the [index](index.html) lists them all).")
        )
    variants = tables["variants"]
    stale = variants.query("stale")["variant"].tolist()
    missing = variants.query("origin == 'not measured'")["variant"].tolist()
    if stale and len(stale) == len(variants.query("origin == 'replayed'")):
        display(
            Markdown(
                "**Stale:** the kernel source, catalog entry or launch code of every replayed variant changed since "
                "the archived run: its numbers are for the code of that run."
            )
        )
    elif stale:
        display(
            Markdown(f"**Stale:** {', '.join(stale)} changed since the archived run; numbers are for the old source.")
        )
    if missing:
        display(Markdown(f"**Not measured:** {', '.join(missing)} (not in the archive; no numbers shown)."))
    differs = tables["source"].get("data_source", {}).get("config_differs") or []
    if differs:
        display(
            Markdown(
                "**Configuration:** the archived run used other settings than this configuration; the pages show "
                "the archived run's: " + "; ".join(differs) + "."
            )
        )
    display(Markdown(regime_note(tables)))
    throttled = _throttled(tables["summary"])
    if throttled:
        display(Markdown(f"**Throttled:** {throttled}"))


def _throttled(summary: pd.DataFrame) -> str:
    """Which timed sets ran with the SM clock below its maximum ('' when none, or not recorded)."""
    if "throttled" not in summary:
        return ""
    t = summary[summary.throttled.astype(str).str.lower() == "true"]
    if t.empty:
        return ""
    low = t.sm_clock_min_mhz.min()
    names = ", ".join(
        sorted({f"{r.variant} at {r.M}×{r.N}×{r.K} ({r.memory_mode}, {r.timed})" for r in t.itertuples()})
    )
    return f"{len(t)} timed sets ran below the maximum SM clock (lowest {low:.0f} MHz): {names}."


def md(text: str) -> None:
    display(Markdown(text))


def show(df: pd.DataFrame, precision: int = 1, name: str | None = None, **formats) -> None:
    """A table as a reader wants it (headers with units, percentages, one number format; see gpumm.report.labels),
    and a link to the tidy CSV it comes from. ``precision`` and ``formats`` are kept for old callers."""
    if df.empty:
        md("*(nothing in this run)*")
        return
    shown = labels.for_reader(df.reset_index(drop=True))
    display(HTML(shown.to_html(index=False, border=0, classes="gpumm", escape=True)))
    download(df, name)


def download(df: pd.DataFrame, name: str | None = None, text: str = "Download this as CSV") -> None:
    """Write ``df`` as the tidy CSV of the table or figure just shown, and link it (``text``: the link's words,
    for a CSV that is not the one just shown)."""
    if _PAGE["data"] is None or df is None:
        return
    _PAGE["count"] += 1
    fname = f"{_PAGE['name']}-{name or _PAGE['count']}.csv"
    files.write_csv(df, _PAGE["data"] / fname)
    display(HTML(f'<p class="csv"><a href="data/{html.escape(fname)}">{html.escape(text)}</a></p>'))


def figure(data: pd.DataFrame | None = None, name: str | None = None) -> None:
    """Show the current figure, and link the tidy data it was drawn from (the last size plot's by default)."""
    plt.show()
    download(data if data is not None else _PAGE["plot"], name)


def is_power_of_two(n) -> bool:
    if pd.isna(n):  # the row of a variant the archive does not have
        return False
    n = int(n)
    return n > 0 and n & (n - 1) == 0


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
    floor_ms: float = float("nan"),
):
    """Median (IQR band) of ``y`` against square size, one line per variant, log-log; memory ``mode`` only.

    Only powers of two are drawn (another square size inside the sweep, such as
    1000, would make a false step). ``floor_ms``, the launch-overhead floor,
    is drawn as its own dashed line: a time at it (or a rate at its ceiling,
    2n³ over the floor) measures the launch, not the kernel.
    """
    d = samples[
        (samples.status == "ok")
        & (samples.M == samples.N)
        & (samples.N == samples.K)
        & (samples.timed == timed)
        & samples.variant.isin(variants)
    ].copy()
    d = d[d.M.map(is_power_of_two).astype(bool)]  # a boolean mask even when d is empty (else: a column list)
    if mode is not None:
        d = d[d.memory_mode.isin([mode, "host"])]  # the CPU baselines run in host memory
    if d.empty:
        md(f"*No timed samples for {title}.*")
        return None
    d["value"] = d[y] * scale
    _PAGE["plot"] = d[[c for c in ("variant", "M", "N", "K", "memory_mode", "timed", "repeat", "ms", y) if c in d]]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5))
    order = [v for v in variants if v in set(d.variant)]
    sns.lineplot(  # a colour and a marker per variant: up to 20 lines stay apart
        data=d,
        x="M",
        y="value",
        hue="variant",
        hue_order=order,
        style="variant",
        style_order=order,
        markers=True,
        dashes=False,
        palette=sns.color_palette("tab20" if len(order) > 10 else "tab10", len(order)),
        estimator="median",
        errorbar=("pi", 50),
        ax=ax,
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = [int(n) for n in sorted(d.M.unique())]
    if floor_ms == floor_ms and ticks:
        n = pd.Series(ticks, dtype=float)
        if y == "ms":
            ax.plot(n, [floor_ms * scale] * len(n), ls="--", color="grey", label="launch-overhead floor")
        elif y == "gflops":  # the rate a kernel at the floor would show; drawn where it is near the data
            ceiling = 2 * n**3 / (floor_ms * 1e-3) / 1e9 * scale
            near = ceiling <= 10 * d.value.max()
            ax.plot(n[near], ceiling[near], ls="--", color="grey", label="launch-overhead ceiling")
    ax.set_xticks(ticks, labels=[str(n) for n in ticks])
    if len(ticks) > 7:
        ax.tick_params(axis="x", labelrotation=60)
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set(xlabel="size n (all matrices n × n)", ylabel=ylabel, title=title)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    return ax


def profile_at(tables: dict, variant: str, n: int):
    """The profile summary row of ``variant`` at size ``n`` (a Series), or None."""
    ps = tables.get("profile_summary", pd.DataFrame())
    if ps.empty:
        return None
    r = ps[(ps.variant == variant) & (ps["size"] == n)]
    return r.iloc[0] if len(r) else None


def traffic(tables: dict, variants: list[str], n: int) -> str:
    """A sentence citing the profiles of ``variants`` at size ``n``: DRAM traffic over the minimum, sectors per
    request; or saying that this run has no profile at ``n`` (so that no page cites a cached-regime profile
    to explain a DRAM-regime result)."""
    rows = [(v, profile_at(tables, v, n)) for v in variants]
    have = [(v, r) for v, r in rows if r is not None]
    if not have:
        ps = tables.get("profile_summary", pd.DataFrame())
        sizes = sorted({int(s) for s in ps["size"]}) if len(ps) else []
        where = f"its profiles are at {', '.join(map(str, sizes))}" if sizes else "it has no profiles"
        return (
            f"This run has no Nsight Compute profile at {n} ({where}), so the traffic behind these numbers is "
            f"not shown; {link('profiles', 'the profiles page')} says which regime each profile is in."
        )
    regime = have[0][1].regime
    ratio = have[0][1].working_set_over_l2
    parts = [
        f"{v} moves {r.dram_over_minimum:.1f}× the minimum DRAM traffic ({r.sectors_per_request:.1f} sectors per "
        "global load request)"
        for v, r in have
    ]
    return (
        f"Nsight Compute at {n}³ ({regime} regime: the three matrices are {ratio:.1f}× the L2): "
        + "; ".join(parts)
        + "."
    )


def span(values, fmt: str = "{:.1f}", unit: str = "×") -> str:
    """'2.6×' for one value (or equal ones), '2.6× to 3.1×' for a range; NaNs ignored."""
    v = pd.Series(values, dtype=float).dropna()
    if v.empty:
        return "—"
    lo, hi = fmt.format(v.min()), fmt.format(v.max())
    return f"{lo}{unit}" if lo == hi else f"{lo}{unit} to {hi}{unit}"

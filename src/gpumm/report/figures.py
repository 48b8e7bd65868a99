"""Helpers the notebooks share: read the tidy tables, say where they come from, draw and show.

Every table and figure a page shows is also written, as the tidy CSV it was
drawn from, to ``results/report/data/<page>-<n>.csv``, and linked under it.
"""

import base64
import html
import io
import json
import logging
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import HTML, Markdown, display

from gpumm.analyse import claims as claim_tests
from gpumm.report import labels, method, style
from gpumm.report.index import banner, run_words
from gpumm.report.pages import PAGES
from gpumm.setup import files, manifest, regimes

_PAGE = {"name": "page", "count": 0, "figures": 0, "data": None, "plot": None, "tables": None, "styles": {}}
# a variant keeps one colour, marker and dash on a page, in every chart and panel: the first variant drawn on the
# page takes the first style, the next new one the next (ten clearly distinct colours, then their light shades)
# a log axis's tick labels (10^2) are mathtext; where the machine lacks the STIX and Computer Modern fonts,
# matplotlib's font search warns once per font it falls back from (to DejaVu Sans, which has every glyph): lines
# of stderr on a page, and wider than a phone
logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
PALETTE += ["#17becf", "#8c6d31", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2"]
MARKERS = ["o", "s", "D", "^", "v", "P", "X", "h", "<", ">", "p"]
DASHES = ["", (4, 1.5), (1, 1), (3, 1, 1, 1), (5, 1, 1, 1, 1, 1), (2, 2), (6, 2)]


def look(variant: str) -> tuple[str, str, object]:
    """(colour, marker, dash) of ``variant`` on this page: the same in every chart and panel of the page."""
    k = _PAGE["styles"].setdefault(variant, len(_PAGE["styles"]))
    return PALETTE[k % len(PALETTE)], MARKERS[k % len(MARKERS)], DASHES[k % len(DASHES)]


def colour(variant: str) -> str:
    return look(variant)[0]


def load(tables_dir: str) -> dict:
    """Every table of a run, by name (samples, summary, ..., published, source)."""
    d = Path(tables_dir)
    manifest.require(d, "run snakemake again, which makes the tables again")  # never a page from a damaged table
    out = {p.stem: _read(p) for p in sorted(d.glob("*.csv"))}
    for name in ("samples", "summary"):  # a variant the archive lacks has one placeholder row with no shape
        df = out.get(name)
        if df is not None and "M" in df:
            out[name] = df[df.M.notna()].reset_index(drop=True)
    out["source"] = json.loads((d / "source.json").read_text())
    _PAGE["data"] = d.parent / "report" / "data"
    return out


def clear_data(folder: Path, page: str) -> None:
    """Remove the CSVs ``page`` wrote into ``folder`` (results/report/data) on an earlier run."""
    for f in folder.glob(f"{page}-*.csv") if folder.is_dir() else []:
        f.unlink()


def link(page: str, text: str | None = None) -> str:
    """A Markdown link to another page of the report, by notebook name."""
    title = next((p["title"] for p in PAGES if p["notebook"] == page), page)
    return f"[{text or title}]({page}.html)"


def nav(page: str | None) -> str:
    """The line under the data source: back to the index, and every other page."""
    others = " · ".join(link(p["notebook"], p["short"]) for p in PAGES if p["notebook"] != page)
    return f"[← Report index](index.html) · [This run](run.html) · {others}"


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


def header(tables: dict, page: str | None = None) -> None:
    """The top of every page: one short data-source banner (linking how the numbers were taken), the links to
    the index and the other pages, the page's title and its study IDs (each a link to its section); then only
    the caveats that apply to this run (stale or missing variants, settings a replay did not use)."""
    sns.set_theme(style="whitegrid", context="notebook")
    _PAGE.update(name=page or "page", count=0, figures=0, tables=tables, styles={})
    source = tables["source"]
    display(
        HTML(
            f'<p class="banner" id="data-source"><b>{html.escape(banner(source))}</b> '
            '<a href="run.html">How these numbers were taken</a></p>'
        )
    )
    display(Markdown(nav(page)))
    this = next((p for p in PAGES if p["notebook"] == page), None)
    if this:
        display(Markdown(f"# {this['title']}"))
        display(Markdown("Studies on this page: " + ", ".join(f"[{i}](#{i})" for i in this["ids"]) + "."))
    variants = tables["variants"]
    stale = variants.query("stale")["variant"].tolist()
    missing = variants.query("origin == 'not measured'")["variant"].tolist()
    if stale:
        display(
            Markdown(f"**Stale:** {', '.join(stale)} changed since the archived run; their numbers are the old code's.")
        )
    if missing:
        display(Markdown(f"**Not measured:** {', '.join(missing)} (not in the archive; no numbers shown)."))
    differs = source.get("data_source", {}).get("config_differs") or []
    if differs:
        display(
            Markdown(
                "**Settings:** the archived run used other settings than this configuration "
                "([which](run.html#settings)); the pages show the archived run's."
            )
        )


def section(study_id: str, title: str, level: int = 2) -> None:
    """A heading that is also the anchor the index links to (``page.html#S0-T1``)."""
    display(HTML(f'<h{level} id="{html.escape(study_id)}">{html.escape(title)}</h{level}>'))


def md(text: str) -> None:
    display(Markdown(text))


def show(df: pd.DataFrame, precision: int = 1, name: str | None = None, missing: str = "", **formats) -> None:
    """A table as a reader wants it (headers with units, percentages, one number format; see gpumm.report.labels),
    and a link to the tidy CSV it comes from. ``missing``: why a cell shows — (said under the table where one
    does). ``precision`` and ``formats`` are kept for old callers."""
    if df.empty:
        md("*(nothing in this run)*")
        return
    plain = labels.for_reader(df.reset_index(drop=True))
    numeric = [c for c in plain.columns if style.numeric(plain[c])]
    numbers = {_cell(c) for c in numeric}
    shown = plain.map(_cell)
    for c in numeric:  # a number never breaks at its thousands separators
        shown[c] = plain[c].map(lambda v: _cell(v, wrap=False))
    if len(plain.columns):  # the first column (a table's row names) stays on one line
        shown[shown.columns[0]] = plain[plain.columns[0]].map(lambda v: _cell(v, wrap=False))
    shown.columns = [_cell(c) for c in shown.columns]
    display(HTML(style.table(shown, classes="gpumm", numbers=numbers)))
    if missing and (plain == "—").any().any():
        md(f"*— : {missing}.*")
    note = method.throttled_among(_PAGE.get("tables") or {}, df)
    if note:
        md(f"*{note}*")
    download(df, name)


def code(text: str, summary: str) -> None:
    """A short piece of source code, folded under a one-line ``summary`` that opens it."""
    display(
        HTML(
            f'<details class="code"><summary>{html.escape(summary)}</summary>'
            f"<pre><code>{html.escape(text)}</code></pre></details>"
        )
    )


LONG = 44  # a cell with a word longer than this shows its start, the whole text a hover away


def _cell(value, wrap: bool = True) -> str:
    """One cell's HTML: escaped; a text that cannot wrap (a word longer than LONG, such as a cuBLAS kernel's
    name) cut short, in full in its title. Text made of ordinary words wraps and is shown whole, and a list
    joined by commas (a build's defines) or a shape (1023×1025×1024) may break after each comma or ×, and a long
    name (transpose_rows_block_rows8, as a column header; not sm_90) after each underscore. ``wrap=False``: no
    breaks (a number, whose thousands separators are commas)."""
    text = str(value)
    if max((len(w) for w in re.split(r"[\s,×]+", text)), default=0) <= LONG:
        if not wrap:
            return html.escape(text)
        text = re.sub(r"([,×])(?=\S)", r"\1<wbr>", html.escape(text))
        return re.sub(r"[^\s,×<>]{11,}", lambda m: re.sub(r"_(?=\S)", "_<wbr>", m[0]), text)  # not sm_90

    return f'<span title="{html.escape(text)}">{html.escape(text[: LONG - 1])}…</span>'


def download(df: pd.DataFrame, name: str | None = None, text: str = "Download this as CSV") -> None:
    """Write ``df`` as the tidy CSV of the table or figure just shown, and link it (``text``: the link's words,
    for a CSV that is not the one just shown)."""
    if _PAGE["data"] is None or df is None:
        return
    _PAGE["count"] += 1
    fname = f"{_PAGE['name']}-{name or _PAGE['count']}.csv"
    files.write_csv(df, _PAGE["data"] / fname)
    display(HTML(f'<p class="csv"><a href="data/{html.escape(fname)}">{html.escape(text)}</a></p>'))


def figure(
    data: pd.DataFrame | None = None,
    name: str | None = None,
    *,
    caption: str,
    alt: str | None = None,
    runs: list[str] | None = None,
) -> None:
    """Show the current figure with its caption (what it shows, from which run, in which regime) and alt text, and
    link the tidy data it was drawn from (the last size plot's by default). The image is embedded in the page,
    scaled to the width of its box, and links to itself at full size (:func:`gpumm.report.style.figure`).
    ``runs``: every run the figure draws, where it draws more than this page's run."""
    fig = plt.gcf()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    src = base64.b64encode(buf.getvalue()).decode()
    run = run_words(_PAGE["tables"]["source"]) if _PAGE.get("tables") else ""
    if runs:
        run = "runs: " + "; ".join(runs)
    words = re.sub(r"[*`]", "", caption)
    _PAGE["figures"] += 1
    shown = f'{html.escape(words)} <span class="run">({html.escape(run)})</span>'
    display(HTML(style.figure(src, alt or words, shown, f"figure-{_PAGE['figures']}")))
    download(data if data is not None else _PAGE["plot"], name)


def claims(tables: dict, claim: str) -> None:
    """Each statement of a source's claim: how it is tested, its verdict (where it holds and where not, computed on
    unrounded values) and its cases, one column per size or kernel; then the count, as the index counts."""
    v = tables.get("claim_verdicts", pd.DataFrame())
    v = v[v.claim == claim] if len(v) else v
    if v.empty:
        md(f"*{claim} is not tested in this run.*")
        return
    c = tables.get("claim_cases", pd.DataFrame())
    for r in v.itertuples():
        md(f"**“{r.statement}”** — **{r.verdict}**: {r.detail}.  \n*Test*: {r.test}.")
        g = c[(c.claim == claim) & (c.part == r.part)] if len(c) else c
        if len(g) and g.value.notna().any():
            by_size = (claim, r.part) in claim_tests.BY_SIZE
            key = g["size"].astype(int).astype(str) if by_size else g.variant
            bound = [claim_tests._threshold(x) for x in g.itertuples()]
            notes = g.note.fillna("").astype(str) if "note" in g else pd.Series("", index=g.index)
            marked = notes.str.contains("throttled")
            values = [claim_tests.shown(x, u, b) for x, u, b in zip(g.value, g.unit, bound)]
            values = [f"{x} ⚑" if m else x for x, m in zip(values, marked)]
            held = ["yes" if h else "no" for h in g.holds.astype(bool)]
            table = pd.DataFrame([["ours", *values], ["holds", *held]], columns=["size" if by_size else "kernel", *key])
            show(table, name=f"{claim}-{r.part}")
            if marked.any():
                md("⚑ " + "; ".join(f"{k}: {n}" for k, n in zip(key[marked], notes[marked])) + ".")
    if (v.verdict != claim_tests.UNTESTED).sum() > 1:
        md(
            f"{claim}, statement by statement: {claim_tests.counted(v)}. A statement holds where every case of it "
            "holds, in part where some do; the index counts the same way."
        )


def best_hand_written(ladder: pd.DataFrame):
    """The family of a ladder table (gpumm.analyse.rates.ladder) with the largest share of cuBLAS, cuBLAS aside;
    None where there is none."""
    d = ladder[(ladder.family != "cublas") & ladder.share_of_cublas.notna()] if len(ladder) else ladder
    return d.loc[d.share_of_cublas.idxmax()] if len(d) else None


def is_power_of_two(n) -> bool:
    if pd.isna(n):  # the row of a variant the archive does not have
        return False
    n = int(n)
    return n > 0 and n & (n - 1) == 0


def square(summary: pd.DataFrame, timed: str = "kernel", mode: str = "device", op: str = "matmul") -> pd.DataFrame:
    """Rows of square shapes (M = N = K) timed as ``timed`` under memory ``mode``, of operation ``op`` (the FP32
    products by default: the BF16 race has its own page)."""
    s = summary[(summary.M == summary.N) & (summary.N == summary.K) & (summary.timed == timed)]
    if op and "op" in s:
        s = s[s.op.fillna("matmul") == op]
    return s[s.memory_mode == mode] if mode else s


def published(tables: dict, study_id: str) -> pd.DataFrame:
    p = tables["published"]
    return p[p.study_id == study_id]


def _floor(ax, d: pd.DataFrame, ticks: list[int], y: str, floor_ms: float, scale: float, bound_from) -> None:
    """The launch-overhead floor on a size plot (as a time, or as the rate a kernel at the floor would show, where
    it is near the data), and the sizes ``bound_from``'s samples say are launch-bound, shaded."""
    n = pd.Series(ticks, dtype=float)
    if y == "ms":
        ax.plot(n, [floor_ms * scale] * len(n), ls=":", lw=2, color="black", label="launch-overhead floor")
    elif y == "gflops":
        ceiling = 2 * n**3 / (floor_ms * 1e-3) / 1e9 * scale
        near = ceiling <= 10 * d.value.max()
        ax.plot(n[near], ceiling[near], ls=":", lw=2, color="black", label="launch-overhead ceiling")
    bound = launch_bound(bound_from, floor_ms)
    if bound:
        ax.axvspan(
            ticks[0] / 1.4,
            bound * 1.41,
            color="grey",
            alpha=0.13,
            lw=0,
            label=f"launch-bound (floor ≥ {LAUNCH_BOUND_SHARE:.0%} of the fastest time)",
        )


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
    legend: str = "right",
    bound_from: pd.DataFrame | None = None,
):
    """Median (IQR band) of ``y`` against square size, one line per variant, log-log; memory ``mode`` only.

    Only powers of two are drawn (another square size inside the sweep, such as
    1000, would make a false step). ``floor_ms``, the launch-overhead floor,
    is drawn as its own dashed line: a time at it (or a rate at its ceiling,
    2n³ over the floor) measures the launch, not the kernel. ``bound_from``: the samples that decide which sizes
    are launch-bound (the variants of every panel of a figure, so that its panels shade the same sizes); by
    default this panel's.
    """
    d = _squares(samples[samples.variant.isin(variants)], timed, mode)
    if d.empty:
        md(f"*No timed samples for {title}.*")
        return None
    d["value"] = d[y] * scale
    cols = dict.fromkeys(("variant", "M", "N", "K", "memory_mode", "timed", "repeat", "ms", y))  # y may be ms
    _PAGE["plot"] = d[[c for c in cols if c in d]]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5))
    order = [v for v in variants if v in set(d.variant)]
    # a colour, a marker and a dash pattern per variant: two lines on top of each other stay apart
    looks = {"markers": {v: look(v)[1] for v in order}, "dashes": {v: look(v)[2] for v in order}}
    looks["palette"] = {v: look(v)[0] for v in order}
    sns.lineplot(data=d, x="M", y="value", hue="variant", hue_order=order, style="variant", style_order=order, **looks,
                 estimator="median", errorbar=("pi", 50), ax=ax)  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = [int(n) for n in sorted(d.M.unique())]
    if floor_ms == floor_ms and ticks:
        _floor(ax, d, ticks, y, floor_ms, scale, d if bound_from is None else _squares(bound_from, timed, mode))
    ax.set_xticks(ticks, labels=[str(n) for n in ticks])
    if len(ticks) > 7:
        ax.tick_params(axis="x", labelrotation=60)
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set(xlabel="size n (all matrices n × n)", ylabel=ylabel, title=title)
    if legend == "below":  # panels side by side: each legend under its panel
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.5), ncol=2, fontsize="small")
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    return ax


def _squares(samples: pd.DataFrame, timed: str, mode: str | None) -> pd.DataFrame:
    """The verified samples of square powers of two, of one timing and memory mode (the CPU's host too)."""
    d = samples[
        (samples.status == "ok") & (samples.M == samples.N) & (samples.N == samples.K) & (samples.timed == timed)
    ].copy()
    d = d[d.M.map(is_power_of_two).astype(bool)]  # a boolean mask even when d is empty (else: a column list)
    return d[d.memory_mode.isin([mode, "host"])] if mode is not None else d  # the CPU baselines run in host memory


LAUNCH_BOUND_SHARE = 0.2  # a size is launch-bound where the floor is at least this share of the fastest kernel's time


def launch_bound(samples: pd.DataFrame, floor_ms: float) -> int | None:
    """The largest size (of ``samples``' square sizes, from the smallest up) at which the launch-overhead floor is
    at least LAUNCH_BOUND_SHARE of the fastest plotted kernel's median time; None where there is none."""
    if not floor_ms == floor_ms or samples.empty:
        return None
    fastest = samples.groupby(["M", "variant"]).ms.median().groupby(level="M").min().sort_index()
    bound = None
    for n, ms in fastest.items():
        if floor_ms < LAUNCH_BOUND_SHARE * ms:
            break
        bound = int(n)
    return bound


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
    ratio = have[0][1].working_set_over_l2
    parts = [
        f"{v} moves {r.dram_over_minimum:.1f}× the minimum DRAM traffic ({r.sectors_per_request:.1f} sectors per "
        "global load request)"
        for v, r in have
    ]
    return f"Nsight Compute at {n}³ ({regimes.words(ratio, 1.0, 'A, B and C')}): " + "; ".join(parts) + "."


def span(values, fmt: str = "{:.1f}", unit: str = "×") -> str:
    """'2.6×' for one value (or equal ones), '2.6× to 3.1×' for a range; NaNs ignored."""
    v = pd.Series(values, dtype=float).dropna()
    if v.empty:
        return "—"
    lo, hi = fmt.format(v.min()), fmt.format(v.max())
    return f"{lo}{unit}" if lo == hi else f"{lo}{unit} to {hi}{unit}"

"""One look for every page of the report (issue 28): the index, the run page and the study pages share this page
shell, style sheet and table markup, so the site reads as one document on a 1400 px screen and on a phone.

- ``page``: a whole HTML document: the viewport tag (a phone lays the page out at its own width), the title, the
  style sheet, the body.
- ``CSS``: text at a reading width (about 90 characters a line), tables and figures as wide as the page allows,
  text columns left-aligned and number columns right-aligned, a table wider than a phone scrolling inside itself
  with a shadow at the edge it scrolls to; no text under 15 px (``--small``: tables, captions, CSV links, the links
  between pages, code), at any width (issue 39).
- ``table``: a table's HTML with each column marked as text or numbers.
- ``figure``: a chart's HTML: the image scaled to the width of its box, a link to it at full size.
"""

import html
import re

import pandas as pd

CSS = """<style>
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
:root { --small: .9375rem; }  /* 15 px: the smallest text, legible on a phone */
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 16px; line-height: 1.5; color: #1f2328; background: #fff; max-width: 80rem; margin: 0 auto;
  padding: .5rem 1.25rem 3rem; }
.cell, .output_wrapper, .output, .output_area, .output_subarea { margin: 0; padding: 0; max-width: 100%; }
a.anchor-link { display: none; }
h1 { font-size: 1.9rem; line-height: 1.25; margin: 1.2rem 0 .8rem; }
h2 { font-size: 1.45rem; line-height: 1.3; margin: 2rem 0 .6rem; border-bottom: 1px solid #d8dee4;
  padding-bottom: .2rem; }
h3 { font-size: 1.15rem; margin: 1.4rem 0 .5rem; }
p, li, dd, figcaption, .gpumm-text { max-width: 46rem; overflow-wrap: break-word; }
p, ul, ol { margin: .6rem 0; }
a { color: #0550ae; }
code { font-size: max(.9em, var(--small)); background: #f3f4f6; padding: 0 .25em; border-radius: 3px;
  overflow-wrap: anywhere; }
p.banner, div.banner { background: #fff3cd; border: 1px solid #e0c060; padding: .5rem .9rem; max-width: none;
  margin: .5rem 0; }
nav, p.nav { font-size: var(--small); margin: .4rem 0 1rem; max-width: none; }
.scroll { overflow-x: auto; max-width: 100%; margin: .6rem 0; }
/* a box that scrolls sideways shows a shadow at the edge it scrolls to: the shadows stay at the box's edges and
   two covers of its background, scrolling with the content, hide each where the content ends (the shadows start
   1 px in: a cover hides them whole, with no hairline, where the box's edge falls between two device pixels) */
.scroll, details.code pre { --bg: #fff; background:
  linear-gradient(to right, var(--bg) 40%, transparent) left / 2.5rem 100% no-repeat local,
  linear-gradient(to left, var(--bg) 40%, transparent) right / 2.5rem 100% no-repeat local,
  radial-gradient(farthest-side at 0 50%, rgb(0 0 0 / .22), transparent) left 1px top 0 / .8rem 100% no-repeat scroll,
  radial-gradient(farthest-side at 100% 50%, rgb(0 0 0 / .22), transparent) right 1px top 0 / .8rem 100% no-repeat
  scroll, var(--bg); }
table { border-collapse: collapse; font-size: var(--small); margin: 0; max-width: 100%; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #d8dee4; vertical-align: top; text-align: left; }
th { vertical-align: bottom; font-weight: 600; overflow-wrap: break-word; }
td { overflow-wrap: break-word; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.n, td:first-child { white-space: nowrap; }
tbody tr:nth-child(even) { background: rgb(31 35 40 / .035); }  /* #f6f8fa on white; the shadow shows through */
table.headline td:nth-child(2) { font-weight: 600; }
table.headline td:first-child { white-space: normal; min-width: 9rem; }
p.csv { font-size: var(--small); margin: .2rem 0 1rem; }
figure.gpumm { margin: 1rem 0; max-width: 100%; }
figure.gpumm img { max-width: 100%; height: auto; vertical-align: top; }
figure.gpumm figcaption { font-size: var(--small); color: #3d444d; }
figure.gpumm a.full { display: inline-block; font-size: var(--small); margin: .1rem 0 .2rem; }
/* the chart at full size, alone over the page, scrolling both ways; the back button or 'close' leaves it */
.chart a.close { display: none; }
.chart:target { position: fixed; inset: 0; z-index: 10; overflow: auto; padding: 0 .5rem .5rem; margin: 0;
  background: #fff; }
.chart:target img { max-width: none; }
.chart:target a.close { display: block; position: sticky; top: 0; left: 0; width: max-content; padding: .4rem .2rem;
  font-size: 1rem; background: #fff; }
details.code { margin: .3rem 0; max-width: 100%; }
details.code summary { cursor: pointer; font-size: var(--small); }
details.code pre { overflow-x: auto; max-width: 100%; border: 1px solid #d8dee4; border-radius: 4px;
  padding: .5rem .7rem; margin: .3rem 0 .8rem; font-size: var(--small); line-height: 1.4; --bg: #f6f8fa; }
details.code pre code { background: none; padding: 0; overflow-wrap: normal; font-size: inherit; }
@media (max-width: 700px) {
  body { padding: .25rem .7rem 2rem; }
  h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; }
}
</style>
"""


def page(title: str, body: str) -> str:
    """A whole page of the report: the viewport tag, the title, the style sheet and ``body``."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
{CSS}</head><body>
{body}
</body></html>
"""


NUMBER = re.compile(r"^[-−+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?(e[-+]?\d+)?\s?(%|×|x|µs|ms|s)?$")


def numeric(values) -> bool:
    """Whether a column of shown cells is numbers (``—`` for none allowed): it is then right-aligned."""
    cells = [str(v) for v in values if str(v) not in ("—", "", "nan")]
    return bool(cells) and all(NUMBER.match(c) and any(ch.isdigit() for ch in c) for c in cells)


def table(df: pd.DataFrame, classes: str = "", raw: bool = True, numbers: set | None = None) -> str:
    """A table's HTML, each number column right-aligned (``numbers``: their names; found from the cells when not
    given), wrapped so that on a narrow screen it scrolls inside itself. ``raw``: the cells are HTML already."""
    numbers = numbers if numbers is not None else {c for c in df.columns if numeric(df[c])}

    def cell(tag: str, col, value) -> str:
        text = str(value) if raw else html.escape(str(value))
        return f'<{tag} class="n">{text}</{tag}>' if col in numbers else f"<{tag}>{text}</{tag}>"

    head = "".join(cell("th", c, c if raw else c) for c in df.columns)
    rows = "\n".join("<tr>" + "".join(cell("td", c, v) for c, v in zip(df.columns, r)) + "</tr>" for r in df.values)
    return (
        f'<div class="scroll"><table class="{html.escape(classes)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>\n{rows}\n</tbody></table></div>"
    )


def figure(png: str, alt: str, caption: str, ident: str) -> str:
    """A chart's HTML: the PNG (base64) embedded and scaled to the width of its box (a phone's too); the image and a
    'full size' hint under it link to the chart alone, at its drawn width, over the page (``#<ident>-full``, CSS
    :target: no script, no file, no request; a data: link would be refused by Chromium), which the back button or
    its 'close' link leaves. ``caption``: HTML."""
    full = f"{ident}-full"
    return (
        f'<figure class="gpumm" id="{ident}"><div class="chart" id="{full}"><a class="close" href="#{ident}">'
        f'close ✕</a><a href="#{full}"><img src="data:image/png;base64,{png}" alt="{html.escape(alt)}"></a></div>'
        f'<a class="full" href="#{full}">full size</a><figcaption>{caption}</figcaption></figure>'
    )

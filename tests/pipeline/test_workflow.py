"""End to end, in a copy of the project: bad config stops before any job; replay renders every page."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from gpumm.archive import reference
from gpumm.report.pages import PAGES
from gpumm.setup import manifest


def snakemake(tree, *args):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=tree, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "bad, key",
    [
        ("sizes: [0]", "sizes[0] = 0"),
        ("variants: {tiled: {TILE: [64]}}", "variants.tiled.TILE: 64 is not allowed"),
        ("variants: {fastest: {}}", "variants.fastest: unknown variant"),
        ("mode: fast", 'mode = "fast"'),
        ("timing: {min_samples: 2.5}", "timing.min_samples = 2.5"),
        ("sizes: [16.0]", "config: sizes[0] = 16.0 is not allowed: 16.0 is not of type 'integer'"),
        ("variants: {tiled: {TILE: [8.0, 16]}}", "config: variants.tiled.TILE[0] = 8.0 is not allowed"),
        ("tune: true\ntune: false", "config file bad.yaml:2:1: tune: key given twice (first at line 1)"),
        ("variants: {tiled: {TILE: [8]}}\nmemory_study_variants: [tilde]", "memory_study_variants: tilde is not a"),
    ],
)
def test_bad_config_stops_before_any_job(tree, bad, key):
    (tree / "bad.yaml").write_text(bad + "\n")
    out = snakemake(tree, "--configfile", "bad.yaml")
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert key in text and "Nothing was run." in text
    assert "Traceback" not in text
    assert not (tree / "results").exists()


def test_the_command_line_and_a_file_give_one_verdict_and_a_narrowed_family_runs(tree):
    out = snakemake(tree, "-n", "--config", "sizes=[16.0]")
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "config: sizes[0] = 16.0 is not allowed" in text and "Traceback" not in text
    (tree / "narrow.yaml").write_text("variants: {tiled: {TILE: [8]}}\n")  # tiled_tile16 is a memory-study variant
    out = snakemake(tree, "-n", "--configfile", "narrow.yaml", "--config", "mode=replay")
    assert out.returncode == 0, out.stderr[-2000:]


def test_a_yaml_error_in_config_yaml_names_the_file_line_and_column(tree):
    cfg = tree / "config.yaml"
    good = cfg.read_text()
    lines = good.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("tune:"))
    try:
        cfg.write_text("".join(lines[:at]) + "tune: [true\n" + "".join(lines[at + 1 :]))
        out = snakemake(tree, "-n")
        text = out.stdout + out.stderr
        assert out.returncode != 0 and "Nothing was run." in text
        assert re.search(
            rf"config file config\.yaml:\d+:\d+: .* \(while parsing a flow sequence at line {at + 1}\)", text
        )
        cfg.write_text(good + "\nvariants: {tiled: {}}\n")
        out = snakemake(tree, "-n")
        text = out.stdout + out.stderr
        assert out.returncode != 0
        first = next(i for i, line in enumerate(lines) if line.startswith("variants:")) + 1
        assert f"variants: key given twice (first at line {first})" in text
    finally:
        cfg.write_text(good)


def test_a_damaged_archive_that_is_not_replayed_stops_nothing(tree):
    bad = tree / "data" / "reference" / "h100-race"
    (bad / "raw").mkdir(parents=True)
    (bad / "raw" / "provenance.json").write_text("")
    try:
        out = snakemake(tree, "-n", "--config", "mode=replay", "replay_from=h200")
        assert out.returncode == 0, out.stderr[-2000:]
        assert "gpumm: archive h100-race left out: data/reference/h100-race/raw/provenance.json: cannot be read" in (
            out.stderr
        )
        out = snakemake(tree, "-n", "--config", "mode=replay", "replay_from=h100-race")
        text = out.stdout + out.stderr
        assert out.returncode != 0 and "replay_from = 'h100-race'" in text and "Traceback" not in text
    finally:
        shutil.rmtree(bad)


@pytest.fixture(scope="module")
def replayed(tree):
    """The README's command in replay mode, run once in the copy of the project: (tree, seconds)."""
    if not reference.available(tree / "data" / "reference"):
        pytest.fail("data/reference/ holds no archived run: the replay report cannot be built")
    start = time.time()
    out = snakemake(tree, "--config", "mode=replay")
    seconds = time.time() - start
    assert out.returncode == 0, out.stderr[-3000:]
    return tree, seconds


@pytest.mark.slow
def test_replay_renders_every_page_naming_its_source(replayed):
    tree, seconds = replayed
    report = tree / "results" / "report"
    for page in ["index", *(p["notebook"] for p in PAGES)]:
        html = (report / f"{page}.html").read_text()
        assert re.search(r"Data source: REPLAYED from the archived run data/reference/[\w.-]+", html), page
        if page != "index":
            assert "<img" in html or "image/png" in html or page == "profiles", page
            ids = next(p["ids"] for p in PAGES if p["notebook"] == page)
            assert all(sid in html for sid in ids), (page, [sid for sid in ids if sid not in html])
            assert 'href="index.html"' in html, page
    index = (report / "index.html").read_text()
    for p in PAGES:
        assert f'href="{p["notebook"]}.html"' in index
        for sid in p["ids"]:
            assert sid in index
    again = snakemake(tree, "--config", "mode=replay", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
    print(f"replay report built in {seconds:.0f} s")


def test_the_default_replay_is_a_complete_archive_of_todays_code(replayed):
    """Issue 16: the report a reader opens replays a complete archive of the current methods: no variant is
    stale or missing, no page says a study is not in this run, and the index says what the study cost."""
    import pandas as pd

    tree, _ = replayed
    variants = pd.read_csv(tree / "results" / "tables" / "variants.csv")
    assert (variants.origin == "replayed").all() and not variants.stale.astype(bool).any(), variants[
        variants.stale.astype(bool) | (variants.origin != "replayed")
    ].variant.tolist()
    for page in [p["notebook"] for p in PAGES]:
        html = (tree / "results" / "report" / f"{page}.html").read_text()
        assert "not in this run" not in html, page
    index = (tree / "results" / "report" / "index.html").read_text()
    assert "What the study costs" in index and "NVIDIA H100 80GB HBM3" in index and "NVIDIA H200" in index


@pytest.mark.slow
def test_every_study_tag_of_a_variant_is_on_that_studys_page(replayed):
    """A variant tagged with an ID appears on a page that shows the ID (in its figure, table or text); S1-C1, the
    claim the race to cuBLAS answers, is on two pages (seed 001's and the ladder)."""
    import pandas as pd

    from gpumm.report import index as report
    from gpumm.setup import catalog

    tree, _ = replayed
    # as a reader sees them: a name in a table may carry <wbr> (a line-break opportunity) after its underscores
    pages = {
        p["notebook"]: re.sub(r"<wbr\s*/?>", "", (tree / "results" / "report" / f"{p['notebook']}.html").read_text())
        for p in PAGES
    }
    variants = pd.read_csv(tree / "results" / "tables" / "variants.csv")
    missing = []
    for v in variants.itertuples():
        fam = catalog.load()[v.family]
        for sid in str(v.studies).split():
            shown_on = [p["notebook"] for p in PAGES if sid in p["ids"]] or [report.page_of(sid)]
            if shown_on[0] and not any(v.variant in pages[p] or v.family in pages[p] for p in shown_on):
                missing.append(f"{v.variant} ({sid}) not on {' or '.join(shown_on)}")
        assert fam["studies"]  # every family serves at least one study
    assert not missing, missing


@pytest.mark.slow
def test_every_table_and_figure_links_its_csv(replayed):
    tree, _ = replayed
    report = tree / "results" / "report"
    for p in PAGES:
        html = (report / f"{p['notebook']}.html").read_text()
        links = re.findall(r'href="(data/[^"]+\.csv)"', html)
        assert links, p["notebook"]
        for link in links:
            assert (report / link).is_file() and (report / link).stat().st_size > 0, link


@pytest.mark.slow
def test_snakemake_report_carries_the_pages(replayed):
    import zipfile

    tree, _ = replayed
    out = snakemake(tree, "--report", "report.zip", "--config", "mode=replay")
    assert out.returncode == 0, out.stderr[-2000:]
    names = zipfile.ZipFile(tree / "report.zip").namelist()
    for p in ["index", *(p["notebook"] for p in PAGES)]:
        assert any(n.endswith(f"/{p}.html") for n in names), p


BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# the layout a reader sees at any width (issue 28): the viewport tag, no sideways scroll of the page (a wide table
# scrolls inside its own box), legible text at a reading width, text cells left-aligned and numbers right
LAYOUT = """() => {
  const ctx = document.createElement('canvas').getContext('2d');
  const lines = [];
  for (const p of document.querySelectorAll('p, li, figcaption')) {
    // the data-source banner and the links between pages span the page: not running text
    if (p.closest('table, nav, .nav, .banner') || !p.innerText.trim()) continue;
    const css = getComputedStyle(p);
    ctx.font = css.font;
    const sample = 'the quick brown fox jumps over the lazy dog, 12.5 GB/s ';
    const box = p.getBoundingClientRect().width / (ctx.measureText(sample).width / sample.length);
    const chars = Math.min(box, p.innerText.length);  // a short line is short whatever its box
    lines.push([Math.round(chars), parseFloat(css.fontSize), p.innerText.slice(0, 40)]);
  }
  const unboxed = [];
  for (const el of document.querySelectorAll('table, img, figure, pre')) {
    if (el.getBoundingClientRect().right <= window.innerWidth + 1) continue;
    let box = el.parentElement;
    while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
    if (!box || box.getBoundingClientRect().right > window.innerWidth + 1)
      unboxed.push(el.tagName + ': ' + (el.innerText || el.alt || '').slice(0, 40));
  }
  const aligned = [];  // column by column: a column of numbers right-aligned, a cell of words left
  const isNumber = t => /^[-+−]?[\\d,.]+\\s*(%|×|µs|ms|s)?$/.test(t);
  for (const table of document.querySelectorAll('table')) {
    const columns = {};
    for (const row of table.querySelectorAll('tbody tr'))
      Array.from(row.cells).forEach((td, k) => (columns[k] = columns[k] || []).push(td));
    for (const cells of Object.values(columns)) {
      const shown = cells.filter(td => !['', '—'].includes(td.innerText.trim()));
      const numbers = shown.length && shown.every(td => isNumber(td.innerText.trim()));
      for (const td of shown) {
        const text = td.innerText.trim(), align = getComputedStyle(td).textAlign;
        if (numbers && align !== 'right') aligned.push(text + ' (' + align + ')');
        const words = !isNumber(text) && /[a-z]{3}/i.test(text);
        if (words && !['left', 'start'].includes(align)) aligned.push(text.slice(0, 30));
      }
    }
  }
  return {viewport: (document.querySelector('meta[name=viewport]') || {}).content || '', lines, unboxed, aligned,
          pageScroll: document.documentElement.scrollWidth,
          bodyFont: parseFloat(getComputedStyle(document.body).fontSize)};
}"""

# run in every page: what a reader at 1400 px would meet (issue 18)
PAGE_CHECK = """() => {
  const LAYOUT = __LAYOUT__;
  const wide = [];
  for (const el of document.querySelectorAll('table, img, figure, pre, p, ul, div.rendered_html')) {
    const parent = el.parentElement;
    if (!parent) continue;
    const r = el.getBoundingClientRect(), q = parent.getBoundingClientRect();
    if (r.width > q.width + 1 || r.right > window.innerWidth + 1 || el.scrollWidth > el.clientWidth + 1)
      wide.push(el.tagName + ' ' + Math.round(r.width) + ' px in ' + Math.round(q.width) + ': '
                + (el.innerText || el.alt || '').slice(0, 50));
  }
  // a heading with nothing after it before the next heading of its level or above
  const blocks = Array.from(document.querySelectorAll('h1, h2, h3, h4, p, table, figure, img, ul, ol, pre'))
    .filter(el => !el.closest('figure') || el.tagName === 'FIGURE');
  const empty = [];
  blocks.forEach((el, i) => {
    const m = /^H(\\d)$/.exec(el.tagName);
    if (!m || el.tagName === 'H1') return;
    const next = blocks.slice(i + 1).find(b => !/^H\\d$/.test(b.tagName) || Number(b.tagName[1]) <= Number(m[1]));
    if (!next || /^H\\d$/.test(next.tagName)) empty.push(el.innerText);
  });
  return {
    first: document.body.innerText.trim().split('\\n')[0],
    scroll: document.documentElement.scrollWidth, width: window.innerWidth, wide, empty,
    images: Array.from(document.images).map(i => [i.naturalWidth, i.naturalHeight, i.src.slice(0, 15), i.alt]),
    ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
    index: !!document.querySelector('a[href="index.html"]'),
    headlines: Object.fromEntries(Array.from(document.querySelectorAll('tr[data-key]')).map(
      tr => [tr.dataset.key, tr.cells[1].innerText.trim()])),
    text: document.body.innerText, title: document.title, ...LAYOUT()};
}""".replace("__LAYOUT__", LAYOUT)


MIN_PX = 15  # the smallest text on a phone (issue 39)
READING_CHARS = 100  # characters a line of text may hold at most (about 80-100 reads well)

# run in every page on a 390 px phone (issue 39): no text under 15 px (table cells, captions, CSV links, the links
# between pages and code excerpts are the smallest); every image fits its box and the screen, and a chart is a link
# to itself at full size with a visible hint; a box that scrolls sideways shows that it does
PHONE_CHECK = """() => {
  const LAYOUT = __LAYOUT__;
  document.querySelectorAll('details').forEach(d => (d.open = true));  // code excerpts as a reader opens them
  const small = [];  // every text of the page: table cells, CSV links, captions, the links between pages, code
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = texts.nextNode(); t; t = texts.nextNode()) {
    const el = t.parentElement, size = parseFloat(getComputedStyle(el).fontSize);
    if (t.textContent.trim() && size < MIN_PX)
      small.push(el.tagName + ' ' + size + ' px: ' + t.textContent.trim().slice(0, 30));
  }
  const images = [], unlinked = [];
  for (const img of document.images) {
    const r = img.getBoundingClientRect(), box = img.closest('figure') || img.parentElement;
    if (r.width > box.clientWidth + 1 || r.width > window.innerWidth || r.right > window.innerWidth + 1)
      images.push(Math.round(r.width) + ' px in ' + box.clientWidth + ': ' + img.alt.slice(0, 40));
    const figure = img.closest('figure'), link = img.closest('a[href]');
    if (figure && (!link || !/full size/i.test(figure.innerText))) unlinked.push(img.alt.slice(0, 40));
  }
  const silent = [];  // a box that scrolls sideways with nothing to show it: a shadow at the edge, under no opaque row
  for (const box of document.querySelectorAll('body *')) {
    const css = getComputedStyle(box);
    if (!['auto', 'scroll'].includes(css.overflowX) || box.scrollWidth <= box.clientWidth + 1) continue;
    const opaque = Array.from(box.querySelectorAll('tr, th, td')).filter(
      c => /^rgb\\(/.test(getComputedStyle(c).backgroundColor));
    if (!css.backgroundImage.includes('gradient') || opaque.length)
      silent.push(box.tagName + '.' + box.className + ' ' + box.scrollWidth + ' px in ' + box.clientWidth
                  + (opaque.length ? ' (' + opaque.length + ' opaque cells)' : ''));
  }
  return {small, images, unlinked, silent, ...LAYOUT()};
}""".replace("__LAYOUT__", LAYOUT).replace("MIN_PX", str(MIN_PX))


def report_pages() -> list[str]:
    """Every page of a report: the index, the run page and the study pages."""
    return ["index", "run", *(p["notebook"] for p in PAGES)]


# The kinds of report the browser tests read: the fixture that makes one, by name, and how its report folder
# (results/report, beside results/tables) comes from the fixture's value: the replay of the README's command, and
# a measured report (tests/conftest.py, `measured`: real measured numbers rendered as a measured run renders them).
REPORTS = {"replayed": lambda made: made[0] / "results" / "report", "measured": lambda made: made[1]}


# a measured report is made once a worker (with pytest-xdist): its tests on one worker
@pytest.fixture(params=[pytest.param(k, marks=pytest.mark.xdist_group(k)) for k in sorted(REPORTS)])
def report(request):
    """The report folder of one kind of report (REPORTS)."""
    return REPORTS[request.param](request.getfixturevalue(request.param))


def chromium() -> str:
    """Chromium's path; the test skips, saying what to install, where Chromium or playwright is missing."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("Chromium is not installed (Debian: apt install chromium; .ci/run installs it)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed: pip install -e '.[test]'")
    return exe


def read_at_1400(report) -> None:
    """Every page of ``report`` at 1400 px in headless Chromium, as test_pages_read_well_in_a_browser_at_1400_px
    says; the headline numbers are checked against the tables beside the report (results/tables)."""
    import pandas as pd
    from playwright.sync_api import sync_playwright

    exe, tables, seen = chromium(), report.parent / "tables", {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        remote = []
        page.on("request", lambda r: remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        for name in report_pages():
            page.goto((report / f"{name}.html").as_uri())
            r = seen[name] = page.evaluate(PAGE_CHECK)
            assert r["first"].startswith("Data source:"), (name, r["first"][:80])
            assert r["scroll"] <= r["width"] and not r["wide"], (name, r["wide"][:5])
            assert all(w > 0 and h > 0 and src.startswith("data:image") for w, h, src, _ in r["images"]), name
            assert all(alt and not alt.startswith("No description") for *_, alt in r["images"]), name
            assert not r["empty"], (name, r["empty"])
            assert not remote, (name, remote[:3])
            assert "Traceback" not in r["text"] and "Warning" not in r["text"], name
            assert r["viewport"].startswith("width=device-width"), name
            long = [line for line in r["lines"] if line[0] > READING_CHARS]
            assert not long, (name, long[:3])  # text at a reading width
            assert not r["aligned"], (name, r["aligned"][:5])  # text cells left, numbers right
            if name not in ("index", "run"):
                assert r["index"], name
                this = next(p for p in PAGES if p["notebook"] == name)
                assert r["title"] == this["title"]
                assert not set(this["ids"]) - set(r["ids"]), (name, set(this["ids"]) - set(r["ids"]))
        browser.close()
    heads = pd.read_csv(tables / "headlines.csv")
    assert len(heads) >= 6 and seen["index"]["headlines"] == dict(zip(heads.key, heads.value))
    v = pd.read_csv(tables / "verdicts.csv")  # the FP32 race, paired at 4096³ (the BF16 one has its own headline)
    v = v[(v.race == "fp32") & (v.M == 4096) & (v.role != "reference") & (v.regime == "sustained, paired")]
    assert seen["index"]["headlines"]["best_share_4096"].startswith(f"{v.share.max():.1%} (95% interval")


# the widest chart of a page, opened at full size from its hint: alone on the screen at its drawn width, its box
# scrolling sideways; and the page again, the chart fitted, once closed
FULL_SIZE = """() => {
  const img = Array.from(document.images).filter(i => i.closest('figure'))
    .sort((a, b) => b.naturalWidth - a.naturalWidth)[0];
  if (!img) return null;
  const hint = Array.from(img.closest('figure').querySelectorAll('a')).find(a => /full size/i.test(a.innerText));
  return hint ? {alt: img.alt, natural: img.naturalWidth, hint: hint.getAttribute('href')} : {alt: img.alt};
}"""
SHOWN = """alt => {
  const img = Array.from(document.images).find(i => i.alt === alt), r = img.getBoundingClientRect();
  const box = img.parentElement.closest('div, figure');
  const top = document.elementFromPoint(window.innerWidth / 2, Math.min(r.bottom, window.innerHeight) - 5);
  const b = box.getBoundingClientRect();
  const covers = b.left <= 0 && b.top <= 0 && b.right >= window.innerWidth && b.bottom >= window.innerHeight;
  return {width: r.width, alone: covers && (img.contains(top) || (top && top.contains(img)) || false),
          scrolls: box.scrollWidth > box.clientWidth + 1, page: document.documentElement.scrollWidth};
}"""


def read_on_a_phone(report) -> None:
    """Every page of ``report`` on a 390 px phone in headless Chromium, as test_pages_read_on_a_phone_at_390_px
    says."""
    from playwright.sync_api import sync_playwright

    exe = chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=BROWSER_ARGS)
        phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, device_scale_factor=3)
        remote = []
        phone.on("request", lambda r: remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        for name in report_pages():
            phone.goto((report / f"{name}.html").as_uri())
            r = phone.evaluate(PHONE_CHECK)
            # no page shows a cell's stderr (matplotlib's font search once printed a screenful, wider than a phone)
            assert "output_stderr" not in (report / f"{name}.html").read_text(), name
            assert r["viewport"].startswith("width=device-width"), name
            assert r["pageScroll"] <= 390, (name, r["pageScroll"])  # the page never scrolls sideways
            assert not r["unboxed"], (name, r["unboxed"][:3])
            assert not r["small"], (name, f"text under {MIN_PX} px", r["small"][:5])
            small = [line for line in r["lines"] if line[1] < MIN_PX]
            assert not small and r["bodyFont"] >= 16, (name, r["bodyFont"], small[:3])
            assert all(line[0] <= READING_CHARS for line in r["lines"]), name
            assert not r["images"], (name, "image wider than its box or the screen", r["images"][:3])
            assert not r["unlinked"], (name, "chart with no link to its full size and no hint", r["unlinked"][:3])
            assert not r["silent"], (name, "box scrolls sideways with no sign of it", r["silent"][:3])
            full = phone.evaluate(FULL_SIZE)
            if full:  # the widest chart, opened from its hint and closed again
                assert full.get("hint"), (name, "no full size link", full["alt"][:40])
                phone.locator(f'a[href="{full["hint"]}"]', has_text=re.compile("full size", re.I)).first.click()
                shown = phone.evaluate(SHOWN, full["alt"])
                assert shown["width"] >= full["natural"] - 1 and shown["alone"], (name, shown)
                assert (shown["scrolls"] or full["natural"] <= 390) and shown["page"] <= 390, (name, shown)
                phone.go_back()
                assert phone.evaluate(SHOWN, full["alt"])["width"] <= 390, name
            assert not remote, (name, remote[:3])
        browser.close()


@pytest.mark.slow
def test_pages_read_well_in_a_browser_at_1400_px(report):
    """Headless Chromium, every page (index, run page and the study pages) at 1400 px: it opens, starts with its
    data source, links the index; no element is wider than its container; every image is embedded, non-empty and
    has alt text; no request leaves the machine; no section heading stands without content; every study ID of the
    page is an anchor on it; the index's headline numbers are the headline table's, and the fastest kernel's share
    of cuBLAS is the one the summary table gives."""
    read_at_1400(report)


@pytest.mark.slow
def test_pages_read_on_a_phone_at_390_px(report):
    """Issues 28 and 39: every page on a 390 px phone (Chromium, mobile, 3 device pixels a CSS pixel) lays out at
    the phone's width (the viewport tag) and never scrolls sideways; body text is 16 px and no text is under 15 px
    (table cells, CSV links, captions, the links between pages and code excerpts included); every image is as wide
    as its box at most, and the screen; a chart is a link, with a visible 'full size' hint, that shows it alone at
    its drawn width (its box scrolling sideways) and back; a box that scrolls sideways (a wide table, an opened code
    excerpt) shows a shadow at its edge; no request leaves the machine."""
    read_on_a_phone(report)


@pytest.mark.slow
def test_the_h100_archive_replays_the_ladder_to_cublas(tree, tmp_path):
    """Issue 11: replaying the H100 archive shows the rungs' rates, FP32-only check, counters and roofline."""
    import shutil

    race = tmp_path / "race"
    shutil.copytree(tree, race, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    out = snakemake(race, "results/report/ladder.html", "--config", "mode=replay", "replay_from=h100")
    assert out.returncode == 0, out.stderr[-3000:]
    html = (race / "results" / "report" / "ladder.html").read_text()
    assert "REPLAYED from the archived run data/reference/h100" in html
    for text in ["The race to cuBLAS", "Share of cuBLAS (%)", "What each rung moved", "Roofline", "sm80_xmma_gemm"]:
        assert text in html, text
    assert re.search(r"double_buffer</strong> over warptile — the counters its file names: .+GFLOP/s ×\d", html)
    best = r"Fastest hand-written kernel on NVIDIA H100[^:]*, sustained and paired \([^)]*\): at 4096³, "
    best += r"(<strong>)?\w+(</strong>)? reaches (<strong>)?[\d.]+%(</strong>)? of cuBLAS \(95% interval"
    assert re.search(best, html)
    assert html.count("image/png") >= 2  # the roofline among the page's figures
    shown = (race / "results" / "report" / "data").glob("ladder-race-*.csv")
    assert {p.name for p in shown} >= {"ladder-race-tflops.csv", "ladder-race-share.csv", "ladder-race-counters.csv"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "subset",
    [
        "[transpose_naive]",  # no matrix multiply at all: no ladder, no cuBLAS, no loop counts
        "[blocktile_1d]",  # a kernel the archive does not hold: not measured, no build report
        "[cpu_blas1]",  # no CUDA kernel: no resources, no loops
    ],
)
def test_every_page_renders_for_a_subset(tree, tmp_path, subset):
    """`only` runs a subset (issue 10); every page must still render, saying what it lacks, not crash."""
    import shutil

    copy = tmp_path / "tree"
    shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    out = snakemake(copy, "--config", "mode=replay", f"only={subset}")
    log = copy / "results" / "logs" / "pages.log"
    assert out.returncode == 0, (log.read_text() if log.is_file() else "")[-2000:] + out.stderr[-2000:]
    for page in ["index", *(p["notebook"] for p in PAGES)]:
        html = (copy / "results" / "report" / f"{page}.html").read_text()
        assert "Data source: REPLAYED" in html and "Traceback" not in html, (subset, page)


@pytest.mark.slow
def test_a_damaged_table_is_made_again_by_the_plain_command(replayed, tmp_path):
    """A table cut short or emptied after a run: the report's steps refuse it in one line, and the plain command
    makes the tables again (then the pages) instead of rendering what is left of it."""
    tree, _ = replayed
    tables = tree / "results" / "tables"
    summary = tables / "summary.csv"
    good = summary.read_bytes()
    summary.write_bytes(good[:20000])
    try:
        by_hand = subprocess.run(
            [sys.executable, "-m", "gpumm", "pages", "--pages", "ladder", "--tables", str(tables)]
            + ["--notebooks-out", str(tmp_path / "nb"), "--out", str(tmp_path / "out")],
            cwd=tree,
            capture_output=True,
            text=True,
        )
        lines = by_hand.stderr.strip().splitlines()
        assert by_hand.returncode == 2 and len(lines) == 1, by_hand.stderr
        assert lines[0].startswith("gpumm pages: results/tables/summary.csv: ") and "run snakemake again" in lines[0]
        assert not (tmp_path / "out").exists() and not (tmp_path / "nb").exists()
        out = snakemake(tree, "--cores", "2", "--config", "mode=replay")
        assert out.returncode == 0, out.stderr[-3000:]
        assert "gpumm: results/tables/summary.csv: " in out.stderr and "collect makes the tables again" in out.stderr
        assert re.search(r"localrule collect:", out.stdout + out.stderr)
        assert re.search(r"localrule pages:", out.stdout + out.stderr)
        assert summary.read_bytes() == good  # made again, whole
        summary.write_bytes(b"")  # emptied, and a step's output damaged after the run, in one run
        raw = tree / "results" / "raw" / "naive" / "samples.csv"
        raw_good = raw.read_bytes()
        raw.write_bytes(raw_good[:5000])
        out = snakemake(tree, "--cores", "2", "--config", "mode=replay")
        assert out.returncode == 0, out.stderr[-3000:]
        assert "gpumm: results/tables/summary.csv: " in out.stderr and "collect makes the tables again" in out.stderr
        assert "gpumm: results/raw/naive/samples.csv: " in out.stderr and "its step runs again" in out.stderr
        assert raw.read_bytes() == raw_good and summary.read_bytes() == good  # copied again, tables made again
    finally:
        if summary.read_bytes() != good:
            summary.write_bytes(good)


def _render_edited(tree, tmp_path, name, edits, pages):
    """The replayed tables with ``edits`` ({table: function of its DataFrame}) applied and the manifest written
    again, then ``pages`` rendered from them: {page: its text, tags stripped}."""
    import pandas as pd

    from gpumm.setup import manifest

    src = tree / "results" / "tables"
    tables = tmp_path / name / "tables"
    shutil.copytree(src, tables)
    for table, edit in edits.items():
        path = tables / f"{table}.csv"
        edit(pd.read_csv(path)).to_csv(path, index=False)
    manifest.write(tables, [tables / rel for rel in manifest.read(src / manifest.NAME)])
    out = subprocess.run(
        [sys.executable, "-m", "gpumm", "pages", "--pages", ",".join(pages), "--tables", str(tables)]
        + ["--jobs", "1", "--notebooks-out", str(tables.parent / "nb"), "--out", str(tables.parent / "html")],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    strip = lambda h: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", h.replace("<wbr>", "")))  # noqa: E731
    return {p: strip((tables.parent / "html" / f"{p}.html").read_text()) for p in pages}


@pytest.mark.slow
def test_sentences_flip_with_their_tables(replayed, tmp_path):
    """Issue 28: a statement with a number or a comparison is written from its table, never typed: rendered from
    hand-edited tables, each statement flips (bank conflicts cut but not to zero / gone; a goal not met / met; a
    kernel that reaches the device copy / none does)."""
    tree, _ = replayed
    pages = ["transpose", "ladder", "coalescing"]
    before = _render_edited(tree, tmp_path, "before", {}, pages)

    def no_conflicts(d):
        d.loc[d.variant.isin(["transpose_padded", "transpose_swizzle"]), "bank_conflicts"] = 0
        return d

    def goal(d):
        return d.assign(met=~d.met.astype(bool), of_copy_kernel=d.of_copy_kernel * (0.9 if d.met[0] else 1.2))

    def faster_rungs(d):  # the FP32 race's paired shares, as if cuBLAS ran at half its rate in the rounds
        fp32 = (d.race == "fp32") & (d.role != "reference")
        for col in ("share", "low", "high"):
            d.loc[fp32, col] *= 2
        return d

    def slower_copies(d):
        d.loc[d.pattern.isin(["strided", "copy4"]), "share_of_device_copy"] = 0.8
        return d

    edits = {"profile_summary": no_conflicts, "transpose_goal": goal, "verdicts": faster_rungs}
    after = _render_edited(tree, tmp_path, "after", {**edits, "coalescing_summary": slower_copies}, pages)

    said = re.compile(r"transpose_padded` [\d,]+ \(([^)]*)\)|transpose_padded [\d,]+ \(([^)]*)\)")
    assert "not to zero" in before["transpose"] and "none" not in said.search(before["transpose"]).group(0)
    assert "not to zero" not in after["transpose"] and "(none)" in said.search(after["transpose"]).group(0)
    was_met = "the goal is met." in before["transpose"]
    assert was_met != ("the goal is met." in after["transpose"])
    assert ("the goal is not met." in after["transpose"]) == was_met
    assert "The goal, 95% of cuBLAS or more at every size, is not met" in before["ladder"]
    assert "The goal, 95% of cuBLAS or more at every size, is met" in after["ladder"]
    assert "comes within 5% of the device-to-device copy" in before["coalescing"]
    assert "Neither reaches the device-to-device copy" in after["coalescing"]


@pytest.mark.slow
def test_damage_is_made_again_whatever_the_files_times_say(replayed, tmp_path):
    """Issue 29: a result cut or deleted after the run, its modification time kept as `touch -r` keeps it (a raw
    profile, a step's meta.json, a rendered page, the provenance, a record), is named on the console and made
    again by the plain command: every raw file and table then equals the clean run's. The pages by hand refuse
    tables whose manifest is gone."""
    tree, _ = replayed
    work = tmp_path / "tree"
    shutil.copytree(tree, work, symlinks=True, ignore=shutil.ignore_patterns(".snakemake"))
    results = work / "results"

    def kept(folder):
        return {
            p.relative_to(results): p.read_bytes()
            for p in (results / folder).rglob("*")
            if p.is_file() and p.suffix != ".log" and p.name != "manifest.json"
        }

    clean = kept("raw") | kept("tables")
    cases = [
        ("results/raw/naive/profile.csv", "its step runs again"),
        ("results/raw/naive/meta.json", "its step runs again"),
        ("results/report/ladder.html", "the pages are made again"),
        ("results/raw/provenance.json", "its step runs again"),
        ("results/.records/raw/tiled_tile16/samples.csv.json", "its step runs again"),
    ]
    for rel, _ in cases:  # damaged together: one run makes them all again
        f = work / rel
        if rel.endswith("provenance.json"):
            f.unlink()
        else:
            stat = f.stat()
            f.write_bytes(f.read_bytes()[:200])
            os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    out = snakemake(work, "--cores", "2", "--config", "mode=replay")
    assert out.returncode == 0, out.stderr[-3000:]
    named = [line for line in out.stderr.splitlines() if line.startswith("gpumm: results/")]
    for rel, then in cases:
        assert any(rel in line and line.endswith(then) for line in named), (rel, named)
    assert kept("raw") | kept("tables") == clean  # made again, equal to the clean run's
    assert (results / "report" / "ladder.html").stat().st_size > 100_000
    again = snakemake(work, "--config", "mode=replay")
    assert "Nothing to be done" in again.stdout + again.stderr and "gpumm: results/" not in again.stderr
    (results / "tables" / "manifest.json").unlink()
    by_hand = subprocess.run(
        [sys.executable, "-m", "gpumm", "pages", "--pages", "ladder", "--tables", "results/tables"]
        + ["--notebooks-out", str(tmp_path / "nb"), "--out", str(tmp_path / "out")],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert by_hand.returncode == 2 and by_hand.stderr.startswith("gpumm pages: results/tables/manifest.json: missing")
    assert not (tmp_path / "out").exists()


def test_a_damaged_archive_is_refused_by_name_never_replaced(tree):
    """Issue 29: the archive `replay_from: auto` would replay, damaged (its run.json cut), stops the run before any
    job with one line naming the file; naming the other archive replays it and says the damaged one is left out."""
    picked = reference.choose("auto", tree / "data" / "reference").name
    other = next(p.name for p in reference.available(tree / "data" / "reference") if p.name != picked)
    run = tree / "data" / "reference" / picked / "run.json"
    good = run.read_bytes()
    run.write_bytes(good[:100])
    try:
        out = snakemake(tree, "-n", "--config", "mode=replay")
        text = out.stdout + out.stderr
        assert out.returncode != 0 and "Nothing was run." in text and "Traceback" not in text
        said = f"replay_from = 'auto': archive {picked} is damaged (data/reference/{picked}/run.json: "
        assert said in text and f"git checkout -- data/reference/{picked}" in text and f"replay_from: {other}" in text
        out = snakemake(tree, "-n", "--config", "mode=replay", f"replay_from={other}")
        assert out.returncode == 0, out.stderr[-2000:]
        assert f"gpumm: archive {picked} left out: data/reference/{picked}/run.json: " in out.stderr
    finally:
        run.write_bytes(good)


@pytest.mark.slow
def test_a_failing_page_is_named_on_the_console_and_the_others_stay(replayed, tmp_path):
    """Issue 29: a page notebook that fails names its notebook and cell on the console, the run ends with an error,
    the other pages stay (the failed one says why in its place, the front page lists it); the notebook mended,
    the plain command makes the page and ends well."""
    tree, _ = replayed
    work = tmp_path / "tree"
    shutil.copytree(tree, work, symlinks=True, ignore=shutil.ignore_patterns(".snakemake"))
    nb = work / "notebooks" / "seed001.ipynb"
    good = nb.read_text()
    page = json.loads(good)
    code = [c for c in page["cells"] if c["cell_type"] == "code"]
    code[2]["source"] = ["1 / 0  # broken\n", *code[2]["source"]]
    nb.write_text(json.dumps(page))
    out = snakemake(work, "--config", "mode=replay")
    assert out.returncode != 0
    line = next(x for x in out.stderr.splitlines() if x.startswith("gpumm: page seed001"))
    assert "failed in cell" in line and "(the one starting '1 / 0  # broken')" in line
    assert "ZeroDivisionError" in line and "fix notebooks/seed001.ipynb" in line
    report = work / "results" / "report"
    assert all((report / f"{p['notebook']}.html").stat().st_size > 20_000 for p in PAGES if p["notebook"] != "seed001")
    assert "This page could not be made." in (report / "seed001.html").read_text()
    assert "Pages that could not be made" in (report / "index.html").read_text()
    nb.write_text(good)
    out = snakemake(work, "--config", "mode=replay")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "could not be made" not in (report / "seed001.html").read_text() + (report / "index.html").read_text()


def _files(root):
    """Every file under ``root`` but Snakemake's own logs, as bytes."""
    return {
        p.relative_to(root): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".snakemake/log" not in p.as_posix() and ".snakemake/metadata" not in p.as_posix()
    }


@pytest.mark.slow
def test_a_dry_run_lint_and_a_refused_run_change_no_file(replayed, tmp_path):
    """Issue 37: after a one-digit edit of a table, a dry run names it and lists the steps that would make it
    again (forced), and `--lint`, `--summary` and a run refused by another run's lock leave every file byte for
    byte as it was; the refused run says one line."""
    tree, _ = replayed
    work = tmp_path / "tree"
    shutil.copytree(tree, work, symlinks=True, ignore=shutil.ignore_patterns(".snakemake"))
    summary = work / "results" / "tables" / "summary.csv"
    text = summary.read_text()
    summary.write_text(text.replace("1", "7", 1))
    before = _files(work)
    out = snakemake(work, "-n", "--config", "mode=replay")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "gpumm: results/tables/summary.csv: " in out.stderr and "collect makes the tables again" in out.stderr
    assert re.search(r"forced:\s+collect", out.stdout + out.stderr)
    for args in (["--lint"], ["--summary"]):
        snakemake(work, *args, "--config", "mode=replay")
    assert _files(work) == before
    locks = work / ".snakemake" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    (locks / "0.input.lock").write_text(str(work / "results" / "tables" / "summary.csv") + "\n")
    fake = tmp_path / "bin" / "snakemake"  # a process whose script is named snakemake, as Snakemake's is
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, str(fake)], cwd=work)
    try:
        before = _files(work)
        out = snakemake(work, "--config", "mode=replay")
        said = [line for line in out.stderr.splitlines() if line.startswith("gpumm")]
        assert out.returncode != 0 and "Traceback" not in out.stdout + out.stderr
        assert said == [
            f"gpumm: another Snakemake run (process {holder.pid}) holds this folder's lock: wait for it to end; "
            "nothing was done"
        ]
        assert _files(work) == before
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.slow
def test_two_runs_at_once_the_second_stops_and_the_first_makes_every_page(replayed, tmp_path):
    """Issue 37: with the pages gone, a second run started while the first works is refused in one line; the
    first ends well with every output."""
    tree, _ = replayed
    work = tmp_path / "tree"
    shutil.copytree(tree, work, symlinks=True, ignore=shutil.ignore_patterns(".snakemake"))
    shutil.rmtree(work / "results" / "report")
    first = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--config", "mode=replay"],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for _ in range(600):  # until the first holds its lock
            if list((work / ".snakemake" / "locks").glob("*.lock")) or first.poll() is not None:
                break
            time.sleep(0.1)
        second = snakemake(work, "--config", "mode=replay")
        said = [line for line in second.stderr.splitlines() if line.startswith("gpumm")]
        assert second.returncode != 0 and len(said) == 1 and "holds this folder's lock" in said[0], second.stderr
    finally:
        log, _ = first.communicate(timeout=600)
    assert first.returncode == 0, log[-3000:]
    for page in ["index", "run", *(p["notebook"] for p in PAGES)]:
        assert (work / "results" / "report" / f"{page}.html").stat().st_size > 20_000, page


def _poke(path, row, column, value):
    import csv

    rows = list(csv.reader(path.open(newline="")))
    rows[row][rows[0].index(column)] = value
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)


def test_a_poisoned_or_unsealed_archive_stops_the_run_by_name(tree, tmp_path):
    """Issue 37: an impossible value sealed into an archive as a run would seal it stops the replay before any
    job, naming the file, row and column; a deleted manifest is refused by name, and with a cut run.json too the
    replay does not move to the other archive."""
    work = tmp_path / "tree"
    shutil.copytree(tree, work, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    root = work / "data" / "reference"
    picked = reference.choose("auto", root).name
    _poke(root / picked / "raw" / "naive" / "samples.csv", 4, "ms", "-1")
    reference.seal(root / picked)
    out = snakemake(work, "-n", "--config", "mode=replay", f"replay_from={picked}")
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "Nothing was run." in text and "Traceback" not in text
    assert f"data/reference/{picked}/raw/naive/samples.csv: row 4 (line 5), column ms: -1 must be a time" in text
    shutil.rmtree(root / picked)
    shutil.copytree(tree / "data" / "reference" / picked, root / picked)
    (root / picked / "MANIFEST.json").unlink()
    run = root / picked / "run.json"
    run.write_bytes(run.read_bytes()[:100])
    out = snakemake(work, "-n", "--config", "mode=replay")
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert f"archive {picked} is damaged (data/reference/{picked}/MANIFEST.json: missing" in text
    assert not (work / "results").exists()


@pytest.mark.slow
def test_a_changed_page_csv_and_archive_reach_the_report_and_a_cut_notebook_is_named(replayed, tmp_path):
    """Issue 37: an edited page CSV makes its page again; a validly changed archive (sealed again) replays the
    changed variant again; a notebook cut in half is named with its line and column on the console, the other
    pages stay; mended, the plain command ends well."""
    tree, _ = replayed
    work = tmp_path / "tree"
    shutil.copytree(tree, work, symlinks=True)  # with Snakemake's records of the replay's parameters
    shutil.rmtree(work / ".snakemake" / "locks", ignore_errors=True)
    data = work / "results" / "report" / "data"
    csv_file = sorted(data.glob("ladder-*.csv"))[0]
    good_csv = csv_file.read_bytes()
    csv_file.write_bytes(good_csv.replace(b"1", b"2", 1))
    picked = reference.choose("auto", work / "data" / "reference")
    samples = picked / "raw" / "naive" / "samples.csv"
    _poke(samples, 2, "repeat", "99")  # as a step would have written it: its meta.json's record too
    meta = picked / "raw" / "naive" / "meta.json"
    record = json.loads(meta.read_text())
    record["files"]["samples.csv"] = manifest.entry(samples)
    meta.write_text(json.dumps(record, indent=1))
    reference.seal(picked)
    nb = work / "notebooks" / "seed001.ipynb"
    good_nb = nb.read_text()
    nb.write_text(good_nb[: len(good_nb) // 2])
    out = snakemake(work, "--config", "mode=replay")
    assert out.returncode != 0
    assert f"gpumm: results/report/data/{csv_file.name}: " in out.stderr
    line = next(x for x in out.stderr.splitlines() if x.startswith("gpumm: page seed001"))
    assert "cannot be read" in line and re.search(r"notebooks/seed001\.ipynb:\d+:\d+: not a notebook", line)
    assert "Traceback" not in out.stderr
    assert (work / "results" / "raw" / "naive" / "samples.csv").read_bytes() == samples.read_bytes()
    assert csv_file.read_bytes() == good_csv
    report = work / "results" / "report"
    assert all((report / f"{p['notebook']}.html").stat().st_size > 20_000 for p in PAGES if p["notebook"] != "seed001")
    assert "This page could not be made." in (report / "seed001.html").read_text()
    nb.write_text(good_nb)
    out = snakemake(work, "--config", "mode=replay")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "could not be made" not in (report / "seed001.html").read_text()


def test_a_failed_build_names_the_variant_and_nvccs_first_error_on_the_console(tree, tmp_path):
    """Issue 37: a build that fails inside the workflow says more than `Error in rule build`: the variant and
    nvcc's first error line reach the console, with the log's path."""
    from gpumm.build import nvcc

    try:
        nvcc.nvcc()
    except nvcc.BuildError as exc:
        pytest.skip(str(exc))
    work = tmp_path / "tree"
    shutil.copytree(tree, work, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    source = work / "kernels" / "matmul" / "naive.cu"
    source.write_text(source.read_text() + "\nthis_is_not_cuda x;\n")
    env = {**os.environ, "GPUMM_FAKE_GPU": json.dumps({"ok": True, "reason": "", "name": "fake", "arch": "sm_90"})}
    cmd = [sys.executable, "-m", "snakemake", "results/build/naive/kernel.cubin", "--cores", "1"]
    out = subprocess.run(
        cmd + ["--config", "mode=measure", "only=[naive]", "gpu_worker=false"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode != 0
    line = next(x for x in out.stderr.splitlines() if x.startswith("gpumm build:"))
    assert line.startswith("gpumm build: nvcc failed for naive (")
    assert re.search(r"naive\.cu\(\d+\): error: .*this_is_not_cuda", line), line
    assert "gpumm: (the step's whole output: results/logs/build/naive.log)" in out.stderr

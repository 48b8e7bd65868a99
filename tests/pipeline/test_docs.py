"""The README and the manual (issue 27): a short README, links that resolve, generated parts that equal what the
archives, the schema and the catalog give now, and the facts the manual states kept true."""

import json
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pandas as pd
import pytest

from gpumm.report import docs
from gpumm.setup import catalog, paths

ROOT = paths.ROOT
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINKED = [ROOT / "README.md", *PAGES, ROOT / "tools" / "README.md", ROOT / "data" / "reference" / "README.md"]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text()


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]{1,2}(?=\w)|(?<=\w)[`*_]{1,2}", "", heading.strip()).lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found = set()
    in_code = False
    for line in _text(path).splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if not in_code and (m := re.match(r"#{1,6} (.*)", line)):
            found.add(slug(m.group(1)))
    found |= set(re.findall(r'id="([^"]+)"', _text(path)))
    return found


def links(path: Path) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", _text(path))  # not inside code spans
    return [a or b for a, b in LINK.findall(text)]


def test_the_readme_is_short():
    n = len(_text(ROOT / "README.md").splitlines())
    assert n <= 150, f"README.md has {n} lines; the manual is docs/"


def test_the_manual_has_a_page_per_subject_and_an_index():
    names = {p.stem for p in PAGES}
    want = {"README", "method", "configuration", "kernels", "running", "archives", "tests", "design", "changelog"}
    assert want <= names, sorted(want - names)
    index = _text(ROOT / "docs" / "README.md")
    assert all(f"]({p.name})" in index for p in PAGES if p.stem != "README"), "a page the index does not link"
    readme = _text(ROOT / "README.md")
    assert all(f"docs/{p.name}" in readme for p in PAGES if p.stem != "README"), "a page the README does not link"


@pytest.mark.parametrize("page", LINKED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, broken


def test_slugs_are_githubs():
    assert slug("Every page's first line") == "every-pages-first-line"
    assert slug("Regimes: the L2, DRAM and the launch floor") == "regimes-the-l2-dram-and-the-launch-floor"
    assert slug("On a SLURM cluster") == "on-a-slurm-cluster"
    assert slug("Adding a transpose, an operation or a study") == "adding-a-transpose-an-operation-or-a-study"


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](#nowhere) `[code](not-a-link.md)`\n")
    assert links(page) == ["#title", "missing.md", "#nowhere"]
    assert "nowhere" not in anchors(page) and "title" in anchors(page)


@pytest.fixture(scope="module")
def runs():
    return docs.archived()


def test_the_generated_parts_are_current(runs):
    """The README's headline table and figure, the cost table, the config keys and the kernel families: equal to
    what `python -m gpumm docs` writes from the archives, the schema and the catalog as they are now."""
    assert [r.name for r in runs] == ["h100", "h200"]
    assert docs.stale(runs) == []


def test_a_stale_number_or_figure_is_named(runs, tmp_path, monkeypatch):
    """Edit one number of the headline table, one of the cost table, one of the figure's data, and draw the figure
    from other numbers: each is named; the command writes them back."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "docs", tree / "docs")
    shutil.copy2(ROOT / "README.md", tree / "README.md")
    monkeypatch.setattr(docs, "README", tree / "README.md")
    monkeypatch.setattr(docs, "DOCS", tree / "docs")
    monkeypatch.setattr(docs, "FIGURE", tree / "docs" / "figures" / "ladder.png")
    monkeypatch.setattr(docs, "FIGURE_DATA", tree / "docs" / "figures" / "ladder.csv")
    assert docs.stale(runs) == []
    readme = tree / "README.md"
    text = readme.read_text()
    share = re.search(r"\| (\d+\.\d)% ± [\d.]+ \(`streamk`", text).group(1)
    readme.write_text(text.replace(f"| {share}% ± ", f"| {float(share) + 0.1:.1f}% ± ", 1))
    cost = tree / "docs" / "running.md"
    cost.write_text(
        re.sub(r"\*\*(\d+)\.(\d) s\*\*", lambda m: f"**{int(m[1]) + 1}.{m[2]} s**", cost.read_text(), count=1)
    )
    data = tree / "docs" / "figures" / "ladder.csv"
    data.write_text(data.read_text().replace(",10.5,False\n", ",11.5,False\n", 1))
    png = tree / "docs" / "figures" / "ladder.png"
    png.write_bytes(docs.ladder_png(data.read_bytes()))  # a figure drawn from other numbers
    found = "\n".join(docs.stale(runs))
    assert "README.md: headlines" in found and "running.md: study-cost" in found and "ladder.csv" in found
    assert "ladder.png: not drawn from the archives' ladders" in found
    docs.write(runs)
    assert docs.stale(runs) == [] and readme.read_text() == text


def test_the_check_command_says_what_is_stale_in_one_line_each():
    out = subprocess.run([sys.executable, "-m", "gpumm", "docs", "--check"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr


def test_a_missing_block_is_named():
    with pytest.raises(docs.DocsError, match="no generated part named headlines"):
        docs.fill("# no block here\n", {"headlines": "x"}, "README.md")


def test_the_headline_table_is_the_reports(runs):
    """Each cell of the README's table is the number the replayed report's index shows for that archive."""
    table = docs.headline_table(runs)
    for k, r in enumerate(runs):
        h = r.tables["headlines"].set_index("key")
        cells = [row.split(" | ")[k + 1].strip(" |") for row in table.splitlines()[2:]]
        for n in (4096, 8192):
            assert f"{h.at[f'best_share_{n}', 'number']:.1f}%" in " ".join(cells)
        assert any(h.at["zero_copy_cublas", "value"] == c for c in cells)
        assert any(f"{r.run['wall_s']:.1f} s" in c for c in cells)


def test_the_figure_is_drawn_from_the_archives_ladders(runs, known_stale):
    data = pd.read_csv(docs.FIGURE_DATA)
    assert set(data.archive) == {"h100", "h200"}
    for r in runs:
        lad = r.tables["ladder"].dropna(subset=["gflops"])
        mine = data[data.archive == r.name]
        assert list(mine.family) == list(lad.family)
        assert (mine.share_of_cublas - 100 * lad.share_of_cublas.values).abs().max() <= 0.05
        # a bar whose build today's code no longer makes says so (hatched, "stale")
        assert set(mine[mine.stale].variant) == set(mine.variant) & known_stale[r.name], r.name
    assert docs.png_digest(docs.FIGURE) == __import__("hashlib").sha256(docs.FIGURE_DATA.read_bytes()).hexdigest()


def test_every_name_on_the_ladder_leads_to_its_kernel_file(runs):
    """The newcomer's way from a variant on the ladder page to its file: its family has a row in docs/kernels.md
    whose link opens the file."""
    page = _text(ROOT / "docs" / "kernels.md")
    for r in runs:
        for vid in r.tables["ladder"].best_variant.dropna():
            fam = catalog.from_id(vid).family
            row = re.search(rf"^\| `{fam}` \|.*$", page, re.M)
            assert row, f"{vid}: its family {fam} has no row in docs/kernels.md"
            target = re.search(r"\]\(\.\./([^)]+)\)", row.group(0))
            assert target and (ROOT / target.group(1)).is_file(), row.group(0)


def test_the_config_table_names_every_key_of_the_schema():
    schema = docs.yamlfile.load(paths.SCHEMAS / "config.schema.yaml")
    table = docs.config_table(schema)
    keys = re.findall(r"^\| `([\w.]+)` \|", table, re.M)
    assert len(keys) == len(set(keys)) and "timing.budget_s" in keys and "profile.metric_sets" in keys
    top = set(schema["properties"])
    assert {k.split(".")[0] for k in keys} == top
    # a key added to the schema appears; one the config does not set says so
    schema["properties"]["timing"]["properties"]["new_key"] = {"type": "integer", "minimum": 1, "description": "x"}
    assert "| `timing.new_key` | not set (default `null`) | an integer from 1 | x |" in docs.config_table(schema)


def test_allowed_values_read_as_words():
    assert docs.allowed({"type": "integer", "minimum": 1, "maximum": 8}) == "an integer 1 to 8"
    assert docs.allowed({"type": "number", "exclusiveMinimum": 0}) == "a number above 0"
    arr = {"type": "array", "items": {"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "integer"}}}
    assert docs.allowed(arr) == "a list of [3 integers]"
    assert docs.allowed({"oneOf": [{"const": "all"}, {"type": "array", "items": {"type": "string"}}]}) == (
        "`all` or a list of strings"
    )


# The facts the manual states, kept true (they were the README's before issue 27).
CONFIGURATION = _text(ROOT / "docs" / "configuration.md")
DESIGN = _text(ROOT / "docs" / "design.md")
TESTS = _text(ROOT / "docs" / "tests.md")
RUNNING = _text(ROOT / "docs" / "running.md")


def test_the_configuration_examples_work_as_written(tree):
    """The manual's command-line overrides: lists, a subset with `only`, and the message of a bad value."""
    for example in ("--config sizes=[16,32]", "--config only=[naive,cublas]", "--config sizes=[0]"):
        assert example in CONFIGURATION, example
    run = [sys.executable, "-m", "snakemake", "--cores", "1", "-n", "--config", "mode=replay"]
    out = subprocess.run([*run, "sizes=[16,32]", "only=[naive,cublas]"], cwd=tree, capture_output=True, text=True)
    assert out.returncode == 0, (out.stdout + out.stderr)[-2000:]
    assert "2 variants" in out.stdout + out.stderr
    bad = subprocess.run([*run, "sizes=[0]"], cwd=tree, capture_output=True, text=True)
    message = "config: sizes[0] = 0 is not allowed: 0 is less than the minimum of 1."
    assert bad.returncode != 0 and message in bad.stdout + bad.stderr and message in CONFIGURATION
    assert "Traceback" not in bad.stdout + bad.stderr
    assert "only=[naive,cublas]" in _text(ROOT / "README.md")


def test_the_layout_names_every_module():
    """docs/design.md's stage layout names every stage folder and exactly its modules."""
    pkg = ROOT / "src" / "gpumm"
    layout = DESIGN[DESIGN.index("## The stage layout") : DESIGN.index("## Choices")]
    folders = sorted(d.name for d in pkg.iterdir() if (d / "__init__.py").is_file())
    assert folders == ["analyse", "archive", "build", "profile", "report", "run", "setup"]
    for folder in folders:
        line = re.search(rf"^- `{folder}/` — (.*?)(?=^- `|^Beside)", layout, re.M | re.S).group(1)
        listed = set(re.findall(r"`(\w+)`", line))
        modules = {p.stem for p in (pkg / folder).glob("*.py") if not p.stem.startswith("_")}
        assert listed == modules, (folder, sorted(modules - listed), sorted(listed - modules))
    assert sorted(p.name for p in pkg.glob("*.py")) == ["__init__.py", "__main__.py", "cli.py"]


def test_the_gpu_test_count_is_the_collected_one():
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "gpu", "tests/run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    count = int(re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", collected).group(1))
    stated = int(re.search(r"`pytest -m gpu` runs (\d+) tests", TESTS).group(1))
    assert stated == count, (stated, count)


def test_the_parallel_check_figures_are_those_of_the_kept_runs():
    """docs/running.md's figures for `--cores 1` against `--cores 8`, recomputed from data/checks/parallel-h100."""
    sys.path.insert(0, str(ROOT / "tools"))
    from compare_runs import compare

    d = ROOT / "data" / "checks" / "parallel-h100"
    one, again, eight = (pd.read_csv(d / f"summary-{n}.csv") for n in ("cores1", "cores1-again", "cores8"))

    def span(a, b, timed, digits):
        r = compare(a, b)
        r = r[r.timed == timed].ratio
        return f"({r.min():.{digits}f}–{r.max():.{digits}f})"

    def elapsed(name):
        h, m, sec = re.search(r"Elapsed time: (\d+):(\d+):([\d.]+)", (d / f"snakemake-{name}.txt").read_text()).groups()
        return round(3600 * int(h) + 60 * int(m) + float(sec))

    text = " ".join(RUNNING.split())
    assert f"took {elapsed('cores1')} s with `--cores 1` and {elapsed('cores8')} s with `--cores 8`" in text
    assert f"within 2% of the `--cores 1` run's {span(one, eight, 'kernel', 3)}" in text
    assert f"to each other {span(one, again, 'kernel', 3)}" in text
    assert f"two `--cores 1` runs included {span(one, again, 'end_to_end', 2)}" in text


def _gpu_numbers(env: Path) -> dict[str, int]:
    """Each GPU's number in `nvidia-smi -L` (a check's env.txt), by UUID."""
    return {u: int(n) for n, u in re.findall(r"GPU (\d+): .*?\(UUID: (GPU-[0-9a-f-]+)\)", env.read_text())}


def _big_kernels(r: pd.DataFrame) -> pd.DataFrame:
    """compare_runs pairs of kernel times in device memory at 1024³ and above."""
    return r[(r.memory_mode == "device") & (r.timed == "kernel") & (r.M >= 1024) & (r.N >= 1024) & (r.K >= 1024)]


def test_the_two_gpu_check_figures_are_those_of_the_kept_run():
    """docs/running.md's and the check's figures for the study on two H200s against the one-GPU archive,
    recomputed from data/checks/gpus-h200x2."""
    sys.path.insert(0, str(ROOT / "tools"))
    from compare_runs import compare

    d = ROOT / "data" / "checks" / "gpus-h200x2"
    run, archive = (json.loads((d / f).read_text()) for f in ("run-2gpus.json", "run-1gpu-archive.json"))
    devices = pd.read_csv(d / "devices.csv")
    assert devices.gpu.dropna().astype(int).tolist() == [
        _gpu_numbers(d / "env.txt")[u] for u in devices.device_uuid.dropna()
    ]
    per_gpu = devices.gpu.value_counts()
    r = compare(pd.read_csv(d / "summary-1gpu.csv"), pd.read_csv(d / "summary-2gpus.csv"))
    big = _big_kernels(r).ratio
    q = big.quantile([0.05, 0.95])
    cold = r[r.timed == "cold"].ratio
    blas = r[(r.variant == "cpu_blas") & (r.M == 1024) & (r.N == 1024) & (r.K == 1024)].ratio.iloc[0]
    readme = " ".join(_text(d / "README.md").split())
    running = " ".join(RUNNING.split())
    assert f"took {run['wall_s']:.1f} s of wall time on two GPUs (GPU busy {run['gpu_busy_s']:.1f} s" in readme
    assert f"against {archive['wall_s']:.1f} s for the `h200` archive on one" in readme
    assert f"split {per_gpu[0]} / {per_gpu[1]} variants" in readme and run["failed_steps"] == 0
    assert (
        f"({len(big)} pairs): the median ratio {big.median():.3f}, 90% of the pairs within "
        f"{q.iloc[0]:.3f}-{q.iloc[1]:.3f}, all within {big.min():.3f}-{big.max():.3f}"
    ) in readme
    assert f"ratios {cold.min():.2f}-{cold.max():.2f}" in readme and f"at 1024³ {blas:.2f}× faster" in readme
    assert f"took {run['wall_s']:.1f} s against the one-GPU archive's {archive['wall_s']:.1f} s" in running
    assert f"with {per_gpu[0]} and {per_gpu[1]} variants on the two devices" in running
    assert f"(median ratio {big.median():.3f}, all {len(big)} within {big.min():.3f}–{big.max():.3f})" in running


def test_the_same_machine_two_gpu_figures_are_those_of_the_kept_runs():
    """docs/running.md's and the check's figures for one GPU against two on one machine, recomputed from
    data/checks/gpus-h200x2/same-machine: wall times, the split of variants per GPU, and the ratios per card."""
    sys.path.insert(0, str(ROOT / "tools"))
    from compare_runs import compare

    d = ROOT / "data" / "checks" / "gpus-h200x2" / "same-machine"
    number = _gpu_numbers(d / "env.txt")
    one, two = (json.loads((d / f"run-{r}.json").read_text()) for r in ("1gpu", "2gpus"))
    dev1, dev2 = (pd.read_csv(d / f"devices-{r}.csv").set_index("variant").device_uuid for r in ("1gpu", "2gpus"))
    r = compare(pd.read_csv(d / "summary-1gpu.csv"), pd.read_csv(d / "summary-2gpus.csv"))
    big = _big_kernels(r)
    same = big.variant.map(lambda v: dev1.get(v) == dev2.get(v))
    running = " ".join(RUNNING.split())
    readme = " ".join(_text(d.parent / "README.md").split())
    speedup = f"{one['wall_s']:.1f} s and the two-GPU run {two['wall_s']:.1f} s ({one['wall_s'] / two['wall_s']:.2f}×"
    assert speedup in running and one["failed_steps"] == two["failed_steps"] == 0
    assert (
        f"One GPU: {one['wall_s']:.1f} s of wall time (GPU busy {one['gpu_busy_s']:.1f} s); both GPUs: "
        f"{two['wall_s']:.1f} s (GPU busy {two['gpu_busy_s']:.1f} s, the two devices' sum), "
        f"{one['wall_s'] / two['wall_s']:.2f}× faster"
    ) in readme
    on1, on2 = (dev.dropna().map(number).value_counts() for dev in (dev1, dev2))
    assert (
        f"{on2[0]} / {on2[1]} variants ran on GPU 0 / GPU 1; with one, all {on1[0]} GPU variants ran on GPU 0" in readme
    )
    assert list(on1.index) == [0]
    for card, words in ((same, "GPU 0 in both, "), (~same, "GPU 1, ")):
        x = big[card].ratio
        q = x.quantile([0.05, 0.95])
        assert f"({words}{len(x)} pairs) the median ratio {x.median():.3f}, 90%" in readme
        assert f"within {q.iloc[0]:.3f}-{q.iloc[1]:.3f}, all within {x.min():.3f}–{x.max():.3f}" in readme
        assert f"all {len(x)} within {x.min():.3f}–{x.max():.3f}" in running
        assert f"{int(big[card].within_spread.sum())} of the {len(x)}" in readme


def test_the_sampling_check_figures_are_those_of_the_kept_run():
    """docs/method.md's agreement of the stopping rule with the fixed count, from data/checks/sampling-h200."""
    d = pd.read_csv(ROOT / "data" / "checks" / "sampling-h200" / "sampling-check.csv")
    text = " ".join(_text(ROOT / "docs" / "method.md").split())
    big = d[d.M.isin([1024, 4096])].ratio
    assert f"(ratios {big.min():.4f}–{big.max():.4g})" in text


def test_every_matrix_multiply_has_its_idea_and_source():
    """docs/kernels.md's hand-written table of ideas and sources has a row for every matmul family of the catalog."""
    page = _text(ROOT / "docs" / "kernels.md")
    table = page[page.index("| family | source | idea |") :].split("\n\n")[0]
    named = set(re.findall(r"`(\w+)`", "\n".join(row.split(" | ")[0] for row in table.splitlines()[2:])))
    matmul = {name for name, fam in catalog.load().items() if fam.get("op", "matmul") == "matmul"}
    assert matmul <= named, sorted(matmul - named)


def test_the_archives_readme_quotes_their_run_records(runs):
    """data/reference/README.md's wall time of each archive is its run.json's."""
    for r in runs:
        row = re.search(rf"\| `{r.name}/` \|[^\n]*?(\d+\.\d) s", _text(ROOT / "data" / "reference" / "README.md"))
        said = row.group(1) if row else None
        assert said == f"{r.run['wall_s']:.1f}", (r.name, said, r.run["wall_s"])


def test_the_table_columns_name_no_archives_gpu(runs):
    """The tables page is the same whichever archive is newest: a column named for that run's GPU reads
    <this run's GPU>, and no archive's GPU name is a column there."""
    page = _text(ROOT / "docs" / "tables.md")
    assert "`<this run's GPU>`" in page
    for r in runs:
        assert f"`{r.provenance['gpu']['name']}`" not in page, r.name


def test_the_manual_quotes_the_recorded_default_study_and_it_kept_to_300_s():
    """Issue 40: the default study within 300 s on one H100, from the run data/checks/study-default-h100 keeps."""
    folder = ROOT / "data" / "checks" / "study-default-h100"
    run = json.loads((folder / "run.json").read_text())
    assert run["gpu"]["name"].startswith("NVIDIA H100") and run["failed_steps"] == 0 and run["mode"] == "measure"
    assert run["wall_s"] <= 300 and "layers" not in run["seconds_by_step"]  # no model steps: the default config
    text = (ROOT / "docs" / "running.md").read_text()
    assert f"**{run['wall_s']} s** on an H100" in text
    assert f"# The default study on one H100: {run['wall_s']} s" in (folder / "README.md").read_text()

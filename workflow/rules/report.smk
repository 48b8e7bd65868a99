# Tidy tables, executed notebooks, HTML pages and the front page.

# collect's manifest (gpumm.setup.manifest) last: the report's steps check every table against it
TABLES = [f"results/tables/{name}.csv" for name in TABLE_NAMES] + [
    "results/tables/source.json",
    "results/tables/manifest.json",
]


# Every tidy table of results/tables/ from the raw files, each value checked first (gpumm/analyse/tables.py).
rule collect:
    input:
        unpack(collected_inputs),
        published="data/published/published_numbers.csv",
        # the comparison page reads every archived run's headline numbers
        archives=sorted(
            str(p) for p in Path("data/reference").glob("*/raw/provenance.json")
        ),
        imported=sorted(str(p) for p in Path("data/imported").glob("*/*.csv")),
        # the tables and everything after them are remade when the package changes
        code=sorted(str(p) for p in Path("src/gpumm").rglob("*.py")),
    output:
        TABLES,
    log:
        "results/logs/collect.log",
    conda:
        ENV
    params:
        variants=",".join(ALL_IDS),
    shell:
        "python -m gpumm --seal '{output}' collect --variants {params.variants} --out results/tables > {log} 2>&1 || said {log}"


# One job for every page: the notebooks share one Jupyter kernel (its start and the plotting imports are
# paid once; each page starts from an emptied namespace), and each executed page is rendered to HTML.
rule pages:
    input:
        TABLES,
        notebooks=expand("notebooks/{page}.ipynb", page=PAGE_NAMES),
    output:
        notebooks=expand("results/notebooks/{page}.ipynb", page=PAGE_NAMES),
        status="results/notebooks/pages.json",
        pages=[
            report(
                f"results/report/{page}.html",
                caption="../report/page.rst",
                category="Pages",
                labels={"page": page},
            )
            for page in PAGE_NAMES
        ],
    log:
        "results/logs/pages.log",
    conda:
        ENV
    threads: 8  # the pages in up to eight kernels side by side (fewer with fewer cores)
    params:
        pages=",".join(PAGE_NAMES),
    shell:
        "python -m gpumm --seal '{output}' --seal-also results/report/data pages --pages {params.pages} --tables results/tables --jobs {threads}"
        " --notebooks-out results/notebooks --out results/report --status {output.status} > {log} 2>&1 || said {log}"


# The front page (headlines, claims, pages) and the run page (method, variants, profiles, provenance).
rule index:
    input:
        TABLES,
        expand("results/report/{page}.html", page=PAGE_NAMES),
        studies="data/studies.csv",
        status="results/notebooks/pages.json",
    output:
        index=report(
            "results/report/index.html",
            caption="../report/index.rst",
            category="Index",
        ),
        run=report(
            "results/report/run.html",
            caption="../report/page.rst",
            category="Pages",
            labels={"page": "run"},
        ),
    log:
        "results/logs/index.log",
    conda:
        ENV
    shell:
        "python -m gpumm --seal '{output}' index --tables results/tables --out {output.index}"
        " --status {input.status} > {log} 2>&1 || said {log}"


# The run's last step: a page that could not be made is named here, on the console, and the run ends with an
# error; the other pages stay, and the failed one says why in its place (the front page lists it too).
rule pages_check:
    input:
        status="results/notebooks/pages.json",
        index="results/report/index.html",
    output:
        touch("results/logs/pages-checked"),
    log:
        "results/logs/pages-check.log",
    conda:
        ENV
    shell:
        "python -m gpumm pages-check --status {input.status} 2>&1 | tee {log} >&2"

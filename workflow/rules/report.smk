# Tidy tables, executed notebooks, HTML pages and the front page.

TABLES = [f"results/tables/{name}.csv" for name in TABLE_NAMES] + [
    "results/tables/source.json"
]


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
        code=sorted(str(p) for p in Path("src/gpumm").glob("*.py")),
    output:
        TABLES,
    log:
        "results/logs/collect.log",
    conda:
        ENV
    params:
        variants=",".join(ALL_IDS),
    shell:
        "python -m gpumm collect --variants {params.variants} --out results/tables > {log} 2>&1"


rule notebook:
    input:
        TABLES,
        notebook="notebooks/{page}.ipynb",
    output:
        "results/notebooks/{page}.ipynb",
    log:
        "results/logs/notebooks/{page}.log",
    conda:
        ENV
    shell:
        "python -m papermill {input.notebook} {output} -k python3 --cwd ."
        " -p tables_dir results/tables > {log} 2>&1"


rule html:
    input:
        "results/notebooks/{page}.ipynb",
    output:
        report(
            "results/report/{page}.html",
            caption="../report/page.rst",
            category="Pages",
            labels={"page": "{page}"},
        ),
    log:
        "results/logs/html/{page}.log",
    conda:
        ENV
    shell:
        "python -m gpumm render --notebook {input} --out {output} > {log} 2>&1"


rule index:
    input:
        TABLES,
        expand("results/report/{page}.html", page=PAGE_NAMES),
        studies="data/studies.csv",
    output:
        report(
            "results/report/index.html",
            caption="../report/index.rst",
            category="Index",
        ),
    log:
        "results/logs/index.log",
    conda:
        ENV
    shell:
        "python -m gpumm index --tables results/tables --out {output} > {log} 2>&1"

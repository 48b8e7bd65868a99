# How memory decides the speed of GPU matrix multiply: build, verify, time,
# profile every kernel variant, then render the report. See README.md.
from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/config_files.smk"


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


if MODE == "measure":

    include: "workflow/rules/measure.smk"

else:

    include: "workflow/rules/replay.smk"


include: "workflow/rules/model.smk"
include: "workflow/rules/report.smk"


onsuccess:
    finish(True)


onerror:
    finish(False)


# On a cluster (workflow/profiles/slurm) the report's steps run where Snakemake runs.
localrules:
    all,
    collect,
    pages,
    index,
    pages_check,


rule all:
    default_target: True
    input:
        "results/report/index.html",
        "results/report/run.html",
        expand("results/report/{page}.html", page=PAGE_NAMES),
        "results/logs/pages-checked",

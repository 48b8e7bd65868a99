# Replay mode: no usable GPU here. Fill results/ from the archived run.


rule replay_variant:
    input:
        source=kernel_source,
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        samples=f"{RAW}/samples.csv",
        meta=f"{RAW}/meta.json",
        profile=f"{RAW}/profile.csv",
    params:
        archive=str(ARCHIVE),
    log:
        "results/logs/replay/{variant}.log",
    shell:
        "{PY} -m gpumm replay --variant {wildcards.variant} --part raw"
        " --archive {params.archive} > {log} 2>&1"


rule replay_build:
    input:
        source=kernel_source,
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        "results/build/{variant}/resources.json",
    params:
        archive=str(ARCHIVE),
    log:
        "results/logs/replay/{variant}.build.log",
    wildcard_constraints:
        variant="|".join(CUDA_IDS) or "^$",
    shell:
        "{PY} -m gpumm replay --variant {wildcards.variant} --part build"
        " --archive {params.archive} > {log} 2>&1"


rule replay_provenance:
    input:
        f"{ARCHIVE}/raw/provenance.json",
    output:
        "results/raw/provenance.json",
    params:
        archive=str(ARCHIVE),
        variants=",".join(ALL_IDS),
        why=DECISION.why,
    log:
        "results/logs/replay/provenance.log",
    shell:
        "{PY} -m gpumm replay-provenance --archive {params.archive}"
        " --variants {params.variants} --why '{params.why}' > {log} 2>&1"

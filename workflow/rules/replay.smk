# Replay mode: no usable GPU here. Fill results/ from the archived run.
#
# Each job's `archived` parameter is a digest of what the archive's manifest records for the files it copies
# (gpumm.archive.reference.digest): an archive made again, or another one named, replays those files again.


# One job per variant (a variant's archived files change together): its samples, metadata and profile,
# and, for a CUDA kernel, its build report, PTX and SASS.
rule replay_variant:
    input:
        source=kernel_source,
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        samples=f"{RAW}/samples.csv",
        meta=f"{RAW}/meta.json",
        profile=f"{RAW}/profile.csv",
        resources="results/build/{variant}/resources.json",
        ptx="results/build/{variant}/kernel.ptx",
        sass="results/build/{variant}/kernel.sass",
    log:
        "results/logs/replay/{variant}.log",
    wildcard_constraints:
        variant="|".join(CUDA_IDS) or "^$",
    conda:
        ENV
    params:
        archived=archived("raw/{variant}/", "build/{variant}/"),
    shell:
        "python -m gpumm --seal '{output}' replay --variant {wildcards.variant} --part all"
        " --archive {input.archive} > {log} 2>&1 || said {log}"


# cuBLAS, CuPy and the CPU baselines: nothing is built, so only the raw files.
rule replay_library_variant:
    input:
        source=kernel_source,
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        samples=f"{RAW}/samples.csv",
        meta=f"{RAW}/meta.json",
        profile=f"{RAW}/profile.csv",
    log:
        "results/logs/replay/{variant}.log",
    wildcard_constraints:
        variant="|".join(v for v in ALL_IDS if v not in CUDA_IDS) or "^$",
    conda:
        ENV
    params:
        archived=archived("raw/{variant}/"),
    shell:
        "python -m gpumm --seal '{output}' replay --variant {wildcards.variant} --part raw"
        " --archive {input.archive} > {log} 2>&1 || said {log}"


# The archived run's provenance, marked replayed, with today's digests and the settings it did not use.
rule replay_provenance:
    input:
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        "results/raw/provenance.json",
    log:
        "results/logs/replay/provenance.log",
    conda:
        ENV
    params:
        archived=archived("raw/provenance.json"),
        variants=",".join(ALL_IDS),
        why=DECISION.why,
        config_digest=gpumm_config.digest(config),
        config=shlex.quote(json.dumps(config)),
    shell:
        "python -m gpumm --seal '{output}' replay-provenance --archive {input.archive}"
        " --variants {params.variants} --why '{params.why}'"
        " --config-digest {params.config_digest} --config {params.config} 2>&1 | tee {log}"


# The archived coalescing study: samples, profile, and the micro-benchmark's build report.
rule replay_coalescing:
    input:
        archive=f"{ARCHIVE}/raw/provenance.json",
        source="kernels/memory/access_patterns.cu",
    output:
        "results/raw/coalescing/samples.csv",
        "results/raw/coalescing/profile.csv",
        "results/build/access_patterns/resources.json",
        "results/build/access_patterns/kernel.ptx",
        "results/build/access_patterns/kernel.sass",
    log:
        "results/logs/replay/coalescing.log",
    conda:
        ENV
    params:
        archived=archived("raw/coalescing/", "build/access_patterns/"),
    shell:
        "python -m gpumm --seal '{output}' replay-study --study coalescing --archive {input.archive} > {log} 2>&1 || said {log}"


# The archived copy bandwidths.
rule replay_bandwidth:
    input:
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        "results/raw/bandwidth/samples.csv",
    log:
        "results/logs/replay/bandwidth.log",
    conda:
        ENV
    params:
        archived=archived("raw/bandwidth/"),
    shell:
        "python -m gpumm --seal '{output}' replay-study --study bandwidth --archive {input.archive} > {log} 2>&1 || said {log}"


# The archived launch overhead.
rule replay_overhead:
    input:
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        "results/raw/overhead/samples.csv",
    log:
        "results/logs/replay/overhead.log",
    conda:
        ENV
    params:
        archived=archived("raw/overhead/"),
    shell:
        "python -m gpumm --seal '{output}' replay-study --study overhead --archive {input.archive} > {log} 2>&1 || said {log}"


# The archived memory hierarchy study.
rule replay_hierarchy:
    input:
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        "results/raw/hierarchy/samples.csv",
    log:
        "results/logs/replay/hierarchy.log",
    conda:
        ENV
    params:
        archived=archived("raw/hierarchy/"),
    shell:
        "python -m gpumm --seal '{output}' replay-study --study hierarchy --archive {input.archive} > {log} 2>&1 || said {log}"


# The archived paired comparisons of the races.
rule replay_paired:
    input:
        archive=f"{ARCHIVE}/raw/provenance.json",
    output:
        "results/raw/paired/samples.csv",
        "results/raw/paired/meta.json",
    log:
        "results/logs/replay/paired.log",
    conda:
        ENV
    params:
        archived=archived("raw/paired/"),
    shell:
        "python -m gpumm --seal '{output}' replay-study --study paired --archive {input.archive} > {log} 2>&1 || said {log}"

# Measure mode: a CUDA GPU is here. Build, verify and time, profile.
#
# Builds run at a lower CPU priority (nice 10): with --cores all they start together with the first GPU steps,
# and fifteen nvcc processes on sixteen cores most likely slowed the GPU worker's host side (inputs, checks,
# graph capture) on the H100 run of 2026-11-24: transpose_rows_block_rows8 took 9.5 s there (its 16 x 16 set
# 4.8 s) against 0.5 s in the run before, with the same medians. The GPU steps are the run's critical path.
#
# Every job that uses the GPU declares `resources: gpu=1`; the workflow sets the run's `gpu` limit to the
# number of GPUs it uses (config `gpus`, gpumm/run/devices.py), each GPU job claiming a device of its own, so
# that two GPU jobs never share a GPU however many cores Snakemake is given, while builds, collection and
# notebooks run in parallel. A CPU measurement takes every core, so that it runs alone.


# Compile a CUDA variant (nvcc, its catalog defines and flags): cubin, PTX, SASS and ptxas's resource report.
rule build:
    input:
        source=kernel_source,
    output:
        cubin="results/build/{variant}/kernel.cubin",
        ptx="results/build/{variant}/kernel.ptx",
        resources="results/build/{variant}/resources.json",
        sass="results/build/{variant}/kernel.sass",
    log:
        "results/logs/build/{variant}.log",
    wildcard_constraints:
        variant="|".join(BUILD_IDS) or "^$",
    conda:
        ENV
    params:
        arch=ARCH,
        defines=lambda w: VARIANTS[w.variant].defines_text(),
    shell:
        "nice -n 10 python -m gpumm --seal '{output}' build --variant {wildcards.variant} --arch {params.arch}"
        " --out-dir results/build/{wildcards.variant} > {log} 2>&1 || said {log}"


# Compile a CPU baseline's C function into a shared object.
rule build_host:
    input:
        source=kernel_source,
    output:
        "results/build/{variant}/libkernel.so",
    log:
        "results/logs/build/{variant}.log",
    wildcard_constraints:
        variant="|".join(HOST_BUILT_IDS) or "^$",
    conda:
        ENV
    shell:
        "nice -n 10 python -m gpumm --seal '{output}' build --variant {wildcards.variant} --arch host"
        " --out-dir results/build/{wildcards.variant} > {log} 2>&1 || said {log}"


# Verify a variant at every shape it is timed at, then time it (gpumm/run/measure.py): its samples and metadata.
rule measure:
    input:
        binary=binary,
    output:
        samples=f"{RAW}/samples.csv",
        meta=f"{RAW}/meta.json",
    log:
        "results/logs/measure/{variant}.log",
    conda:
        ENV
    threads: lambda w: workflow.cores if VARIANTS[w.variant].kind == "cpu" else 1
    resources:
        **GPU_RESOURCES,
    params:
        binary=binary_arg,
        # everything the measurement reads from the config, as one value (gpumm.run.settings.measure_settings)
        settings=lambda w: shlex.quote(
            json.dumps(
                gpumm_settings.measure_settings(VARIANTS[w.variant], config),
                sort_keys=True,
            )
        ),
    shell:
        "python -m gpumm --seal '{output}' measure --variant {wildcards.variant} {params.binary}"
        " --settings {params.settings} --out-dir results/raw/{wildcards.variant}"
        " 2>&1 | tee {log}"


# The races' comparisons, timed in alternation on one GPU (gpumm/run/paired.py): after every variant of a race has
# been measured, since each family races with its fastest verified build at each size.
rule paired:
    input:
        samples=expand(f"{RAW}/samples.csv", variant=PAIRED_IDS),
        binaries=[
            f"results/build/{v}/{VARIANTS[v].binary_name}"
            for v in PAIRED_IDS
            if VARIANTS[v].is_built
        ],
    output:
        samples="results/raw/paired/samples.csv",
        meta="results/raw/paired/meta.json",
    log:
        "results/logs/measure/paired.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    params:
        plan=shlex.quote(json.dumps(PAIRED_PLAN, sort_keys=True)),
        settings=shlex.quote(json.dumps(PAIRED_SETTINGS, sort_keys=True)),
        seed=config["seed"],
        cpu_max_mnk=config["verify"]["cpu_reference_max_mnk"],
    shell:
        "python -m gpumm --seal '{output}' paired --plan {params.plan} --settings {params.settings}"
        " --seed {params.seed} --cpu-max-mnk {params.cpu_max_mnk} --out-dir results/raw/paired 2>&1 | tee {log}"


# Every profile in one Nsight Compute session (gpumm/profile.py): ncu, Python and the CUDA context start once.
# Each variant still gets its own profile.csv, and a variant whose kernel, binary and settings are unchanged
# reuses its profile from results/cache/profile: an edit to one kernel re-profiles that kernel alone.
PROFILE_PLAN = {
    "variants": {
        v: {
            "binary": (
                f"results/build/{v}/{VARIANTS[v].binary_name}"
                if VARIANTS[v].is_cuda
                else None
            ),
            "sizes": profile_sizes(v),
            "metric_sets": gpumm_config.metric_sets_for(VARIANTS[v], config),
        }
        for v in ALL_IDS
    },
    "coalescing": {
        "cubin": "results/build/access_patterns/kernel.cubin",
        "plan": config["coalescing"],
    },
    "metric_sets": config["profile"].get("metric_sets", {}),
    "marker": "results/build/launch_overhead/kernel.cubin",
}


# Every profile in one Nsight Compute session (gpumm/profile/session.py; the plan above).
rule profile:
    input:
        binaries=expand("results/build/{variant}/kernel.cubin", variant=CUDA_IDS),
        samples=expand(f"{RAW}/samples.csv", variant=ALL_IDS),
        coalescing="results/raw/coalescing/samples.csv",
        cubin="results/build/access_patterns/kernel.cubin",
        marker="results/build/launch_overhead/kernel.cubin",
    output:
        expand(f"{RAW}/profile.csv", variant=ALL_IDS),
        "results/raw/coalescing/profile.csv",
    log:
        "results/logs/profile.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    params:
        plan=shlex.quote(json.dumps(PROFILE_PLAN, sort_keys=True)),
        seed=config["seed"],
        metrics=PROFILE_METRICS,
        disabled="" if config["profile"]["enabled"] else "--disabled",
    shell:
        "python -m gpumm --seal '{output}' profile --plan {params.plan} --seed {params.seed} --metrics={params.metrics}"
        " {params.disabled} --results results 2>&1 | tee {log}"


# Where the run measures: the GPU, its clocks and limits, the software, the commit and the configuration.
rule provenance:
    output:
        "results/raw/provenance.json",
    log:
        "results/logs/provenance.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    params:
        variants=",".join(ALL_IDS),
        config_digest=gpumm_config.digest(config),
        config=shlex.quote(json.dumps(config)),
        why=DECISION.why,
    shell:
        "python -m gpumm --seal '{output}' provenance --variants {params.variants}"
        " --config-digest {params.config_digest} --config {params.config} --why '{params.why}'"
        " --out {output} > {log} 2>&1 || said {log}"


# Compile a micro-benchmark of the catalog (the access patterns, the empty kernel).
rule build_micro:
    input:
        lambda w: f"kernels/{MICRO[w.micro]['file']}",
    output:
        cubin="results/build/{micro}/kernel.cubin",
        ptx="results/build/{micro}/kernel.ptx",
        sass="results/build/{micro}/kernel.sass",
        resources="results/build/{micro}/resources.json",
    log:
        "results/logs/build/{micro}.log",
    wildcard_constraints:
        micro="|".join(MICRO),
    conda:
        ENV
    params:
        arch=ARCH,
    shell:
        "nice -n 10 python -m gpumm --seal '{output}' build-micro --name {wildcards.micro} --arch {params.arch}"
        " --out-dir results/build/{wildcards.micro} > {log} 2>&1 || said {log}"


# The coalescing micro-benchmark: each access pattern timed and profiled, in the L2 and in DRAM.
rule coalescing:
    input:
        cubin="results/build/access_patterns/kernel.cubin",
    output:
        "results/raw/coalescing/samples.csv",
    log:
        "results/logs/measure/coalescing.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    params:
        plan=json.dumps(config["coalescing"]),
        timing=json.dumps(config["timing"], sort_keys=True),
        seed=config["seed"],
    shell:
        "python -m gpumm --seal '{output}' coalescing --cubin {input.cubin} --plan '{params.plan}'"
        " --timing '{params.timing}' --seed {params.seed} --out-dir results/raw/coalescing 2>&1 | tee {log}"


# The copy bandwidths: host to device and back (pinned and pageable), device to device.
rule bandwidth:
    output:
        "results/raw/bandwidth/samples.csv",
    log:
        "results/logs/measure/bandwidth.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    params:
        nbytes=config["bandwidth"]["bytes"],
        timing=json.dumps(config["timing"], sort_keys=True),
    shell:
        "python -m gpumm --seal '{output}' bandwidth --bytes {params.nbytes} --timing '{params.timing}'"
        " --out-dir results/raw/bandwidth > {log} 2>&1 || said {log}"


# The memory hierarchy: pointer-chasing latency and each level's bandwidth.
rule hierarchy:
    input:
        cubin="results/build/memory_hierarchy/kernel.cubin",
    output:
        "results/raw/hierarchy/samples.csv",
    log:
        "results/logs/measure/hierarchy.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    params:
        seed=config["seed"],
    shell:
        "python -m gpumm --seal '{output}' hierarchy --cubin {input.cubin} --seed {params.seed}"
        " --out-dir results/raw/hierarchy 2>&1 | tee {log}"


# The launch overhead: an empty kernel launched alone, in a stream and in a graph.
rule overhead:
    input:
        cubin="results/build/launch_overhead/kernel.cubin",
    output:
        "results/raw/overhead/samples.csv",
    log:
        "results/logs/measure/overhead.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    shell:
        "python -m gpumm --seal '{output}' overhead --cubin {input.cubin} --out-dir results/raw/overhead > {log} 2>&1 || said {log}"

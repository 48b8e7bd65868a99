# Measure mode: a CUDA GPU is here. Build, verify and time, profile.
#
# Every job that uses the GPU declares `resources: gpu=1`; the workflow's
# default profile (workflow/profiles/default, found through the top-level
# profiles/ link) limits the run to gpu=1, so that two GPU jobs never share
# the GPU however many cores Snakemake is given, while builds, collection and
# notebooks run in parallel. A CPU measurement takes every core, so that it
# runs alone.


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
        variant="|".join(CUDA_IDS) or "^$",
    conda:
        ENV
    params:
        arch=ARCH,
        defines=lambda w: VARIANTS[w.variant].defines_text(),
    shell:
        "python -m gpumm build --variant {wildcards.variant} --arch {params.arch}"
        " --out-dir results/build/{wildcards.variant} > {log} 2>&1"


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
        "python -m gpumm build --variant {wildcards.variant} --arch host"
        " --out-dir results/build/{wildcards.variant} > {log} 2>&1"


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
        shapes=measure_shapes,
        modes=lambda w: ",".join(
            gpumm_config.modes_for(w.variant, config, VARIANTS[w.variant].op)
        ),
        timing=config["timing"],
        seed=config["seed"],
        cpu_max=config["verify"]["cpu_reference_max_mnk"],
    shell:
        "python -m gpumm measure --variant {wildcards.variant} {params.binary}"
        " --shapes '{params.shapes}' --modes {params.modes}"
        " --warmups {params.timing[warmups]} --repeats {params.timing[repeats]}"
        " --budget {params.timing[budget_s]} --seed {params.seed}"
        " --cpu-max-mnk {params.cpu_max} --cpu-repeats {params.timing[cpu_repeats]}"
        " --cold-repeats {params.timing[cold_repeats]}"
        " --end-to-end-max-size {params.timing[end_to_end_max_size]}"
        " --out-dir results/raw/{wildcards.variant}"
        " 2>&1 | tee {log}"


rule profile:
    input:
        binary=binary,
        samples=f"{RAW}/samples.csv",
    output:
        f"{RAW}/profile.csv",
    log:
        "results/logs/profile/{variant}.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    params:
        binary=binary_arg,
        sizes=profile_sizes,
        seed=config["seed"],
        metrics=PROFILE_METRICS,
        disabled="" if config["profile"]["enabled"] else "--disabled",
    shell:
        "python -m gpumm profile --variant {wildcards.variant} {params.binary}"
        " --sizes {params.sizes} --seed {params.seed} --metrics={params.metrics}"
        " {params.disabled} --out-dir results/raw/{wildcards.variant} > {log} 2>&1"


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
        "python -m gpumm provenance --variants {params.variants}"
        " --config-digest {params.config_digest} --config {params.config} --why '{params.why}'"
        " --out {output} > {log} 2>&1"


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
        "python -m gpumm build-micro --name {wildcards.micro} --arch {params.arch}"
        " --out-dir results/build/{wildcards.micro} > {log} 2>&1"


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
        timing=config["timing"],
        seed=config["seed"],
    shell:
        "python -m gpumm coalescing --cubin {input.cubin} --plan '{params.plan}'"
        " --warmups {params.timing[warmups]} --repeats {params.timing[repeats]}"
        " --seed {params.seed} --out-dir results/raw/coalescing 2>&1 | tee {log}"


rule profile_coalescing:
    input:
        cubin="results/build/access_patterns/kernel.cubin",
        samples="results/raw/coalescing/samples.csv",
    output:
        "results/raw/coalescing/profile.csv",
    log:
        "results/logs/profile/coalescing.log",
    conda:
        ENV
    resources:
        **GPU_RESOURCES,
    params:
        plan=json.dumps(config["coalescing"]),
        seed=config["seed"],
        metrics=PROFILE_METRICS,
        disabled="" if config["profile"]["enabled"] else "--disabled",
    shell:
        "python -m gpumm profile-coalescing --cubin {input.cubin} --plan '{params.plan}'"
        " --seed {params.seed} --metrics={params.metrics} {params.disabled}"
        " --out-dir results/raw/coalescing > {log} 2>&1"


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
        timing=config["timing"],
    shell:
        "python -m gpumm bandwidth --bytes {params.nbytes} --warmups {params.timing[warmups]}"
        " --repeats {params.timing[repeats]} --out-dir results/raw/bandwidth > {log} 2>&1"


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
        "python -m gpumm hierarchy --cubin {input.cubin} --seed {params.seed}"
        " --out-dir results/raw/hierarchy 2>&1 | tee {log}"


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
    params:
        timing=config["timing"],
    shell:
        "python -m gpumm overhead --cubin {input.cubin} --warmups {params.timing[warmups]}"
        " --repeats {params.timing[repeats]} --out-dir results/raw/overhead > {log} 2>&1"

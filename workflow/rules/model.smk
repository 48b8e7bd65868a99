# A real model's layers (config `model`, issue 40): every kernel of model.kernels on the fitted shapes, the
# dispatcher's rule fitted on them, then the dispatcher and cuBLAS BF16 on every shape, held-out ones included;
# then FP32 the same way (model.fp32): its kernels and cuBLAS SGEMM on the fit shapes, its rule, then its
# dispatcher and SGEMM on the held-out shapes (the ladder page's odd ones) and the layers.
# Nothing here while the model is off (the default study), except in a replay of an archive that holds it.

if MODEL_ON and MODE == "measure":

    # Every kernel against cuBLAS BF16 on the fitted shapes, weights cold, in paired rounds (gpumm/run/layers.py);
    # first the card's read rate (the read_stream micro-benchmark), the DRAM bound's.
    rule model:
        input:
            binaries=[
                f"results/build/{v}/kernel.cubin"
                for v in MODEL_IDS
                if VARIANTS[v].is_cuda
            ],
            read="results/build/read_stream/kernel.cubin",
        output:
            MODEL_STEP_RAW["model"],
        log:
            "results/logs/measure/model.log",
        conda:
            ENV
        resources:
            **GPU_RESOURCES,
        params:
            model=shlex.quote(json.dumps(config["model"], sort_keys=True)),
            kernels=",".join(MODEL_IDS),
            seed=config["seed"],
        shell:
            "python -m gpumm --seal '{output}' layers --model {params.model} --kernels {params.kernels}"
            " --read-cubin {input.read} --seed {params.seed} --out-dir results/raw/model 2>&1 | tee {log}"

    # The dispatcher's rule, fitted on the model step's samples (gpumm/analyse/dispatch.py).
    rule model_rule:
        input:
            "results/raw/model/samples.csv",
            "results/raw/model/checks.csv",
        output:
            "results/model/rule.json",
        log:
            "results/logs/model_rule.log",
        conda:
            ENV
        params:
            reference=config["model"]["reference"],
        shell:
            "python -m gpumm --seal '{output}' model-rule --raw results/raw/model --reference {params.reference}"
            " --out {output} > {log} 2>&1 || said {log}"

    # The dispatcher (each shape's pick) and cuBLAS BF16 on every shape, the held-out ones included.
    rule model_dispatch:
        input:
            rule="results/model/rule.json",
            binaries=[
                f"results/build/{v}/kernel.cubin"
                for v in MODEL_IDS
                if VARIANTS[v].is_cuda
            ],
        output:
            MODEL_STEP_RAW["model-dispatch"],
        log:
            "results/logs/measure/model-dispatch.log",
        conda:
            ENV
        resources:
            **GPU_RESOURCES,
        params:
            model=shlex.quote(json.dumps(config["model"], sort_keys=True)),
            kernels=",".join(MODEL_IDS),
            reference=config["model"]["reference"],
            seed=config["seed"],
        shell:
            "python -m gpumm --seal '{output}' layers --model {params.model} --tokens all"
            " --kernels {params.kernels} --timed {params.reference} --rule {input.rule} --seed {params.seed}"
            " --out-dir results/raw/model-dispatch 2>&1 | tee {log}"

    # FP32: every build of model.fp32.kernels against cuBLAS SGEMM on the fit shapes, in paired rounds.
    rule model_fp32:
        input:
            binaries=[
                f"results/build/{v}/kernel.cubin"
                for v in MODEL_FP32_IDS
                if VARIANTS[v].is_cuda
            ],
        output:
            MODEL_STEP_RAW["model-fp32"],
        log:
            "results/logs/measure/model-fp32.log",
        conda:
            ENV
        resources:
            **GPU_RESOURCES,
        params:
            model=shlex.quote(json.dumps(config["model"], sort_keys=True)),
            kernels=",".join(MODEL_FP32_IDS),
            seed=config["seed"],
        shell:
            "python -m gpumm --seal '{output}' layers --fp32 --model {params.model} --kernels {params.kernels}"
            " --seed {params.seed} --out-dir results/raw/model-fp32 2>&1 | tee {log}"

    # The FP32 dispatcher's rule: every side of a shape counts alike (no tokens axis among the fit shapes).
    rule model_fp32_rule:
        input:
            "results/raw/model-fp32/samples.csv",
            "results/raw/model-fp32/checks.csv",
        output:
            "results/model/rule-fp32.json",
        log:
            "results/logs/model_fp32_rule.log",
        conda:
            ENV
        params:
            reference=config["model"]["fp32"]["reference"],
        shell:
            "python -m gpumm --seal '{output}' model-rule --raw results/raw/model-fp32 --reference {params.reference}"
            " --fp32 --out {output} > {log} 2>&1 || said {log}"

    # The FP32 dispatcher and SGEMM on the held-out shapes and the model's layers at model.fp32.tokens.
    rule model_fp32_dispatch:
        input:
            rule="results/model/rule-fp32.json",
            binaries=[
                f"results/build/{v}/kernel.cubin"
                for v in MODEL_FP32_IDS
                if VARIANTS[v].is_cuda
            ],
        output:
            MODEL_STEP_RAW["model-fp32-dispatch"],
        log:
            "results/logs/measure/model-fp32-dispatch.log",
        conda:
            ENV
        resources:
            **GPU_RESOURCES,
        params:
            model=shlex.quote(json.dumps(config["model"], sort_keys=True)),
            kernels=",".join(MODEL_FP32_IDS),
            reference=config["model"]["fp32"]["reference"],
            seed=config["seed"],
        shell:
            "python -m gpumm --seal '{output}' layers --fp32 --model {params.model} --tokens all"
            " --kernels {params.kernels} --timed {params.reference} --rule {input.rule} --seed {params.seed}"
            " --out-dir results/raw/model-fp32-dispatch 2>&1 | tee {log}"


if MODEL_ON and MODE == "replay":

    # The archived model step and dispatch step (a note in place of each file the archive lacks).
    rule replay_model:
        input:
            archive=f"{ARCHIVE}/raw/provenance.json",
        output:
            MODEL_RAW,
        log:
            "results/logs/replay/model.log",
        conda:
            ENV
        params:
            archived=archived(
                "raw/model/",
                "raw/model-dispatch/",
                "raw/model-fp32/",
                "raw/model-fp32-dispatch/",
            ),
        shell:
            "python -m gpumm --seal '{output}' replay-study --study model --archive {input.archive} > {log} 2>&1 || said {log}"

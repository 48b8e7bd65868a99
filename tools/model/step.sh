#!/usr/bin/env bash
# The model step and the dispatch step by hand on a lent GPU machine (issue 40), without the rest of the study:
# the kernels' cubins come built (carried as results/carry/build/<variant>/kernel.cubin, with read_stream's),
# the model section from config.yaml. `bash tools/model/step.sh NAME` (after the device README's install line);
# the steps' files, their consoles and the rule into $OUT/NAME.tgz. The pipeline's own way is
# `snakemake --cores 1 --configfile workflow/configs/model.yaml` (rules model, model_rule, model_dispatch).
set -u
cp -r results/carry/build results/ 2>/dev/null || { mkdir -p results; cp -r results/carry/build results/build; }
K=bf16_stream_max_m1,bf16_stream_max_m8,bf16_stream_rows2_max_m1,bf16_stream_mma_w8,bf16_stream_mma_w16,bf16_stream_mma_w8pipe,bf16_stream_mma_m64,bf16_stream_mma_w8pf,bf16_stream_mma_w16pf,bf16_stream_mma_w12pf,bf16_stream_mma_w20pf,bf16_stream_tma_k4s5e,bf16_stream_tma_k4s4e,bf16_persistent,bf16_cluster,bf16_pingpong,cublas_bf16
MODEL=$(python -c "import yaml,json;print(json.dumps(yaml.safe_load(open('config.yaml'))['model']))")
R=/tmp/res/$1
mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $R/gpu.txt
( time python -m gpumm layers --model "$MODEL" --kernels $K --read-cubin results/build/read_stream/kernel.cubin --out-dir $R/model ) > $R/model.log 2>&1; echo "model rc=$?"
python -m gpumm model-rule --raw $R/model --out $R/rule.json > $R/rule.log 2>&1; echo "rule rc=$?"; cat $R/rule.log
( time python -m gpumm layers --model "$MODEL" --tokens all --kernels $K --timed cublas_bf16 --rule $R/rule.json --out-dir $R/dispatch ) > $R/dispatch.log 2>&1; echo "dispatch rc=$?"
tar czf $OUT/$1.tgz -C /tmp/res $1
grep -E "read stream|device copy|FAIL|Error|error|real" $R/model.log $R/dispatch.log | head -30
tail -5 $R/model.log; tail -3 $R/dispatch.log

#!/usr/bin/env bash
# exploration (issue 40): the BF16 model steps at the prefill end with heat rounds (model.timing.heat_s), the
# rule fitted there, the dispatch step heated and (after a pause) not; then the model step's GPU tests
set -u
mkdir -p results && rm -rf results/build && cp -r results/carry/build results/build
R=/tmp/res/$1; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader > $R/gpu.txt
K=bf16_persistent,bf16_cluster,bf16_pingpong,cublas_bf16
MODEL=$(python -c "import yaml,json;m=yaml.safe_load(open('config.yaml'))['model'];m.update(tokens=[1024,4096,8192],held_out=[2000]);print(json.dumps(m))")
COOL=$(python -c "import json,sys;m=json.loads(sys.argv[1]);m['timing']['heat_s']=0;print(json.dumps(m))" "$MODEL")
( time python -m gpumm layers --model "$MODEL" --kernels $K --out-dir $R/model ) > $R/model.log 2>&1; echo "model rc=$?"
python -m gpumm model-rule --raw $R/model --out $R/rule.json > $R/rule.log 2>&1; echo "rule rc=$?"
( time python -m gpumm layers --model "$MODEL" --tokens all --kernels $K --timed cublas_bf16 --rule $R/rule.json --out-dir $R/dispatch ) > $R/dispatch.log 2>&1; echo "dispatch rc=$?"
sleep 15
( time python -m gpumm layers --model "$COOL" --tokens all --kernels $K --timed cublas_bf16 --rule $R/rule.json --out-dir $R/dispatch-cool ) > $R/dispatch-cool.log 2>&1; echo "dispatch-cool rc=$?"
tar czf $OUT/$1.tgz -C /tmp/res $1
grep -E "FAIL|Error|error|real" $R/*.log | head -20
( timeout 280 python -m pytest -q -p no:cacheprovider -m gpu tests/run/test_gpu_model.py ) > $R/gputest.log 2>&1; echo "gpu tests rc=$?"; tail -4 $R/gputest.log
tar czf $OUT/$1.tgz -C /tmp/res $1

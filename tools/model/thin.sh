#!/usr/bin/env bash
# The FP32 model step by hand on a lent GPU machine for `splitk` at the thin held-out 4097 x 33 x 4095 (issue 40,
# data/checks/fp32-thin-h200): the cubins come built here (results/carry/build/<variant>/, carried); `bash
# tools/model/thin.sh NAME "KERNELS" "PROFILED"` runs the GPU tests of `splitk`, the folds and the model step's
# cold and warm weights, then the FP32 fit step with KERNELS (comma-separated catalog variants), its rule and the
# dispatch step as the pipeline runs them, the thin probe shapes, and Nsight Compute on one launch of each PROFILED
# variant at 4097 x 33 x 4095; everything into $OUT/NAME.tgz. The device README's install line is its first.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
N=$1; FK=$2; PV=${3:-}; R=/tmp/res/$N; mkdir -p $R results; cp -r results/carry/build results/build
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
echo "== gpu tests"; timeout 240 python3 -m pytest -m gpu -q tests/run/test_gpu.py tests/run/test_gpu_model.py -k "folds or cold_and_warm or splitk" 2>&1 | tee $R/pytest.txt | tail -3
MODEL=$(python3 -c "import yaml,json;print(json.dumps(yaml.safe_load(open('config.yaml'))['model']))")
echo "== fp32 fit"; ( time timeout 200 python3 -m gpumm layers --fp32 --model "$MODEL" --kernels $FK --out-dir $R/fp32 ) > $R/fp32.log 2>&1; echo rc=$?; tail -3 $R/fp32.log
python3 -m gpumm model-rule --fp32 --raw $R/fp32 --out $R/fp32-rule.json > $R/fp32-rule.log 2>&1; echo "rule rc=$?"
( time timeout 90 python3 -m gpumm layers --fp32 --model "$MODEL" --tokens all --kernels $FK --timed cublas --rule $R/fp32-rule.json --out-dir $R/fp32-dispatch ) > $R/fp32-dispatch.log 2>&1; echo "dispatch rc=$?"; grep -E "held-out" $R/fp32-dispatch.log | head
TM=$(python3 -c "
import yaml,json;m=yaml.safe_load(open('config.yaml'))['model']
m['fp32']['fit']=[[4097,33,4095],[4096,32,4096],[4097,34,4095],[4097,48,4095],[2049,33,4095],[8193,33,4095],[4097,33,8191],[4097,65,4095]]; print(json.dumps(m))")
echo "== thin"; ( time timeout 120 python3 -m gpumm layers --fp32 --model "$TM" --kernels $FK --out-dir $R/thin ) > $R/thin.log 2>&1; echo rc=$?; tail -3 $R/thin.log
PM=$(python3 -c "
import yaml,json;m=yaml.safe_load(open('config.yaml'))['model']
m['fp32']['fit']=[[4097,33,4095]]; print(json.dumps(m))")
for v in ${PV//,/ }; do echo "== ncu $v"; timeout 120 ncu --target-processes all -k regex:matmul_ -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section InstructionStats --csv --page details python3 -m gpumm layers --fp32 --model "$PM" --kernels $v,cublas --out-dir /tmp/prof-$v > $R/ncu-$v.csv 2> $R/ncu-$v.err; echo "ncu rc=$?"; done
tar czf $OUT/$N.tgz -C /tmp/res $N

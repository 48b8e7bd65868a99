#!/usr/bin/env bash
# The FP32 model step by hand on a lent GPU machine for cluster_tile's narrow last column of tiles (issue 40,
# data/checks/fp32-fold-h200): the cubins come built here (results/carry/build/<variant>/, carried); `bash
# tools/model/fold.sh NAME [full]` times cluster_tile's builds, streamk and cuBLAS SGEMM on probe shapes around
# 1023 x 1025 x 1024 (with `full` first the FP32 fit step, its rule and the dispatch step, as the pipeline runs
# them), then the GPU tests of cluster_tile and the model step's, memcheck and racecheck on the fold's shapes;
# everything into $OUT/NAME.tgz. The device README's install line is its first.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
N=$1; R=/tmp/res/$N; mkdir -p $R results; cp -r results/carry/build results/build
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
FK=splitk_b32x32,splitk_b32x48,splitk_b32x48c2,splitk_b32x32c2f4,splitk_b32x32f4,cluster_tile_t128c3,cluster_tile_t128c2,cluster_tile_t128c2f4,prefetch_tile16,prefetch_tile32,no_bank_conflict_tile16,no_bank_conflict_tile32,streamk,cublas
MODEL=$(python3 -c "import yaml,json;print(json.dumps(yaml.safe_load(open('config.yaml'))['model']))")
if [ "${2:-}" = full ]; then
echo "== fp32 fit"; ( time timeout 150 python3 -m gpumm layers --fp32 --model "$MODEL" --kernels $FK --out-dir $R/fp32 ) > $R/fp32.log 2>&1; echo rc=$?; tail -3 $R/fp32.log
python3 -m gpumm model-rule --fp32 --raw $R/fp32 --out $R/fp32-rule.json > $R/fp32-rule.log 2>&1; echo "rule rc=$?"
( time timeout 60 python3 -m gpumm layers --fp32 --model "$MODEL" --tokens all --kernels $FK --timed cublas --rule $R/fp32-rule.json --out-dir $R/fp32-dispatch ) > $R/fp32-dispatch.log 2>&1; echo "dispatch rc=$?"; grep -E "held-out" $R/fp32-dispatch.log | head
fi
echo "== probe"
PM=$(python3 -c "
import yaml,json;m=yaml.safe_load(open('config.yaml'))['model']
m['fp32']['fit']=[[1024,1024,1024],[1023,1025,1024],[1023,1028,1024],[1023,1029,1024]]; print(json.dumps(m))")
PK=cluster_tile_t128c3,cluster_tile_t128c2,cluster_tile_t128c2f4,streamk,cublas
( time timeout 90 python3 -m gpumm layers --fp32 --model "$PM" --kernels $PK --out-dir $R/probe ) > $R/probe.log 2>&1; echo rc=$?; tail -5 $R/probe.log
TM=$(python3 -c "
import yaml,json;m=yaml.safe_load(open('config.yaml'))['model']
m['fp32']['fit']=[[4097,33,4095],[4096,32,4096],[4097,34,4095],[4097,37,4095],[8192,32,8192],[8192,32,1024],[1024,32,8192],[1024,32,1024],[333,517,129],[16,4096,4096]]; print(json.dumps(m))")
TK=splitk_b32x32,splitk_b32x48,splitk_b32x48c2,splitk_b32x32c2f4,splitk_b32x32f4,cublas
( time timeout 90 python3 -m gpumm layers --fp32 --model "$TM" --kernels $TK --out-dir $R/thin ) > $R/thin.log 2>&1; echo rc=$?; tail -5 $R/thin.log
echo "== gpu tests"; timeout 200 python3 -m pytest -m gpu -q tests/run/test_gpu.py tests/run/test_gpu_model.py -k "cluster_tile or splitk or cold_and_warm" 2>&1 | tee $R/pytest.txt | tail -4
echo "== memcheck"; timeout 60 compute-sanitizer --tool memcheck --error-exitcode 7 python3 -m pytest -m gpu -q tests/run/test_gpu.py -k "folds" 2>&1 | tee $R/sanitize-memcheck.txt | tail -3
echo "== racecheck"; timeout 90 compute-sanitizer --tool racecheck --error-exitcode 7 python3 -m pytest -m gpu -q tests/run/test_gpu.py -k "folds and (130x260 or 200x131 or 65x133 or 3x4x9) and not b32x32f4" 2>&1 | tee $R/sanitize-racecheck.txt | tail -3
tar czf $OUT/$N.tgz -C /tmp/res $N

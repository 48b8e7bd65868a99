#!/usr/bin/env bash
# `bash tools/model/thin_probe.sh NAME KERNELS`: the GPU tests of `splitk`, then the FP32 model step by hand on thin
# and small probe shapes with KERNELS (comma-separated catalog variants, cubins built here and carried in
# results/carry/build); everything into $OUT/NAME.tgz (issue 40, data/checks/fp32-thin-h200).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
N=$1; FK=$2; R=/tmp/res/$N; mkdir -p $R results; cp -r results/carry/build results/build
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
echo "== gpu tests"; timeout 150 python3 -m pytest -m gpu -q tests/run/test_gpu.py -k "splitk" 2>&1 | tee $R/pytest.txt | tail -3
TM=$(python3 -c "
import yaml,json;m=yaml.safe_load(open('config.yaml'))['model']
m['fp32']['fit']=[[4097,33,4095],[4096,32,4096],[2049,33,4095],[8192,32,8192],[1024,32,1024],[16,4096,4096],[333,517,129],[256,512,128],[1,4096,16],[1024,1024,1024]]; print(json.dumps(m))")
echo "== probe"; ( time timeout 150 python3 -m gpumm layers --fp32 --model "$TM" --kernels $FK --out-dir $R/probe ) > $R/probe.log 2>&1; echo rc=$?; tail -3 $R/probe.log
tar czf $OUT/$N.tgz -C /tmp/res $N

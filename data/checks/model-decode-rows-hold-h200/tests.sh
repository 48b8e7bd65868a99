#!/usr/bin/env bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/gt; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
compute-sanitizer --version | tail -1 >> $R/gpu.txt
SECONDS=0
timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/run/test_gpu_model.py > $R/gpu-model.txt 2>&1; echo "gpu model tests exit $? at $SECONDS s"; tail -3 $R/gpu-model.txt
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 7 python3 -m pytest -m gpu -q -p no:cacheprovider tests/run/test_gpu_model.py -k "stream_pdl or pdl_launches" > $R/sanitize-$tool.txt 2>&1; echo "$tool exit $? at $SECONDS s" | tee -a $R/sanitize-$tool.txt; tail -3 $R/sanitize-$tool.txt
done
tar czf $OUT/gt.tgz -C /tmp gt

#!/usr/bin/env bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/tr; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
timeout 200 python3 tools/model/trace.py $R/t16 --layers qkv,out,down,gate_up 2>&1 | tee $R/t16.log
timeout 100 python3 tools/model/trace.py $R/t1 --tokens 1 --layers qkv,out 2>&1 | tee $R/t1.log
tar czf $OUT/tr.tgz -C /tmp tr

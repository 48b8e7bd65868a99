#!/usr/bin/env bash
# the TMA stream with the weight's next stages prefetched into the L2 (PF_AHEAD, PF_GROUP), beside k4s5e/k4s4e
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/pf; mkdir -p $R results; cp -r results/carry/build results/build
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
for round in 1 2; do
  timeout 200 python3 tools/model/run.py results/carry/stream.cubin $R/r$round --tokens 16,1 --candidates results/carry/pf.yaml > $R/r$round.log 2>&1; echo rc=$?
done
timeout 120 python3 -m pytest -q -m gpu tests/run/test_gpu_model.py -k "bf16_stream_tma" -p no:cacheprovider > $R/pytest.txt 2>&1; tail -2 $R/pytest.txt
tar czf $OUT/pf.tgz -C /tmp pf
grep -E "FAILED|cold" $R/r1.log $R/r2.log | grep -E "gate_up|down|FAIL" | head -60

#!/usr/bin/env bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/pdl; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
cat $R/gpu.txt
for round in 1 2; do timeout 200 python3 tools/model/pdl.py results/carry/pdl.cubin results/carry/rs/kernel.cubin $R/pdl-r$round.csv 2>&1 | tee $R/pdl-r$round.log; done
tar czf $OUT/pdl.tgz -C /tmp pdl

#!/usr/bin/env bash
# the weight read in the TMA stream's geometry, rows side by side in groups, beside read_rows2
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/fr; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
for round in 1 2; do timeout 240 python3 tools/model/fronts.py results/carry/fronts.cubin results/carry/rs/kernel.cubin $R/fronts-r$round.csv 2>&1 | tee $R/fronts-r$round.log; done
tar czf $OUT/fr.tgz -C /tmp fr

#!/usr/bin/env bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/pk; mkdir -p $R results/build
cp -r results/carry/build/* results/build/
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
cat $R/gpu.txt
for i in 1 2; do timeout 200 python3 tools/model/run.py results/carry/stream.cubin $R/k2-$i --tokens 1,16 --candidates results/carry/cand2.yaml 2>&1 | grep -v "^ *[0-9]" | tee $R/k2-$i.log; done
tar czf $OUT/pk.tgz -C /tmp pk

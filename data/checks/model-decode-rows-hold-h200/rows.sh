#!/usr/bin/env bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/po; mkdir -p $R results/build
cp -r results/carry/build/* results/build/
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
cat $R/gpu.txt
SECONDS=0
timeout 200 python3 tools/model/run.py results/carry/stream.cubin $R/po-1 --tokens 1 --candidates results/carry/cand.yaml > $R/po-1.log 2>&1; echo "run 1 exit $? at $SECONDS s"
grep -h "cold\|FAIL" $R/po-1.log | awk '{print $1,$2,$3,$4,$6,$8}'
left=$((300 - SECONDS))
if [ $left -gt 60 ]; then timeout $left python3 tools/model/run.py results/carry/stream.cubin $R/po-2 --tokens 1 --candidates results/carry/cand.yaml > $R/po-2.log 2>&1; echo "run 2 exit $? at $SECONDS s"; fi
grep -h "cold\|FAIL" $R/po-2.log | awk '{print $1,$2,$3,$4,$6,$8}'
tar czf $OUT/po.tgz -C /tmp po

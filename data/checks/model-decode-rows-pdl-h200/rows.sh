#!/usr/bin/env bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/rp; mkdir -p $R results/build
cp -r results/carry/build/* results/build/
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
for i in 1 2; do timeout 150 python3 tools/model/run.py results/carry/stream.cubin $R/rp-$i --tokens 1,16 --layers qkv,out,down,gate_up --candidates results/carry/cand4.yaml > $R/rp-$i.log 2>&1; echo "run $i exit $?"; done
grep -h "cold\|FAIL" $R/rp-*.log | awk '{print $1,$2,$3,$4,$6,$8}'
tar czf $OUT/rp.tgz -C /tmp rp

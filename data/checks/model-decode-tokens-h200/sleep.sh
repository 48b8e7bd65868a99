#!/usr/bin/env bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/sl; mkdir -p $R results/build
cp -r results/carry/build/* results/build/
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
cat $R/gpu.txt
SECONDS=0
for i in 1 2; do
  timeout $((280 - SECONDS)) python3 tools/model/run.py results/carry/stream.cubin $R/sl-$i --tokens 1,16 --layers qkv,out,down --candidates results/carry/cand-sleep.yaml > $R/sl-$i.log 2>&1; echo "run $i exit $? at $SECONDS s"
  grep -h "cold\|FAIL" $R/sl-$i.log | awk '{print $1,$2,$3,$4,$6,$8}'
done
tar czf $OUT/sl.tgz -C /tmp sl

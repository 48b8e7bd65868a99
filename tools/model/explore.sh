#!/usr/bin/env bash
# One exploration call of tools/model/run.py on a lent GPU machine (issue 40): the builds of tools/model/tags.py
# (carried as results/carry/build), timed against cuBLAS BF16 twice, each run's files into $OUT/NAME.tgz (also
# when a run is cut at the 280 s the two share, or the call is).
#   bash tools/model/explore.sh NAME CANDIDATES [LAYERS] [TOKENS]     (LAYERS qkv,out,down; TOKENS 1,16)
# after the device README's install line; results/carry/stream.cubin is tools/model/stream.cu built for sm_90a.
set -u
NAME=${1:?NAME}; CAND=${2:?CANDIDATES}; LAYERS=${3:-qkv,out,down}; TOKENS=${4:-1,16}
R=/tmp/explore/$NAME
rm -rf "$R" && mkdir -p "$R" results/build
trap 'tar czf "$OUT/$NAME.tgz" -C /tmp/explore "$NAME"' EXIT
cp -r results/carry/build/* results/build/
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > "$R/gpu.txt"
cat "$R/gpu.txt"
SECONDS=0
for i in 1 2; do
  left=$((280 - SECONDS))
  if [ "$left" -le 10 ]; then echo "run $i not started: $SECONDS s gone of 280"; break; fi
  timeout "$left" python3 tools/model/run.py results/carry/stream.cubin "$R/run-$i" --tokens "$TOKENS" \
    --layers "$LAYERS" --candidates "$CAND" > "$R/run-$i.log" 2>&1
  echo "run $i exit $? at $SECONDS s"
  grep -h "cold\|FAIL" "$R/run-$i.log" | awk '{print $1,$2,$3,$4,$6,$8}'
done

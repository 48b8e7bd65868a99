#!/usr/bin/env bash
# On the lent GPU machine (after the install line): build the BF16 rungs and the hierarchy kernels, then count the
# L2 traffic of read_l2 and of each rung at 8192³ with the same metrics (probe.py). Writes $OUT/l2_roof/*.
set -uo pipefail
IDS=${IDS:-bf16_mma,bf16_wgmma,bf16_warpspec,bf16_persistent,bf16_cluster,bf16_pingpong}
D=$OUT/l2_roof; mkdir -p "$D" /tmp/l2roof
for v in ${IDS//,/ }; do python3 -m gpumm build --variant "$v" --arch sm_90 --out-dir /tmp/l2roof/$v >> "$D/build.log" 2>&1; done
python3 -m gpumm build-micro --name memory_hierarchy --arch sm_90 --out-dir /tmp/l2roof/hierarchy >> "$D/build.log" 2>&1
M=$(python3 -c 'import sys; sys.path.insert(0, "tools/l2_roof"); import probe; print(",".join(probe.METRICS))')
python3 tools/l2_roof/probe.py read-l2 /tmp/l2roof/hierarchy/kernel.cubin | tee "$D/read_l2_events.json"
ncu --metrics "$M" -k regex:read_l2 --csv --print-units base \
  python3 tools/l2_roof/probe.py read-l2 /tmp/l2roof/hierarchy/kernel.cubin > "$D/read_l2_ncu.csv" 2> "$D/ncu1.err"
python3 tools/l2_roof/probe.py plan /tmp/l2roof/plan.json "$IDS"
ncu --metrics "$M" -k regex:bf16_gemm --csv --print-units base python3 -m gpumm profile-target --plan /tmp/l2roof/plan.json \
  --launched /tmp/l2roof/launched.json > "$D/bf16_ncu.csv" 2> "$D/ncu2.err"
cp /tmp/l2roof/launched.json "$D/" 2>/dev/null
tail -3 "$D"/*.err; wc -l "$D"/*.csv

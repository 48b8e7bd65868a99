#!/usr/bin/env bash
# Nsight Compute on the TMA stream, the weight read alone and cuBLAS BF16 at 1 and 16 tokens (issue 40)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p results /tmp/res/p2; cp -r results/carry/build results/build; cp results/carry/prof/* /tmp/res/p2/
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > /tmp/res/p2/gpu.txt
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,lts__t_bytes.sum,sm__cycles_active.avg
for s in gate_up:1 gate_up:16 down:1 down:16 logits:1 logits:16; do L=${s%%:*}; T=${s##*:}
timeout 120 ncu --clock-control none --nvtx --nvtx-include "prof/" --section SpeedOfLight --section MemoryWorkloadAnalysis --metrics $M --csv --page raw python3 tools/model/profile.py results/carry/prof/stream.cubin --layer $L --tokens $T --candidates results/carry/prof/cand.yaml > /tmp/res/p2/ncu-$L-$T.csv 2> /tmp/res/p2/ncu-$L-$T.err; echo "$s rc=$?"; done
tar czf $OUT/p2.tgz -C /tmp/res p2
python3 results/carry/prof/show.py /tmp/res/p2

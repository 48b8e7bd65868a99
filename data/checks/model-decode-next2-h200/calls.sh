#!/usr/bin/env bash
# The call of this check again: the builds here (tools/model/tags.py, `next` candidates handed the weight of the
# launch two after them), then, on a lent H200 with results/carry carried, after the device README's install line:
# bash tools/model/explore.sh next2 results/carry/cand.yaml
set -eu
D=data/checks/model-decode-next2-h200
rm -rf results/carry/build && mkdir -p results/carry
nvcc -cubin -arch=sm_90a -O3 tools/model/stream.cu -o results/carry/stream.cubin
python tools/model/tags.py results/carry/build bf16_stream_tma_pdl_k4s5e,bf16_stream_tma_pdl_k4s5el4 \
  f0n5:NEXT_L2=5,NEXT_FROM=0,NEXT_AT=-1 f0n5a2:NEXT_L2=5,NEXT_FROM=0,NEXT_AT=2 \
  f0n5a4:NEXT_L2=5,NEXT_FROM=0,NEXT_AT=4 f0n9:NEXT_L2=9,NEXT_FROM=0,NEXT_AT=-1 \
  --patch $D/next2.patch --kind next --ahead 2 --candidates results/carry/cand.yaml

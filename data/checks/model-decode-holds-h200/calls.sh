#!/usr/bin/env bash
# The call of this check again: the builds here (tools/model/tags.py with holds.patch), then, on a lent H200 with
# results/carry carried, after the device README's install line:
# bash tools/model/explore.sh holds results/carry/cand.yaml
set -eu
D=data/checks/model-decode-holds-h200
rm -rf results/carry/build && mkdir -p results/carry
nvcc -cubin -arch=sm_90a -O3 tools/model/stream.cu -o results/carry/stream.cubin
python tools/model/tags.py results/carry/build bf16_stream_tma_pdl_k4s5e,bf16_stream_tma_pdl_k4s5el4 \
  h1:HOLDS=1 h2:HOLDS=2 h3:HOLDS=3 --patch $D/holds.patch --candidates results/carry/cand.yaml

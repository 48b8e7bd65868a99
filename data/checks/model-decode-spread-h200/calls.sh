#!/usr/bin/env bash
# The call of this check again: the builds here (tools/model/tags.py), then, on a lent H200 with results/carry
# carried, after the device README's install line: bash tools/model/explore.sh spread results/carry/cand.yaml
set -eu
D=data/checks/model-decode-spread-h200
rm -rf results/carry/build && mkdir -p results/carry
nvcc -cubin -arch=sm_90a -O3 tools/model/stream.cu -o results/carry/stream.cubin
python tools/model/tags.py results/carry/build bf16_stream_tma_pdl_k4s5e,bf16_stream_tma_pdl_k4s5el4 \
  d1000:PDL_DELTA=1000 d1500:PDL_DELTA=1500 d2000:PDL_DELTA=2000 d2500:PDL_DELTA=2500 --patch $D/spread.patch \
  --candidates results/carry/cand.yaml

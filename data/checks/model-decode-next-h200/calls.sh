#!/usr/bin/env bash
# The call of this check again: the builds here (tools/model/tags.py, candidates of kind `next`; the same SASS as
# the script the call was made with), then, on a lent H200 with results/carry carried,
# `bash tools/model/explore.sh next results/carry/cand.yaml` (the archive names its runs nx-1, nx-2).
set -eu
D=data/checks/model-decode-next-h200
rm -rf results/carry/build && mkdir -p results/carry
nvcc -cubin -arch=sm_90a -O3 tools/model/stream.cu -o results/carry/stream.cubin
python tools/model/tags.py results/carry/build bf16_stream_tma_pdl_k4s5e,bf16_stream_tma_pdl_k4s5el4 \
  n4:NEXT_L2=4,NEXT_AT=-1 n8:NEXT_L2=8,NEXT_AT=-1 n12:NEXT_L2=12,NEXT_AT=-1 n4a2:NEXT_L2=4,NEXT_AT=2 \
  n8a2:NEXT_L2=8,NEXT_AT=2 n8a4:NEXT_L2=8,NEXT_AT=4 --kind next \
  --patch $D/next.patch
cp $D/cand-next.yaml results/carry/cand.yaml

#!/usr/bin/env bash
# The second call of this check again: the builds here (tools/model/tags.py with late.patch: holds.patch and LATE;
# LATE_TO, added for the third call, is 20,000 by default: the second call's SASS),
# then, on a lent H200 with results/carry carried, after the device README's install line:
# bash tools/model/explore.sh late results/carry/cand.yaml qkv,out,down
set -eu
D=data/checks/model-decode-holds-h200
rm -rf results/carry/build && mkdir -p results/carry
nvcc -cubin -arch=sm_90a -O3 tools/model/stream.cu -o results/carry/stream.cubin
python tools/model/tags.py results/carry/build bf16_stream_tma_pdl_k4s5e,bf16_stream_tma_pdl_k4s5el4 \
  h2:HOLDS=2 h2l50:HOLDS=2,LATE=50 h2l100:HOLDS=2,LATE=100 h2l100d1000:HOLDS=2,LATE=100,LATE_NS=1000 \
  h3l100:HOLDS=3,LATE=100 h3l100d1000:HOLDS=3,LATE=100,LATE_NS=1000 \
  --patch $D/late.patch --candidates results/carry/cand.yaml
# the third call (late.patch as it is now: LATE_TO, the longest wait, 20,000 ns in the second call's builds):
# bash tools/model/explore.sh late2 results/carry/cand.yaml out,down   after:
#   python tools/model/tags.py results/carry/build bf16_stream_tma_pdl_k4s5e h2:HOLDS=2 \
#     h2l50t7:HOLDS=2,LATE=50,LATE_TO=7000 h2l100t7:HOLDS=2,LATE=100,LATE_TO=7000 \
#     h3l100t7:HOLDS=3,LATE=100,LATE_TO=7000 h2l100t5:HOLDS=2,LATE=100,LATE_TO=5000 \
#     --patch $D/late.patch --candidates results/carry/cand.yaml

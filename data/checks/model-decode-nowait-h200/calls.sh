#!/usr/bin/env bash
# The three calls of this check again: the builds here (tools/model/tags.py: a superset of what each call's
# candidates file times; the same SASS as the per-call scripts the calls were made with), then, on a lent H200
# with results/carry carried, tools/model/explore.sh (the archives name their runs nw-1, fl-1, pl-1 for run-1).
# bash data/checks/model-decode-nowait-h200/calls.sh {nowait|flag|prel2}, then on the GPU machine, after the
# device README's install line: bash tools/model/explore.sh $1 results/carry/cand.yaml
set -eu
D=data/checks/model-decode-nowait-h200
B=bf16_stream_tma_pdl_k4s5e,bf16_stream_tma_pdl_k4s5el4
rm -rf results/carry/build && mkdir -p results/carry
nvcc -cubin -arch=sm_90a -O3 tools/model/stream.cu -o results/carry/stream.cubin
case "${1:?nowait, flag or prel2}" in
  nowait) python tools/model/tags.py results/carry/build $B nowait:PDL_NOWAIT=1 nowait2:PDL_NOWAIT=2 --patch $D/nowait.patch
          cp $D/cand.yaml results/carry/cand.yaml ;;
  flag)   python tools/model/tags.py results/carry/build $B flag:PDL_FLAG=1,PDL_FLAG_NS=0 \
            flag64:PDL_FLAG=1,PDL_FLAG_NS=64 --patch $D/flag.patch
          cp $D/cand-flag.yaml results/carry/cand.yaml ;;
  prel2)  python tools/model/tags.py results/carry/build $B l2pre:PDL_PRE_L2=1 l2prel4:PDL_PRE_L2=1,PDL_L2=4 \
            l2prel8:PDL_PRE_L2=1,PDL_L2=8 l2prel12:PDL_PRE_L2=1,PDL_L2=12 --patch $D/prel2.patch
          cp $D/cand-prel2.yaml results/carry/cand.yaml ;;
  *) echo "calls.sh: $1: nowait, flag or prel2" >&2; exit 2 ;;
esac

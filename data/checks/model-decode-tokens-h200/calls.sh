#!/usr/bin/env bash
# The three calls of this check again: the builds here (tools/model/tags.py; the same SASS as the per-call scripts
# the calls were made with), then, on a lent H200 with results/carry carried, tools/model/explore.sh (the archives
# name their runs tk-1, sl-1, tr-1 for run-1; the third call timed gate and up too: LAYERS qkv,out,down,gate_up).
# bash data/checks/model-decode-tokens-h200/calls.sh {tokens|sleep|trig}, then on the GPU machine, after the
# device README's install line: bash tools/model/explore.sh $1 results/carry/cand.yaml [LAYERS]
set -eu
D=data/checks/model-decode-tokens-h200
B=bf16_stream_tma_pdl_k4s5e,bf16_stream_tma_pdl_k4s5el4
rm -rf results/carry/build && mkdir -p results/carry
nvcc -cubin -arch=sm_90a -O3 tools/model/stream.cu -o results/carry/stream.cubin
case "${1:?tokens, sleep or trig}" in
  tokens) python tools/model/tags.py results/carry/build $B tokl:TOKENS_LAST=1 tokpf:TOKENS_PF=1 \
            tokpfl:TOKENS_PF=1,TOKENS_LAST=1 --patch $D/tokens.patch
          cp $D/cand-tokens.yaml results/carry/cand.yaml ;;
  sleep)  python tools/model/tags.py results/carry/build $B s500:PDL_SLEEP0=500 s1000:PDL_SLEEP0=1000 \
            s1500:PDL_SLEEP0=1500 --patch $D/sleep.patch
          cp $D/cand-sleep.yaml results/carry/cand.yaml ;;
  trig)   python tools/model/tags.py results/carry/build $B t1:PDL_TRIG=1 t2:PDL_TRIG=2 --patch $D/trig.patch
          cp $D/cand-trig.yaml results/carry/cand.yaml ;;
  *) echo "calls.sh: $1: tokens, sleep or trig" >&2; exit 2 ;;
esac

#!/bin/sh
# Build the transpose exploration's candidates into cubins/ (sm_90): NAME DEFINES per line. Run from this folder.
set -e
mkdir -p cubins
rm -f cubins/*.cubin
while read name defs; do
  [ -z "$name" ] && continue
  case "$name" in
    cat_vec4) src=../../kernels/transpose/vec4.cu ;;
    b*) src=bulk.cu ;;  # bulk copies through the TMA: b<chunk KiB>s<stages>a<ahead>x<blocks per SM>
    *) src=explore.cu ;;
  esac
  log=$("${NVCC:-nvcc}" -arch=sm_90 -cubin -O3 $defs -o "cubins/$name.cubin" "$src" -Xptxas -v < /dev/null 2>&1) \
    || { echo "$name: nvcc failed"; echo "$log"; exit 1; }
  echo "$name: $(echo "$log" | grep -E "registers" | tr '\n' ' ')"
done <<'LIST'
cat_vec4
t2     -DTILES=2
c4     -DPER_THREAD=4
b8s4a2x4   -DCHUNK_KB=8 -DSTAGES=4 -DAHEAD=2
b8s4a2x6   -DCHUNK_KB=8 -DSTAGES=4 -DAHEAD=2
b4s8a4x6   -DCHUNK_KB=4 -DSTAGES=8 -DAHEAD=4
b10s4a2x4  -DCHUNK_KB=10 -DSTAGES=4 -DAHEAD=2
b16s2a1x6  -DCHUNK_KB=16 -DSTAGES=2 -DAHEAD=1
LIST

#!/bin/sh
# Build the transpose exploration's candidates into cubins/ (sm_90): NAME DEFINES per line. Run from this folder.
set -e
mkdir -p cubins
rm -f cubins/*.cubin
while read name defs; do
  [ -z "$name" ] && continue
  case "$name" in
    cat_vec4) src=../../kernels/transpose/vec4.cu ;;
    b*) src=bulk.cu ;;
    tt*) src=tile.cu ;;  # wider tiles: tt<rows>x<cols>b<thread rows>  # bulk copies through the TMA: b<chunk KiB>s<stages>a<ahead>x<blocks per SM>
    *) src=explore.cu ;;
  esac
  log=$("${NVCC:-nvcc}" -arch=sm_90 -cubin -O3 $defs -o "cubins/$name.cubin" "$src" -Xptxas -v < /dev/null 2>&1) \
    || { echo "$name: nvcc failed"; echo "$log"; exit 1; }
  echo "$name: $(echo "$log" | grep -E "registers" | tr '\n' ' ')"
done <<'LIST'
cat_vec4
t2     -DTILES=2
c4     -DPER_THREAD=4
tt64x64b16   -DTR=64 -DTC=64 -DBR=16
tt64x64b8    -DTR=64 -DTC=64 -DBR=8
tt32x64b8    -DTR=32 -DTC=64 -DBR=8
tt64x128b8   -DTR=64 -DTC=128 -DBR=8
tt128x64b16  -DTR=128 -DTC=64 -DBR=16
tt32x128b8   -DTR=32 -DTC=128 -DBR=8
tt128x32b32  -DTR=128 -DTC=32 -DBR=32
LIST

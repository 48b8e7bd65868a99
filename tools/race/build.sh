#!/bin/sh
# build the exploration's candidates into cubins/ (sm_90); name: geometry + switches
set -e
mkdir -p cubins
rm -f cubins/*.cubin
while read name defs; do
  [ -z "$name" ] && continue
  src=explore.cu
  case "$name" in trace_*) src=../../kernels/matmul/streamk.cu; defs="$defs -Dmatmul_streamk=matmul_explore";; esac
  case "$name" in cat_*) base=${name#cat_}; dir=../../kernels/matmul; case "$base" in *__k?) dir=${base##*__}; esac; base=${base%%__*}; src=$dir/$base.cu; defs="$defs -Dmatmul_$base=matmul_explore";; esac
  "${NVCC:-nvcc}" -arch=sm_90 -cubin -O3 -I../../kernels/matmul -I. $defs -o cubins/$name.cubin $src -Xptxas -v < /dev/null 2>&1 \
    | grep -E "registers|spill" | tr '\n' ' ' | sed "s/^/$name: /"; echo
done <<'LIST'
cat_interior      -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4
cat_streamk__t8x8 -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=2 -DTM=8 -DTN=8
cat_streamk__t8x8i0 -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=2 -DTM=8 -DTN=8 -DSK_IDLE_PCT=0
trace_streamk_i0  -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=2 -DTM=8 -DTN=8 -DSK_IDLE_PCT=0 -DSK_TRACE=1
trace_streamk     -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=2 -DTM=8 -DTN=8 -DSK_TRACE=1
LIST

#!/bin/sh
# build the exploration's candidates into cubins/ (sm_90); name: geometry + switches
set -e
mkdir -p cubins
rm -f cubins/*.cubin
while read name defs; do
  [ -z "$name" ] && continue
  src=explore.cu
  case "$name" in cat_*) base=${name#cat_}; dir=../../kernels/matmul; case "$base" in *__k?) dir=${base##*__}; esac; base=${base%%__*}; src=$dir/$base.cu; defs="$defs -Dmatmul_$base=matmul_explore";; esac
  "${NVCC:-nvcc}" -arch=sm_90 -cubin -O3 -I../../kernels/matmul -I. $defs -o cubins/$name.cubin $src -Xptxas -v < /dev/null 2>&1 \
    | grep -E "registers|spill" | tr '\n' ' ' | sed "s/^/$name: /"; echo
done <<'LIST'
g6_sx     -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4 -DFAST=1 -DSWZ=1
r0        -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4 -DFAST=1 -DALAYOUT=1
r2        -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4 -DFAST=1 -DALAYOUT=1 -DASYNC=2
r3        -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4 -DFAST=1 -DALAYOUT=1 -DASYNC=3
r3_o2     -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4 -DFAST=1 -DALAYOUT=1 -DASYNC=3 -DORDER=2
r0_o2     -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4 -DFAST=1 -DALAYOUT=1 -DORDER=2
r3_t8x8   -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=2 -DTM=8 -DTN=8 -DFAST=1 -DALAYOUT=1 -DASYNC=3
r3_b128x256 -DBM=128 -DBN=256 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4 -DFAST=1 -DALAYOUT=1 -DASYNC=3
cat_interior      -DBM=256 -DBN=128 -DBK=8 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4
LIST

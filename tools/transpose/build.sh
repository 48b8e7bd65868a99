#!/bin/sh
# Build the transpose exploration's candidates into cubins/ (sm_90): NAME DEFINES per line. Run from this folder.
set -e
mkdir -p cubins
rm -f cubins/*.cubin
while read name defs; do
  [ -z "$name" ] && continue
  case "$name" in
    cat_vec4) src=../../kernels/transpose/vec4.cu ;;
    *) src=explore.cu ;;
  esac
  log=$("${NVCC:-nvcc}" -arch=sm_90 -cubin -O3 $defs -o "cubins/$name.cubin" "$src" -Xptxas -v < /dev/null 2>&1) \
    || { echo "$name: nvcc failed"; echo "$log"; exit 1; }
  echo "$name: $(echo "$log" | grep -E "registers" | tr '\n' ' ')"
done <<'LIST'
cat_vec4
t1
t1_cs  -DSTREAM=1
t2     -DTILES=2
t2_cs  -DTILES=2 -DSTREAM=1
t4     -DTILES=4
t4_cs  -DTILES=4 -DSTREAM=1
c4     -DPER_THREAD=4
c4_cs  -DPER_THREAD=4 -DSTREAM=1
c8     -DPER_THREAD=8
LIST

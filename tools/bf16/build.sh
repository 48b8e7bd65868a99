#!/bin/sh
# Build the BF16 ladder's candidates (issue 30) into cubins/: one line per candidate, its name, its kernel file
# and the defines that make it; sm_90a (wgmma, setmaxnreg need the "a" target; rungs 1-2 are sm_80 code built the
# same way for this exploration). Prints ptxas's registers / spills per candidate and keeps the full ptxas report
# and the list (cubins/manifest.txt, read by run.py) beside the cubins. Run from anywhere: sh tools/bf16/build.sh
set -e
cd "$(dirname "$0")"
mkdir -p cubins/base
rm -f cubins/*.cubin cubins/manifest.txt cubins/ptxas.txt
# The exploration ran on the BF16 kernels as they stood at commit dd79733, before the rungs were rebuilt on
# pipeline.cuh and geometry.cuh (and before a missing define became an error): those files are taken from git
# into cubins/base/, and the candidates and patches below build on them.
for f in hopper.cuh wgmma_ops.cuh wmma.cu mma_sync.cu wgmma_tma.cu warpspec.cu persistent.cu cluster.cu pingpong.cu; do
  git show dd79733:kernels/matmul_bf16/$f > cubins/base/$f
done
# Explorations kept as patches on rung 5, each applied into cubins/NAME.cu (built with the kernels' folder on the
# include path): stagger (call 11: the consumers taking turns at the epilogue), epilogue (calls 12-13 and 15: SKEW,
# WARPSTORE and the diagnostics NOSTORE, NOLOAD, LOADSAME), release (call 14: RELEASE=0, each stage freed once read)
for p in stagger epilogue release; do
  patch -s -o cubins/$p.cu cubins/base/persistent.cu $p.patch
done
NVCC=${NVCC:-nvcc}
FLAGS="-gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17"
status=0
while read name src defs; do
  case "$name" in ''|'#'*) continue;; esac
  if ! "$NVCC" $FLAGS $defs -o cubins/$name.cubin $src -Xptxas -v > cubins/$name.log 2>&1; then
    echo "$name: BUILD FAILED"; cat cubins/$name.log; status=1; continue
  fi
  echo "$name $src $defs" >> cubins/manifest.txt
  { echo "== $name ($src $defs)"; cat cubins/$name.log; } >> cubins/ptxas.txt
  regs=$(grep -o "Used [0-9]* registers" cubins/$name.log | head -1)
  spill=$(grep -o "[0-9]* bytes spill stores, [0-9]* bytes spill loads" cubins/$name.log | head -1)
  stack=$(grep -o "[0-9]* bytes stack frame" cubins/$name.log | head -1)
  warn=$(grep -ci "warning" cubins/$name.log || true)
  echo "$name: $regs; $stack; $spill; warnings: $warn"
  rm -f cubins/$name.log
done <<'LIST'
# name                   file           defines
wmma_128x128             cubins/base/wmma.cu        -DBM=128 -DBN=128 -DBK=32 -DWM=64 -DWN=32
mma_128x128_s4           cubins/base/mma_sync.cu    -DBM=128 -DBN=128 -DWM=64 -DWN=32 -DSTAGES=4
mma_128x256_s3           cubins/base/mma_sync.cu    -DBM=128 -DBN=256 -DWM=64 -DWN=64 -DSTAGES=3
wgtma_128x256_s3         cubins/base/wgmma_tma.cu   -DBM=128 -DBN=256 -DSTAGES=3
wgtma_128x256_s4         cubins/base/wgmma_tma.cu   -DBM=128 -DBN=256 -DSTAGES=4
ws_128x256_s4            cubins/base/warpspec.cu    -DNCONS=2 -DBN=256 -DSTAGES=4
pers_128x256_s4_g8       cubins/base/persistent.cu  -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=8 -DSTORE=0
pers_128x256_s4_rows     cubins/base/persistent.cu  -DNCONS=2 -DBN=256 -DSTAGES=4 -DORDER=1 -DSTORE=0
pers_128x256_s4_g8_tma   cubins/base/persistent.cu  -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=8 -DSTORE=1
pers_128x256_s4_g16_tma  cubins/base/persistent.cu  -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1
cl_128x256_s4_g8         cubins/base/cluster.cu     -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=8 -DSTORE=0 -DMC=0
cl_128x256_s4_g8_tma     cubins/base/cluster.cu     -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=8 -DSTORE=1 -DMC=0
cl_128x256_s4_g16_tma    cubins/base/cluster.cu     -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DMC=0
cl_128x256_s4_g8_mca_tma cubins/base/cluster.cu     -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=8 -DSTORE=1 -DMC=1
pp_128x128_s6_g16_tma    cubins/base/pingpong.cu    -DBN=128 -DSTAGES=6 -DGM=16 -DSTORE=1 -DCL=1
pp_128x128_s6_g8_tma     cubins/base/pingpong.cu    -DBN=128 -DSTAGES=6 -DGM=8 -DSTORE=1 -DCL=1
pp_128x128_s6_g16        cubins/base/pingpong.cu    -DBN=128 -DSTAGES=6 -DGM=16 -DSTORE=0 -DCL=1
ppcl_128x128_s6_g16_tma  cubins/base/pingpong.cu    -DBN=128 -DSTAGES=6 -DGM=16 -DSTORE=1 -DCL=2
sk_128x256_s4_g16_tma    streamk.cu     -Icubins/base -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1
pp_128x128_s6_g4_tma     cubins/base/pingpong.cu    -DBN=128 -DSTAGES=6 -DGM=4 -DSTORE=1 -DCL=1
pp_128x128_s6_g2_tma     cubins/base/pingpong.cu    -DBN=128 -DSTAGES=6 -DGM=2 -DSTORE=1 -DCL=1
ppcl_128x128_s6_g8_tma   cubins/base/pingpong.cu    -DBN=128 -DSTAGES=6 -DGM=8 -DSTORE=1 -DCL=2
stag_128x256_s4_g16_tma  cubins/stagger.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DSTAGGER=1
stag_128x256_s4_g8_tma   cubins/stagger.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=8 -DSTORE=1 -DSTAGGER=1
stag_128x256_s4_g16      cubins/stagger.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=0 -DSTAGGER=1
ep_skew2k_g16_tma        cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DSKEW=2048
ep_skew4k_g16_tma        cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DSKEW=4096
ep_skew8k_g16_tma        cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DSKEW=8192
ep_warp_g16_tma          cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DWARPSTORE=1
ep_warp_skew4k_g16_tma   cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DWARPSTORE=1 -DSKEW=4096
diag_nostore_g16_tma     cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DNOSTORE=1
diag_noload_g16_tma      cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DNOLOAD=1
diag_mathonly_g16_tma    cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DNOLOAD=1 -DNOSTORE=1
diag_same_g16_tma        cubins/epilogue.cu  -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DLOADSAME=1
diag_nostore_same_g16_tma cubins/epilogue.cu -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DLOADSAME=1 -DNOSTORE=1
rel0_128x256_s4_g16_tma   cubins/release.cu   -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=16 -DSTORE=1 -DRELEASE=0
rel0_128x256_s4_g8_tma    cubins/release.cu   -Icubins/base -DNCONS=2 -DBN=256 -DSTAGES=4 -DGM=8 -DSTORE=1 -DRELEASE=0
LIST
exit $status

#!/bin/sh
# One device call of the BF16 exploration (issue 30): the cubins built here (sh build.sh) travel in cubins/.
# On the GPU: clocks, SASS of every candidate (HGMMA / HMMA / local memory), then run.py (verify, then time);
# everything lands in $OUT/bf16/ and is packed into $OUT/bf16.tar.gz (the log stays beside it).
# Usage (repository root): sh tools/bf16/device.sh [seconds for run.py, default 360]
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
R=$OUT/bf16
mkdir -p $R/sass
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
cat $R/gpu.txt
cp cubins/manifest.txt cubins/ptxas.txt $R/ 2>/dev/null
echo "candidate HGMMA HMMA LDL STL LDSM UTMALDG UTMASTG SYNCS" > $R/sass.txt
for f in cubins/*.cubin; do
  n=$(basename $f .cubin)
  cuobjdump -sass $f > $R/sass/$n.sass 2>&1
  c() { grep -c "$1" $R/sass/$n.sass; }
  echo "$n $(c HGMMA) $(c HMMA) $(c 'LDL') $(c 'STL') $(c LDSM) $(c UTMALDG) $(c UTMASTG) $(c SYNCS)" >> $R/sass.txt
done
column -t $R/sass.txt 2>/dev/null || cat $R/sass.txt
OUT=$R timeout ${1:-360} python3 run.py 2>&1 | tee $R/log.txt
echo "run.py exit: $?"
# optional: compute-sanitizer memcheck and racecheck of the candidates named in $SANITIZE, at the small shapes
# (an entry NAME:TOOL runs that tool only)
for e in $SANITIZE; do
  n=${e%%:*}; tools=${SAN_TOOLS:-memcheck racecheck}
  [ "$e" != "$n" ] && tools=${e#*:}
  for tool in $tools; do
    SMALL=1 HANG_S=60 timeout ${SAN_S:-75} compute-sanitizer --tool $tool --print-limit 20 python3 run.py --verify $n > $R/$tool-$n.txt 2>&1
    echo "$tool $n: exit $? $(grep -c '"ok": true' $R/$tool-$n.txt) checks ok; $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' $R/$tool-$n.txt)"
  done
done
# optional: one Nsight Compute pass over every candidate at 4096 (the counters the kernel headers name)
if [ -n "$NCU" ]; then
  M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  M=$M,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum
  M=$M,lts__t_sector_hit_rate.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,sm__inst_executed.sum
  M=$M,lts__t_sectors_srcunit_tex_op_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
  M=$M,sm__cycles_active.max,sm__cycles_active.avg,lts__t_sectors.avg.pct_of_peak_sustained_elapsed
  # NCU_NAMES: the candidates to profile (default: every one in the manifest), cuBLAS always; only those that
  # passed every check of this call's run.py are launched, and the diagnostics named in $DIAG (wrong by design)
  if [ -n "$NCU_NAMES" ] && [ -f $R/checks.csv ]; then
    NCU_NAMES=$(python3 -c "import csv,sys; r=list(csv.DictReader(open('$R/checks.csv'))); print(' '.join(n for n in sys.argv[1:] if any(x['candidate']==n for x in r) and (n in '$DIAG'.split(',') or all(x['ok']=='True' for x in r if x['candidate']==n))))" $NCU_NAMES)
    NCU_NAMES=${NCU_NAMES:-pers_128x256_s4_g16_tma}; echo "ncu: $NCU_NAMES"
  fi
  timeout ${NCU_S:-120} ncu --clock-control none --csv --page raw --metrics $M python3 ncu_one.py $NCU_NAMES > $R/ncu.csv 2> $R/ncu.err
  echo "ncu exit $?: $(grep -c bf16_gemm $R/ncu.csv) bf16 rows"; tail -3 $R/ncu.err
fi
cd $OUT && tar czf bf16.tar.gz bf16 && cp bf16/log.txt log.txt && ls -la $OUT

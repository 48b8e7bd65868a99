#!/usr/bin/env bash
# The reference run, as made on the lent GPU machine (see README "The archived run").
# Expects .whl/ (from ../shared/device/make-wheels.sh) in the tree and $OUT.
#   tools/device_run.sh tests      GPU tests (every catalog family, many shapes)
#   tools/device_run.sh pipeline   the whole pipeline twice (the second must run no
#                                  job), an edit of one kernel planning only its
#                                  jobs, then `python -m gpumm archive`; a tar of
#                                  results/ and data/reference/ into $OUT
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter PYTHONUNBUFFERED=1
mkdir -p "$OUT/log"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  which ncu nvcc python3 cuobjdump; python3 -c 'import cupy; print("cupy", cupy.__version__)'
} 2>&1 | tee "$OUT/log/env.txt"
case "${1:-pipeline}" in
tests)
  python3 -m pytest -m gpu -q tests/test_gpu.py 2>&1 | tee "$OUT/log/pytest-gpu.txt" | tail -15
  ;;
pipeline)
  shift || true
  t0=$(date +%s)
  # a run longer than one call of the lent machine stops here and goes on at the next call
  timeout 500 python3 -m snakemake --cores 1 --rerun-incomplete "$@" 2>&1 | tee -a "$OUT/log/snakemake-1.txt" \
    | grep -E "gpumm:|of .* steps|rror|FAILED"
  t1=$(date +%s)
  echo "snakemake $((t1 - t0)) s" | tee -a "$OUT/log/times.txt"
  python3 -m snakemake --cores 1 -n "$@" 2>&1 | grep -q "Nothing to be done" || { echo "NOT FINISHED: call again"; exit 3; }
  python3 -m snakemake --cores 1 "$@" 2>&1 | tee "$OUT/log/snakemake-2.txt" | tail -1
  # An edit to one kernel must plan only that variant's jobs and what depends on
  # them (a bare touch plans nothing: Snakemake compares small inputs' checksums).
  cp kernels/matmul/naive.cu /tmp/naive.cu.bak
  echo "// edit check" >> kernels/matmul/naive.cu
  python3 -m snakemake --cores 1 -n "$@" 2>&1 | tee "$OUT/log/snakemake-edit-dryrun.txt" | grep -A14 "^Job stats" | head -14
  cp /tmp/naive.cu.bak kernels/matmul/naive.cu
  python3 -m gpumm archive
  python3 - <<'PY'
import pandas as pd
s = pd.read_csv("results/tables/summary.csv")
sq = s[(s.M == s.N) & (s.N == s.K) & (s.timed == "kernel") & (s.memory_mode == "device")]
print(sq.pivot_table(index="variant", columns="M", values="gflops").round(0).to_string())
print(s[s.status != "ok"][["variant", "M", "N", "K", "status", "reason"]].to_string())
print(pd.read_csv("results/tables/ladder.csv").to_string())
PY
  tar czf "$OUT/results.tgz" results/report results/tables results/logs results/raw data/reference
  ;;
esac

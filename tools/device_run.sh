#!/usr/bin/env bash
# The reference run, as made on the lent GPU machine (docs/archives.md, "Making an archive").
# Expects .whl/ (from ../shared/device/make-wheels.sh) in the tree and $OUT. The lent machine's copy of the
# repository may be older than the tree it carries: pass the tree's commit as GPUMM_GIT_COMMIT=<sha> (the
# provenance records it) when calling this script.
#   tools/device_run.sh tests [BUDGET_S]     GPU tests (every catalog family, many shapes)
#   tools/device_run.sh pipeline [BUDGET_S]  the whole pipeline (--cores 1; resumable: a run cut
#                                            at BUDGET_S goes on at the next call), then again (must
#                                            do nothing), an edit of one kernel (must plan only its
#                                            jobs), `python -m gpumm archive`; a tar of results/ and
#                                            data/reference/ into $OUT
#   tools/device_run.sh parallel             tools/parallel-check.yaml with --cores 1 and with
#                                            --cores 8 in two copies of the tree; compare_runs.py
#   tools/device_run.sh race [BUDGET_S]     the race to cuBLAS: GPU tests of the new rungs (every shape,
#                                            SASS free of tensor-core instructions), the pipeline with
#                                            tools/race.yaml (tables only), the ladder table, then
#                                            compute-sanitizer memcheck and racecheck on the new rungs
#   tools/device_run.sh study [BUDGET_S] [NAME]  the whole default study as a user runs it: from a tree with
#                                            nothing built, `snakemake --cores all`, timed; then
#                                            `python -m gpumm archive --name NAME` (with its run.json), the
#                                            stopping rule against the fixed count (tools/sampling_check.py,
#                                            with SAMPLING_CHECK=1), the GPU tests and compute-sanitizer runs of
#                                            the rungs RACE_CHECK names (a pytest -k expression), the model
#                                            step's GPU tests MODEL_TESTS names (another; compute-sanitizer
#                                            on those MODEL_SANITIZE names), the paired
#                                            step again with the order reversed and its GPU tests
#                                            (PAIRED_REPEAT=1, tools/power/passes.py), and tars of the raw
#                                            results,
#                                            archive, the report and the logs into $OUT (the checks get
#                                            what is left of the call's time, DEADLINE_S; GPU_TESTS=1 adds
#                                            every GPU test)
#   tools/device_run.sh gpus [BUDGET_S] [ARCHIVE]  several GPUs (issue 21): the default study with every GPU
#                                            (config gpus: auto), timed, each job's device from the worker
#                                            logs, then every kernel median against the one-GPU archive
#                                            ARCHIVE (default h200) with tools/compare_runs.py
#   tools/device_run.sh gpus-same BUDGET_S    the same on one machine: the default study with one GPU
#                                            (--config gpus=1), then with every GPU, each from nothing and
#                                            within BUDGET_S (so the call needs twice that and the set-up: 275
#                                            fitted two H200s, whose one-GPU study took 274.3 s); both summaries,
#                                            run records and the device of each variant into $OUT/gpus-same.tgz,
#                                            then compare_runs.py of the two; stops after a study that fails
#   tools/device_run.sh transposes           the transpose exploration (tools/transpose: build.sh, run.py):
#                                            candidates verified bit for bit, then timed at 8192 and 16384
#                                            against cudaMemcpy device to device; results in $OUT/transpose
#   tools/device_run.sh explore [BUDGET_S]   the race exploration (tools/race: run.py on the cubins build.sh
#                                            made here, carried as tools/race/cubins): every candidate verified
#                                            then timed against cuBLAS (and trace.py on the trace_ builds: where
#                                            a stream-K launch spends its time); results in $OUT/race; then the GPU tests
#                                            and sanitizers of the catalog variants CHECK names (a pytest -k
#                                            expression), if set
#   tools/device_run.sh sanitize             compute-sanitizer memcheck and racecheck on the transposes
#                                            (odd shapes) and the memory-hierarchy kernels
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
# ... then their bytecode, as pip and conda write it when they install (the install line skips it to save time):
# without it the study's first imports of each package compile it, eight page kernels at once
python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter PYTHONUNBUFFERED=1
# The lent machine returns at most 8 files from $OUT: every log goes to $LOG, packed into $OUT/log.tgz by
# save_logs (after the long steps, and at the end); a call must end before the tool's 600 s limit, so each
# check after the study gets at most what is left before DEADLINE_S (default 560 s from the start).
LOG=/tmp/device-run/log
mkdir -p "$LOG"
started=$(date +%s)
save_logs() { tar czf "$OUT/log.tgz" -C /tmp/device-run log; }
trap save_logs EXIT
# seconds left before the deadline, at most $1 (at least 1)
left() {
  local rest=$(( ${DEADLINE_S:-560} - ($(date +%s) - started) ))
  [ "$rest" -gt "$1" ] && rest=$1
  [ "$rest" -lt 1 ] && rest=1
  echo "$rest"
}
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  which ncu nvcc python3 cuobjdump cc; python3 -c 'import cupy; print("cupy", cupy.__version__)'
} 2>&1 | tee -a "$LOG/env.txt"
# the rungs SELECTION names (a pytest -k expression): their GPU tests at every test shape against float64 and
# their SASS, within TIMEOUT_S seconds
rung_tests() {  # SELECTION TIMEOUT_S
  timeout "$2" python3 -m pytest -m gpu -q tests/run/test_gpu.py -k "($1) and (float64 or tensor_core)" 2>&1 \
    | tee "$LOG/pytest-race.txt" | tail -6
}
# compute-sanitizer memcheck and racecheck on those rungs at two odd shapes (the tests SANITIZE_AT selects, a
# pytest -k expression), each tool within the seconds the command after SELECTION prints (`echo 70`: fixed;
# `left 90`: what is left of the call, at most 90)
SANITIZE_AT="float64 and (333x517x129 or 17x1x33 or 333x517x136 or 7x9x8)"
rung_sanitizers() {  # SELECTION SECONDS-COMMAND...
  local sel=$1 tool
  shift
  for tool in memcheck racecheck; do
    timeout "$("$@")" compute-sanitizer --tool $tool --error-exitcode 7 python3 -m pytest -m gpu -q \
      tests/run/test_gpu.py -k "($sel) and ($SANITIZE_AT)" 2>&1 \
      | tee "$LOG/sanitize-race-$tool.txt" | tail -3
  done
}
# the whole default study from a tree with nothing built, timed from the command line to its exit; sets rc
whole_study() {
  rm -rf results .snakemake
  # nothing built includes CuPy's kernel cache: the run pays every compile a user's first run pays
  CUPY_CACHE_DIR=$(mktemp -d)
  export CUPY_CACHE_DIR
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # STUDY_ARGS: more words for snakemake (gpus-same: --config gpus=1)
  timeout "$budget" python3 -m snakemake --cores all ${STUDY_ARGS:-} 2>&1 | tee "$LOG/$1.txt" \
    | grep -E "gpumm:|of .* steps|rror|FAILED" | tail -25
  rc=${PIPESTATUS[0]}
  t1=$(date +%s.%N)
  echo "$1: snakemake --cores all exit $rc, $(python3 -c "print(round($t1 - $t0, 1))") s (command line to exit)" \
    | tee -a "$LOG/times.txt"
  cp results/run.json results/logs/gpu-worker.log "$LOG/" 2>/dev/null
}
phase=${1:-pipeline}
budget=${2:-500}
case "$phase" in
tests)
  timeout "$budget" python3 -m pytest -m gpu -q -x tests/run/test_gpu.py 2>&1 | tee "$LOG/pytest-gpu.txt" | tail -15
  ;;
pipeline)
  t0=$(date +%s)
  # a run longer than one call of the lent machine stops here and goes on at the next call
  timeout "$budget" python3 -m snakemake --cores 1 --rerun-incomplete --keep-going 2>&1 \
    | tee -a "$LOG/snakemake-1.txt" | grep -E "gpumm:|of .* steps|rror|FAILED"
  t1=$(date +%s)
  echo "snakemake $((t1 - t0)) s" | tee -a "$LOG/times.txt"
  tar czf "$OUT/results.tgz" results/raw results/build results/logs results/tables 2>/dev/null
  python3 -m snakemake --cores 1 -n 2>&1 | grep -q "Nothing to be done" || { echo "NOT FINISHED: call again"; exit 3; }
  python3 -m snakemake --cores 1 2>&1 | tee "$LOG/snakemake-2.txt" | tail -1
  # An edit to one kernel must plan only that variant's jobs and what depends on them.
  cp kernels/matmul/naive.cu /tmp/naive.cu.bak
  echo "// edit check" >> kernels/matmul/naive.cu
  python3 -m snakemake --cores 1 -n 2>&1 | tee "$LOG/snakemake-edit-dryrun.txt" | grep -A14 "^Job stats" | head -14
  cp /tmp/naive.cu.bak kernels/matmul/naive.cu
  python3 -m gpumm archive
  python3 - <<'PY'
import pandas as pd
s = pd.read_csv("results/tables/summary.csv")
sq = s[(s.M == s.N) & (s.N == s.K) & (s.timed == "kernel") & (s.memory_mode == "device")]
print(sq.pivot_table(index="variant", columns="M", values="gflops").round(0).to_string())
print(s[s.status != "ok"][["variant", "M", "N", "K", "memory_mode", "status", "reason"]].to_string())
print(pd.read_csv("results/tables/overhead.csv").to_string())
PY
  tar czf "$OUT/results.tgz" results/raw results/build results/logs results/tables results/report data/reference
  ;;
race)
  rungs="blocktile_1d or blocktile_2d or vectorized or warptile or double_buffer or swizzled or interior"
  [ -n "${RACE_ONLY_PIPELINE:-}" ] || rung_tests "$rungs" 120
  t0=$(date +%s)
  timeout "$budget" python3 -m snakemake results/tables/summary.csv --cores 1 --configfile tools/race.yaml 2>&1 \
    | tee "$LOG/snakemake-race.txt" | grep -E "gpumm:|of .* steps|rror"
  echo "race pipeline $(( $(date +%s) - t0 )) s" | tee -a "$LOG/times.txt"
  python3 - <<'PY' 2>&1 | tee "$LOG/ladder.txt"
import pandas as pd
s = pd.read_csv("results/tables/summary.csv")
k = s[(s.timed == "kernel") & (s.memory_mode == "device")].copy()
k["shape"] = k.M.astype(str) + "x" + k.N.astype(str) + "x" + k.K.astype(str)
order = ["naive", "unrolled", "blocktile_1d", "blocktile_2d", "vectorized", "warptile", "double_buffer", "cublas"]
g = k.pivot_table(index="variant", columns="shape", values="gflops").reindex(order)
print("GFLOP/s (median)\n", g.round(0).to_string())
print("share of cuBLAS (%)\n", (100 * g / g.loc["cublas"]).round(1).to_string())
print("relative IQR (%)\n", k.pivot_table(index="variant", columns="shape", values="iqr_pct").reindex(order).round(2).to_string())
print("SM clock min (MHz)\n", k.pivot_table(index="variant", columns="shape", values="sm_clock_min_mhz").reindex(order).to_string())
print(s[s.status != "ok"][["variant", "M", "N", "K", "status", "reason"]].to_string())
PY
  tar czf "$OUT/race.tgz" --exclude='*.ncu-rep' results/raw results/build results/logs results/tables
  [ -n "${RACE_ONLY_PIPELINE:-}" ] || rung_sanitizers "$rungs" echo 70
  ;;
study)
  name=${3:-}
  if [ -n "${COLD_CHECK:-}" ]; then  # the cold managed reset, checked first: a study on a wrong one is not run
    python3 tools/cold_check.py 2>&1 | tee "$LOG/cold-check.txt" | tail -12
    [ "${PIPESTATUS[0]}" = 0 ] || { echo "cold check failed: no study"; exit 3; }
  fi
  whole_study study
  cp results/run/steps.jsonl "$LOG/" 2>/dev/null
  python3 - <<'PY' 2>&1 | tee -a "$LOG/times.txt"
import json
r = json.load(open("results/run.json"))
print({k: r[k] for k in ("wall_s", "gpu_busy_s", "gpu_busy_share", "steps", "failed_steps")})
print("by step:", r["seconds_by_step"])
top = sorted(r["jobs"], key=lambda j: -j["seconds"])[:15]
print("longest:", [(j["step"], j["target"], j["seconds"]) for j in top])
PY
  if [ "$rc" = 0 ] && [ -n "$name" ]; then
    python3 -m gpumm archive --name "$name"
    tar czf "$OUT/archive.tgz" "data/reference/$name"
  fi
  if [ "$rc" = 0 ] && [ -n "${PAIRED_REPEAT:-}" ]; then  # issue 36's repeat: the paired step again, reversed
    timeout "$(left 120)" python3 tools/power/passes.py run 2>&1 | tee "$LOG/paired-reverse.txt" | tail -8
    python3 tools/power/passes.py compare > "$LOG/passes.csv" 2> >(tee "$LOG/passes.txt")
    timeout "$(left 60)" python3 -m pytest -m gpu -q tests/run/test_gpu_paired.py 2>&1 | tee "$LOG/pytest-paired.txt" \
      | tail -3
  fi
  # what the study made comes back before the checks, whatever they take
  tar czf "$OUT/raw.tgz" results/raw --exclude='*/profile-session' 2>/dev/null
  tar czf "$OUT/report.tgz" results/report
  tar czf "$OUT/logs.tgz" results/logs results/run results/tables results/run.json results/raw/*/meta.json \
    results/raw/profile-session/*/ncu.log 2>/dev/null
  save_logs
  [ -n "${SAMPLING_CHECK:-}" ] && timeout "$(left 120)" python3 tools/sampling_check.py "$OUT/sampling-check.csv" \
    2>&1 | tail -25
  if [ -n "${RACE_CHECK:-}" ]; then  # the new rungs: every test shape against float64, SASS, then the sanitizers
    rung_tests "$RACE_CHECK" "$(left 150)"
    rung_sanitizers "$RACE_CHECK" left 90
  fi
  if [ -n "${MODEL_TESTS:-}" ]; then  # the model step's GPU tests MODEL_TESTS names (a pytest -k expression)
    timeout "$(left 120)" python3 -m pytest -m gpu -q tests/run/test_gpu_model.py -k "$MODEL_TESTS" 2>&1 \
      | tee "$LOG/pytest-model.txt" | tail -3
  fi
  if [ -n "${MODEL_SANITIZE:-}" ]; then  # and compute-sanitizer on the model step's GPU tests MODEL_SANITIZE names
    for tool in memcheck racecheck; do
      timeout "$(left 60)" compute-sanitizer --tool $tool --error-exitcode 7 python3 -m pytest -m gpu -q \
        tests/run/test_gpu_model.py -k "$MODEL_SANITIZE" 2>&1 | tee "$LOG/sanitize-model-$tool.txt" | tail -3
    done
  fi
  if [ -n "${GPU_TESTS:-}" ]; then  # every GPU test, in what is left of the call
    timeout "$(left 400)" python3 -m pytest -m gpu -q tests/run/test_gpu.py 2>&1 | tee "$LOG/pytest-gpu.txt" | tail -6
  fi
  ;;
gpus)
  ref=${3:-h200}
  nvidia-smi -L | tee -a "$LOG/env.txt"
  whole_study study-gpus
  python3 - "$ref" <<'PY' 2>&1 | tee "$LOG/gpus-compare.txt" | tail -30
import json, subprocess, sys
from pathlib import Path
import pandas as pd
from gpumm.analyse import tables
r = json.load(open("results/run.json"))
print({k: r[k] for k in ("wall_s", "gpu_busy_s", "steps", "failed_steps")})
devices = {}
for meta in Path("results/raw").glob("*/meta.json"):
    d = json.loads(meta.read_text()).get("device") or {}
    if d.get("uuid"):
        devices.setdefault(d["uuid"], []).append(meta.parent.name)
print("variants per device:", {k: len(v) for k, v in devices.items()})
ref = Path("data/reference") / sys.argv[1]
samples = pd.concat([pd.read_csv(f) for f in sorted(ref.glob("raw/*/samples.csv"))], ignore_index=True)
tables.summarise(samples).to_csv("/tmp/one-gpu-summary.csv", index=False)
print("one-GPU archive:", ref, json.load(open(ref / "run.json")).get("wall_s"), "s wall")
out = subprocess.run([sys.executable, "tools/compare_runs.py", "/tmp/one-gpu-summary.csv",
                      "results/tables/summary.csv"], capture_output=True, text=True)
print(out.stdout[-3000:])
PY
  tar czf "$OUT/gpus.tgz" results/tables results/run.json results/raw/*/meta.json results/logs 2>/dev/null
  ;;
gpus-same)
  nvidia-smi -L | tee -a "$LOG/env.txt"
  keep=/tmp/gpus-same
  mkdir -p "$keep"
  for run in 1gpu 2gpus; do
    if [ "$run" = 1gpu ]; then STUDY_ARGS="--config gpus=1" whole_study "study-$run"; else whole_study "study-$run"; fi
    if [ "$rc" != 0 ]; then echo "gpus-same: the $run study did not finish (exit $rc): nothing compared"; break; fi
    cp results/tables/summary.csv "$keep/summary-$run.csv"
    cp results/run.json "$keep/run-$run.json"
    python3 - "$keep/devices-$run.csv" <<'PY'
import csv, json, sys
from pathlib import Path
rows = [(m.parent.name, (json.loads(m.read_text()).get("device") or {}).get("uuid", ""))
        for m in sorted(Path("results/raw").glob("*/meta.json"))]
with open(sys.argv[1], "w", newline="") as f:
    csv.writer(f).writerows([("variant", "device_uuid"), *rows])
PY
  done
  [ -f "$keep/summary-2gpus.csv" ] && python3 tools/compare_runs.py "$keep/summary-1gpu.csv" "$keep/summary-2gpus.csv" > "$keep/compare-1gpu-vs-2gpus.txt"
  tail -1 "$keep/compare-1gpu-vs-2gpus.txt" 2>/dev/null
  cp "$LOG/env.txt" "$keep/"
  tar czf "$OUT/gpus-same.tgz" -C /tmp gpus-same
  ;;
transposes)
  mkdir -p "$OUT/transpose"
  (cd tools/transpose && ./build.sh && OUT="$OUT/transpose" timeout "$budget" python3 run.py) 2>&1 \
    | tee "$LOG/transpose-explore.txt" | tail -40
  ;;
explore)
  mkdir -p "$OUT/race"
  (cd tools/race && OUT="$OUT/race" timeout "$budget" python3 run.py) 2>&1 | tee "$LOG/race-explore.txt" | tail -30
  if ls tools/race/cubins/trace_*.cubin >/dev/null 2>&1; then  # stream-K's phases, stamped
    (cd tools/race && OUT="$OUT/race" timeout 120 python3 trace.py) 2>&1 | tee "$LOG/race-trace.txt" | tail -40
  fi
  if [ -n "${CHECK:-}" ]; then
    timeout "$(left 200)" python3 -m pytest -m gpu -q tests/run/test_gpu.py -k "$CHECK" 2>&1 \
      | tee "$LOG/pytest-check.txt" | tail -4
    # the rungs' odd shapes, and the transposes' (the scalar path and a partial tile)
    SANITIZE_AT="$SANITIZE_AT or (transposes and (1x4097 or 1000x1000))" rung_sanitizers "$CHECK" left 90
  fi
  ;;
sanitize)
  sel="transposes_and_copy_are_exact and (1023x1025 or 1x4097 or 4097x1)"
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 7 python3 -m pytest -m gpu -q -x tests/run/test_gpu.py -k "$sel" \
      2>&1 | tee "$LOG/sanitize-$tool.txt" | tail -4
  done
  compute-sanitizer --tool memcheck --error-exitcode 7 python3 -m pytest -m gpu -q -x tests/run/test_gpu.py \
    -k memory_hierarchy 2>&1 | tee "$LOG/sanitize-hierarchy.txt" | tail -4
  ;;
parallel)
  for c in 1 8; do
    d=/tmp/par$c
    rm -rf "$d" && mkdir -p "$d"
    tar --exclude=./results --exclude=./.whl --exclude=./.snakemake --exclude=./.venv -cf - . | tar xf - -C "$d"
    cp tools/parallel-check.yaml "$d/config.yaml"
    t0=$(date +%s)
    (cd "$d" && python3 -m snakemake --cores $c results/tables/summary.csv > "$LOG/parallel-cores$c.txt" 2>&1)
    rc=$?
    echo "cores $c: $(( $(date +%s) - t0 )) s, exit $rc" | tee -a "$LOG/times.txt"
    mkdir -p "$OUT/parallel$c" && cp "$d/results/tables/summary.csv" "$OUT/parallel$c/"
  done
  python3 tools/compare_runs.py "$OUT/parallel1/summary.csv" "$OUT/parallel8/summary.csv" | tee "$LOG/parallel-compare.txt" | tail -40
  ;;
esac

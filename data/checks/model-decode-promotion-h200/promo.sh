set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
O=$OUT/promo; mkdir -p $O results; cp -r results/carry/build results/build
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $O/gpu.txt
for round in 1 2; do for p in 3 2 1 0; do
  echo "== promotion $p round $round"
  GPUMM_TMA_L2_PROMOTION=$p timeout 150 python3 tools/model/run.py results/carry/stream.cubin $O/p$p-r$round --tokens 1,16 --candidates results/carry/cand6.yaml > $O/p$p-r$round.log 2>&1; grep -E "FAILED|M= 16.*cold" $O/p$p-r$round.log | grep -E "gate_up|down|FAILED"
done; done
cd $OUT && tar czf promo.tgz promo && rm -rf promo

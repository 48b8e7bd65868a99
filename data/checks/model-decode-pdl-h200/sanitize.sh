python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /tmp/san
nvidia-smi --query-gpu=name,driver_version --format=csv > /tmp/san/gpu.txt
compute-sanitizer --version | tail -1 >> /tmp/san/gpu.txt
for tool in memcheck racecheck; do
  timeout 250 compute-sanitizer --tool $tool --error-exitcode 7 python3 -m pytest -m gpu -q -p no:cacheprovider tests/run/test_gpu_model.py -k "tma_pdl or pdl_launches or read_alone_checks" > /tmp/san/sanitize-$tool.txt 2>&1; echo "$tool exit $?" | tee -a /tmp/san/sanitize-$tool.txt; tail -4 /tmp/san/sanitize-$tool.txt
done
tar czf $OUT/sanitize.tgz -C /tmp san

#!/usr/bin/env bash
# the TMA stream with its tokens' boxes knocked out, beside the catalog builds, cuBLAS BF16 and the read alone
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
R=/tmp/res; mkdir -p $R results; cp -r results/carry/build results/build
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
timeout 300 python3 tools/model/harness.py $R/ko3 --layers gate_up,down,logits,qkv --tokens 16 \
  --kernels bf16_stream_tma_k4s5e,cublas_bf16 \
  --knockout ko_both:bf16_stream_tma_k4s5e:results/carry/ko/k4s5e-both2.cubin --knockout ko_both_persist:bf16_stream_tma_k4s5e:results/carry/ko/k4s5e-persist.cubin:sms \
  --knockout ko_persist:bf16_stream_tma_k4s5e:results/carry/ko/k4s5e-persistfull.cubin:sms > $R/ko3.log 2>&1; echo rc=$?
tar czf $OUT/ko3.tgz -C /tmp res 2>/dev/null || tar czf $OUT/ko3.tgz -C $R .
grep -v "^read stream" $R/ko3.log | head -80

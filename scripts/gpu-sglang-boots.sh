#!/bin/bash
# Real SGLang boots on this host's GPU, one log each (how tests/data/sglang-0.5.17-h200/ was made):
#   bash scripts/gpu-sglang-boots.sh OUT_DIR MODEL_DIR
# Each boot runs `sglang-server` (the H200 recipe's wrapper of `python3 -m sglang.launch_server`) with dummy
# weights in its own process group, until its ready line, its exit, or its deadline; a ready server gets one
# completion request, then the group is stopped and the GPU waited free before the next boot.
set -u
OUT=$1 MODEL=$2 PORT=30017
mkdir -p "$OUT"
EAGER="--cuda-graph-backend-decode disabled --cuda-graph-backend-prefill disabled"

gpu_free() {  # until no process holds GPU memory (at most 60 s)
  for _ in $(seq 60); do [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader)" ] && return; sleep 1; done
}

boot() {  # boot NAME DEADLINE_S ARGS...
  local name=$1 deadline=$2; shift 2
  local log="$OUT/$name.log" start=$SECONDS
  echo "== $name: sglang-server --model-path $MODEL --load-format dummy --port $PORT $*" | tee "$OUT/$name.cmd"
  setsid sglang-server --model-path "$MODEL" --load-format dummy --port $PORT "$@" > "$log" 2>&1 &
  local pid=$!
  while kill -0 $pid 2>/dev/null && [ $((SECONDS - start)) -lt "$deadline" ]; do
    if grep -q "The server is fired up and ready to roll" "$log"; then
      curl -s -m 60 "http://127.0.0.1:$PORT/v1/completions" -H 'Content-Type: application/json' \
        -d "{\"model\": \"$MODEL\", \"prompt\": \"Hello\", \"max_tokens\": 8}" > "$OUT/$name.completion.json"
      break
    fi
    sleep 1
  done
  kill -TERM -- -$pid 2>/dev/null; sleep 5; kill -KILL -- -$pid 2>/dev/null; wait $pid 2>/dev/null
  echo "   $name: $((SECONDS - start)) s, $(grep -c . "$log") lines, last: $(tail -n 1 "$log" | cut -c1-160)"
  gpu_free
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/gpu.txt"
PYTHONPATH=${TMPDIR:-/tmp}/sglang-site python3 -c 'import importlib.metadata as m; print(m.version("sglang"))' > "$OUT/sglang-version.txt"
boot good-boot 300 --context-length 8192
boot context-refused 120 --context-length 262144
boot mem-fraction-too-small 180 --context-length 8192 --mem-fraction-static 0.1 $EAGER
boot pool-smaller-than-context 240 --context-length 131072 --mem-fraction-static 0.2 $EAGER

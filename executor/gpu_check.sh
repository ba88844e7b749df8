#!/usr/bin/env bash
# The GPU check of meshplan-run's CUDA backend (issue 8; executor/cuda_replay.hpp), for a machine
# with an NVIDIA GPU (one is used), in a few minutes, most of them the build:
#   1. builds meshplan and meshplan-run (Release, CUDA for this GPU, no tests) into build/gpu;
#   2. writes the plan of an 8-layer Llama-3-8B-like model on one GPU (seq 4096, 8 micro-batches,
#      about 58 GiB predicted) with `meshplan estimate ... --out`;
#   3. replays it with `meshplan-run --backend cuda` (1 warm-up + 3 timed steps);
#   4. leaves the model, plan.json, run.json and the logs in OUT_DIR and prints the comparison.
# The sibling of calibrate/gpu_quick_check.sh (meshplan-calibrate's GPU check).
# Usage: executor/gpu_check.sh [OUT_DIR]   (default: $OUT when set, else build/gpu-run-check)
# MESHPLAN_GPU_BUILD=DIR skips step 1 and uses the binaries already built in DIR
# (DIR/planner/meshplan, DIR/executor/meshplan-run): for a machine without the build's packages.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${OUT:-$root/build/gpu-run-check}}"
mkdir -p "$out"
build="${MESHPLAN_GPU_BUILD:-$root/build/gpu}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

nvidia-smi -L | tee "$out/nvidia-smi.txt" >&2
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
case "$gpu" in
  *H200*) cluster=dgx-h200 ;;
  *B200*) cluster=hgx-b200 ;;
  *A100*) cluster=dgx-a100 ;;
  *) cluster=dgx-h100 ;;
esac
start=$(date +%s)
if [ -n "${MESHPLAN_GPU_BUILD:-}" ]; then
  echo "gpu_check: $gpu -> cluster preset $cluster; binaries from $build" >&2
else
  echo "gpu_check: $gpu -> cluster preset $cluster; building into $build" >&2
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMESHPLAN_TESTS=OFF -DMESHPLAN_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=native > "$out/configure.log" 2>&1 ||
    { tail -n 30 "$out/configure.log" >&2; exit 1; }
  grep -q "meshplan-run with the CUDA backend" "$out/configure.log" ||
    { echo "gpu_check: meshplan-run would be built without CUDA:" >&2; grep meshplan "$out/configure.log" >&2; exit 1; }
  cmake --build "$build" -j "$(nproc)" --target meshplan meshplan-run > "$out/build.log" 2>&1 ||
    { tail -n 40 "$out/build.log" >&2; exit 1; }
  echo "gpu_check: built in $(( $(date +%s) - start )) s" >&2
fi

cat > "$out/llama3-8layer.json" <<'JSON'
{
  "schema": "meshplan-model/1",
  "name": "llama3-8layer",
  "description": "Llama-3-8B's layer (GQA, SwiGLU, RMSNorm, RoPE) and vocabulary, 8 of its 32 layers: one GPU's worth",
  "source": "Llama 3 8B config.json with num_hidden_layers 32 -> 8 (meshplan-run's GPU check)",
  "num_layers": 8,
  "hidden_size": 4096,
  "num_attention_heads": 32,
  "num_kv_heads": 8,
  "head_dim": 128,
  "ffn_hidden_size": 14336,
  "ffn_type": "swiglu",
  "norm_type": "rmsnorm",
  "vocab_size": 128256,
  "vocab_pad_multiple": 1,
  "position_embedding": "rope",
  "max_position_embeddings": 8192,
  "tied_embeddings": false,
  "linear_bias": false,
  "qkv_bias": false,
  "dropout": false,
  "seq_length": 4096
}
JSON
"$build/planner/meshplan" estimate --model "$out/llama3-8layer.json" --cluster "$cluster" \
  --seq 4096 --mbs 1 --gbs 8 --out "$out/plan.json" > "$out/estimate.txt"
head -n 12 "$out/estimate.txt" >&2

code=0
mpirun --oversubscribe -np 1 "$build/executor/meshplan-run" "$out/plan.json" --backend cuda \
  --warmup 1 --steps 3 --timeout-s 120 --report "$out/run.json" > "$out/run.txt" 2>&1 || code=$?
cat "$out/run.txt"
[ "$code" -eq 0 ] || { echo "gpu_check: meshplan-run exited with $code" >&2; exit "$code"; }
python3 - "$out/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m, p = r["measured"], r["predicted"]
gib = 2**30
print(f"gpu_check: backend {r['backend']}, step {m['step_time_s']:.3f} s measured vs "
      f"{p['step_time_s']:.3f} s predicted; device memory in use {m['device_bytes_in_use']/gib:.1f} "
      f"GiB vs {p['peak_bytes']/gib:.1f} GiB predicted (allocated by the replay: "
      f"{m['peak_bytes']/gib:.1f} GiB)")
PY
echo "gpu_check: plan.json, run.json and the logs are in $out (total $(( $(date +%s) - start )) s)"

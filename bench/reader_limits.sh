#!/usr/bin/env bash
# Prints the time and peak memory (GNU time's maximum resident set size) of the inputs issue 24
# bounds: a 64 MiB file of '[' given to every reader (goal: under 1 s and 200 MB, exit code 2),
# and estimate --trace at the 1,000,000-event cap (goal: under 200 MB; the trace is streamed).
#   bench/reader_limits.sh [build-dir]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
meshplan="${1:-$root/build}/planner/meshplan"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
head -c $((64 << 20)) /dev/zero | tr '\0' '[' > "$work/bomb.json"

measure() {  # label, then the command; prints exit code, seconds and peak RSS
  local label="$1"; shift
  local code=0
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2> "$work/err" || code=$?
  read -r seconds kib < <(tail -1 "$work/time")
  printf '%-44s exit %d  %6.2f s  %7.1f MB peak RSS  %s\n' "$label" "$code" "$seconds" \
    "$(echo "$kib / 1000" | bc -l)" "$(head -c 90 "$work/err" | head -1)"
}

b="$work/bomb.json"
measure "64 MiB of '[' as --model" "$meshplan" estimate --model "$b" --cluster dgx-h100 --tp 8
measure "64 MiB of '[' as --gpu" "$meshplan" ledger --model llama2-7b --gpu "$b"
measure "64 MiB of '[' as --cluster" "$meshplan" estimate --model llama2-7b --cluster "$b"
measure "64 MiB of '[' as --profile" "$meshplan" estimate --model llama2-7b --cluster dgx-h100 \
  --tp 8 --profile "$b"
measure "64 MiB of '[' as a plan (export)" "$meshplan" export "$work/bomb.json" --format megatron
# llama3-8b on 64 GPUs, dp 8 pp 8 vpp 4, gbs 62464 (7808 micro-batches; tp 1, cp 1, zero 1: no
# exposed-communication events): step_report's count, 4 events per chunk-op x 8 x 4 x 7808 =
# 999,424, is just under its 1,000,000 cap (the file holds 983,872: the first and last virtual
# stages send one way only, plus the metadata and the DP and optimizer phases).
measure "estimate --trace at the 1,000,000-event cap" "$meshplan" estimate --model llama3-8b \
  --cluster dgx-h100 --gpus 64 --dp 8 --tp 1 --pp 8 --vpp 4 --mbs 1 --gbs 62464 \
  --trace "$work/t.json"
ls -l "$work/t.json" | awk '{printf "trace file: %.1f MB\n", $5 / 1e6}'
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('trace events:', len(d['traceEvents']))" "$work/t.json"

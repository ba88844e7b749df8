#!/bin/sh
# cuda_check.sh REPORT COMMAND...: runs COMMAND (an mpirun of meshplan-run --backend cuda) and
# checks what this machine should give: without a GPU (nvidia-smi lists none), exit code 2 and
# the refusal naming the ranks without a CUDA device, before anything is allocated; with one,
# exit code 0 and REPORT written with "backend": "cuda". For tests/executor.
report="$1"; shift
rm -f "$report"
output="$("$@" 2>&1)"; code=$?
printf '%s\n' "$output"
if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  [ "$code" -eq 0 ] || { echo "cuda_check.sh: a GPU is present; exit code $code, expected 0"; exit 1; }
  grep -q '"backend": "cuda"' "$report" ||
    { echo "cuda_check.sh: $report lacks \"backend\": \"cuda\""; exit 1; }
  echo "cuda_check.sh: the CUDA backend ran; $report written"
else
  [ "$code" -eq 2 ] || { echo "cuda_check.sh: no GPU; exit code $code, expected 2"; exit 1; }
  printf '%s\n' "$output" | grep -Eq -- '--backend cuda: no usable CUDA device on rank\(s\) 0' ||
    { echo "cuda_check.sh: no GPU, and the refusal does not say so"; exit 1; }
  echo "cuda_check.sh: no GPU here; --backend cuda refused with exit code 2 as it should be"
fi

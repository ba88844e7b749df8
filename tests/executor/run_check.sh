#!/bin/sh
# run_check.sh [--memory-within FRACTION] [--output REGEX]... [--no-output REGEX]... REPORT
# COMMAND...: runs COMMAND (an mpirun of meshplan-run), prints its output, and passes when it
# exits 0, REPORT holds every key of schema meshplan-run/1, with --memory-within every rank's
# peak bytes held is within FRACTION of its stage's ledger without the runtime overhead lines
# (our own byte accounting: deterministic), every --output extended regular expression matches a
# line of the output (stdout and stderr) and no --no-output one does. For tests/executor.
within=""
matches=""
absent=""
newline='
'
while :; do
  case "$1" in
    --memory-within) within="$2"; shift 2 ;;
    --output) matches="$matches$2$newline"; shift 2 ;;
    --no-output) absent="$absent$2$newline"; shift 2 ;;
    *) break ;;
  esac
done
report="$1"; shift
rm -f "$report"
output="$("$@" 2>&1)"; code=$?
printf '%s\n' "$output"
[ "$code" -eq 0 ] || { echo "run_check.sh: exit code $code, expected 0"; exit 1; }
failed=0
while IFS= read -r regex; do
  [ -z "$regex" ] && continue
  printf '%s\n' "$output" | grep -Eq -- "$regex" ||
    { echo "run_check.sh: output does not match: $regex"; failed=1; }
done <<EOF
$matches
EOF
while IFS= read -r regex; do
  [ -z "$regex" ] && continue
  if printf '%s\n' "$output" | grep -Eq -- "$regex"; then
    echo "run_check.sh: output matches what it must not: $regex"; failed=1
  fi
done <<EOF
$absent
EOF
[ "$failed" -eq 0 ] || exit 1
[ -f "$report" ] || { echo "run_check.sh: $report not written"; exit 1; }
for key in '"schema": "meshplan-run/1"' '"plan"' '"steps"' '"predicted"' '"measured"' \
           '"step_time_s"' '"peak_bytes"' '"rss_bytes"' '"components"' '"ranks"' \
           '"compute_s"' '"bubble_s"' '"local_rank"' '"peak_vs_stage_ledger_error_max"' \
           '"peak_vs_stage_ledger_worst"' '"scratch_bytes"'; do
  grep -q -- "$key" "$report" || { echo "run_check.sh: $report lacks $key"; exit 1; }
done
if [ -n "$within" ]; then
  error=$(sed -n 's/.*"peak_vs_stage_ledger_error_max": *\([-+0-9.eE]*\).*/\1/p' "$report")
  awk -v e="$error" -v w="$within" 'BEGIN { if (e == "" || e > w || -e > w) exit 1 }' || {
    echo "run_check.sh: peak held vs the stage's ledger: error $error, allowed +-$within"
    exit 1
  }
  echo "run_check.sh: peak held within $within of the ledger (worst rank: $error)"
fi
echo "run_check.sh: $report complete"

#!/bin/sh
# run_check.sh [--memory-within FRACTION] REPORT COMMAND...: runs COMMAND (an mpirun of
# meshplan-run), prints its output, and passes when it exits 0, REPORT holds every key of schema
# meshplan-run/1 and, with --memory-within, every rank's peak bytes held is within FRACTION of
# its stage's ledger without the runtime overhead lines (our own byte accounting: deterministic).
# For tests/executor.
within=""
if [ "$1" = "--memory-within" ]; then within="$2"; shift 2; fi
report="$1"; shift
rm -f "$report"
"$@" 2>&1; code=$?
[ "$code" -eq 0 ] || { echo "run_check.sh: exit code $code, expected 0"; exit 1; }
[ -f "$report" ] || { echo "run_check.sh: $report not written"; exit 1; }
for key in '"schema": "meshplan-run/1"' '"plan"' '"steps"' '"predicted"' '"measured"' \
           '"step_time_s"' '"peak_bytes"' '"rss_bytes"' '"components"' '"ranks"' \
           '"compute_s"' '"bubble_s"' '"local_rank"' '"peak_vs_stage_ledger_error_max"'; do
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

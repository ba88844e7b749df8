#!/bin/sh
# run_check.sh REPORT COMMAND...: runs COMMAND (an mpirun of meshplan-run), prints its output, and
# passes when it exits 0 and REPORT holds every key of schema meshplan-run/1. For tests/executor.
report="$1"; shift
rm -f "$report"
"$@" 2>&1; code=$?
[ "$code" -eq 0 ] || { echo "run_check.sh: exit code $code, expected 0"; exit 1; }
[ -f "$report" ] || { echo "run_check.sh: $report not written"; exit 1; }
for key in '"schema": "meshplan-run/1"' '"plan"' '"steps"' '"predicted"' '"measured"' \
           '"step_time_s"' '"peak_bytes"' '"rss_bytes"' '"components"' '"ranks"' \
           '"compute_s"' '"bubble_s"' '"local_rank"'; do
  grep -q -- "$key" "$report" || { echo "run_check.sh: $report lacks $key"; exit 1; }
done
echo "run_check.sh: $report complete"

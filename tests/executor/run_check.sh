#!/bin/sh
# run_check.sh [--memory-within FRACTION] [--output REGEX]... [--no-output REGEX]...
# [--slower-than-predicted COMPONENT]... REPORT COMMAND...: runs COMMAND (an mpirun of
# meshplan-run), prints its output, and passes when it exits 0, REPORT holds every key of schema
# meshplan-run/1, with --memory-within every rank's peak bytes held is within FRACTION of its
# stage's ledger without the runtime overhead lines (our own byte accounting: deterministic),
# every --output extended regular expression matches a line of the output (stdout and stderr),
# no --no-output one does, and each --slower-than-predicted component's measured seconds are at
# least its predicted seconds (a plan costed for an H100 replayed on CPU cores: any component
# the replay really runs takes longer; one it skips measures about 0). For tests/executor.
within=""
matches=""
absent=""
slower=""
newline='
'
while :; do
  case "$1" in
    --memory-within) within="$2"; shift 2 ;;
    --output) matches="$matches$2$newline"; shift 2 ;;
    --no-output) absent="$absent$2$newline"; shift 2 ;;
    --slower-than-predicted) slower="$slower $2"; shift 2 ;;
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
for component in $slower; do
  # report.dump(2): the sections "measured" and "predicted" at 2 spaces, their components at 6
  # (each rank's components are deeper).
  times=$(awk -v key="\"${component}_s\":" '
    /^  "[a-z_]+":/ { section = $1 }
    /^      "/ && $1 == key { gsub(/,/, "", $2); v[section] = $2 }
    END { print v["\"measured\":"], v["\"predicted\":"] }' "$report")
  set -- $times
  awk -v m="$1" -v p="$2" 'BEGIN { if (m == "" || p == "" || m + 0 < p + 0) exit 1 }' || {
    echo "run_check.sh: $component measured ${1:-?} s, less than the ${2:-?} s predicted"
    exit 1
  }
  echo "run_check.sh: $component measured $1 s, predicted $2 s"
done
echo "run_check.sh: $report complete"

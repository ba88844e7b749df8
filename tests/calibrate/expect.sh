#!/bin/sh
# expect.sh CODE REGEX COMMAND...: runs COMMAND, prints its output, and passes when its exit code
# is CODE ("nonzero" for any failure) and its output (stdout and stderr) matches the extended
# regular expression REGEX ("" for any). For the ctest entries of tests/calibrate.
expected="$1"; regex="$2"; shift 2
output="$("$@" 2>&1)"; code=$?
printf '%s\n' "$output"
if [ "$expected" = nonzero ]; then
  [ "$code" -ne 0 ] || { echo "expect.sh: exit code 0, expected a failure"; exit 1; }
else
  [ "$code" -eq "$expected" ] || { echo "expect.sh: exit code $code, expected $expected"; exit 1; }
fi
if [ -n "$regex" ] && ! printf '%s\n' "$output" | grep -Eq -- "$regex"; then
  echo "expect.sh: output does not match: $regex"; exit 1
fi
exit 0

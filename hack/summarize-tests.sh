#!/usr/bin/env bash
# Passes `go test -v` output through and ends it with one summary line,
# "tests: N passed, N failed, N skipped", counting every test and subtest.
# Skipped tests are listed with their reason so none goes unnoticed.
set -uo pipefail
awk '
  { print; fflush() }
  /^ *--- PASS: / { pass++ }
  /^ *--- FAIL: / { fail++; failed[fail] = $3 }
  /^ *--- SKIP: / { skip++; skipped[skip] = $3; want_reason = 1; next }
  want_reason == 1 { reasons[skip] = $0; want_reason = 0 }
  END {
    for (i = 1; i <= skip; i++) printf "skipped: %s %s\n", skipped[i], reasons[i]
    for (i = 1; i <= fail; i++) printf "failed: %s\n", failed[i]
    printf "tests: %d passed, %d failed, %d skipped\n", pass, fail, skip
  }'

#!/usr/bin/env bash
# Passes `go test -v` output through and ends it with one summary line,
# "tests: N passed, N failed, N skipped", counting every test and subtest and
# every Ginkgo spec (from Ginkgo's own "N Passed | N Failed | ..." line).
# Skipped tests are listed with their reason so none goes unnoticed.
set -uo pipefail
awk '
  { print; fflush() }
  /^ *--- PASS: / { pass++ }
  /^ *--- FAIL: / { fail++; failed[fail] = $3 }
  /^ *--- SKIP: / { skip++; skipped[skip] = $3; want_reason = 1; next }
  want_reason == 1 { reasons[skip] = $0; want_reason = 0 }
  /[0-9]+ Passed \| [0-9]+ Failed \| [0-9]+ Pending \| [0-9]+ Skipped/ {
    for (i = 1; i <= NF; i++) {
      if ($(i+1) == "Passed") pass += $i
      if ($(i+1) == "Failed") fail += $i
      if ($(i+1) == "Skipped") { skip += $i; skipped[skip] = "ginkgo specs"; reasons[skip] = "(not focused or skipped; see the spec report above)" }
    }
  }
  END {
    for (i = 1; i <= skip; i++) printf "skipped: %s %s\n", skipped[i], reasons[i]
    for (i = 1; i <= fail; i++) printf "failed: %s\n", failed[i]
    printf "tests: %d passed, %d failed, %d skipped\n", pass, fail, skip
  }'

#!/usr/bin/env bash
# Passes `go test -v` output through and ends it with one summary line,
# "tests: N passed, N failed, N skipped", counting every test and subtest and
# every Ginkgo spec (from Ginkgo's own "N Passed | N Failed | ..." line).
# Skipped and failed tests are listed by name, skipped ones with the reason
# Go printed, so none goes unnoticed; Ginkgo prints its own skip reasons.
set -uo pipefail
awk '
  { print; fflush() }
  /^ *--- PASS: / { pass++ }
  /^ *--- FAIL: / { fail++; nfailed++; failed[nfailed] = $3 }
  /^ *--- SKIP: / { skip++; nskipped++; skipped[nskipped] = $3; want_reason = 1; next }
  want_reason == 1 { reasons[nskipped] = $0; want_reason = 0 }
  /[0-9]+ Passed \| [0-9]+ Failed \| [0-9]+ Pending \| [0-9]+ Skipped/ {
    for (i = 1; i <= NF; i++) {
      if ($(i+1) == "Passed") pass += $i
      if ($(i+1) == "Failed") { fail += $i; gfail += $i }
      if ($(i+1) == "Skipped") { skip += $i; gskip += $i }
    }
  }
  END {
    for (i = 1; i <= nskipped; i++) printf "skipped: %s %s\n", skipped[i], reasons[i]
    if (gskip > 0) printf "skipped: %d Ginkgo specs (their reasons are in the spec report above: label filter, backend or missing Docker)\n", gskip
    for (i = 1; i <= nfailed; i++) printf "failed: %s\n", failed[i]
    if (gfail > 0) printf "failed: %d Ginkgo specs (see the spec report above)\n", gfail
    printf "tests: %d passed, %d failed, %d skipped\n", pass, fail, skip
  }'

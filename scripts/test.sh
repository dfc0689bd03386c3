#!/bin/bash
# The README's second command (and CI's): install, build, run the whole test suite, and end
# with one line "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
scripts/install-test-deps.sh || exit 1
scripts/build.sh || exit 1
# Each suite's waits have deadlines of their own; meson's per-test limits (tests/meson.build) are
# the last resort, doubled so that a machine much slower than ours, or one running other suites
# beside these, still finishes the longest (the PBS suite: 8 of its 15 minutes here).
meson test -C build --print-errorlogs --num-processes 2 --timeout-multiplier 2 2>&1 |
    tee build/test-output.txt
status=${PIPESTATUS[0]}
count() { sed -n "s/^$1: *\([0-9]*\).*/\1/p" build/test-output.txt | tail -n 1; }
ok=$(count Ok)
fail=$(( $(count Fail) + $(count Timeout) + $(count 'Unexpected Pass') ))
skipped=$(count Skipped)
echo "${ok:-0} passed, ${fail} failed, ${skipped:-0} skipped"
exit "$status"

#!/bin/bash
# The chaos soak, short: bench/soak.sh's 10 jobs on the real Slurm, OpenPBS and sshd hosts (the
# three at once), each with one fault drawn at random (this run's seed is printed), each ending as
# the fault says and leaving nothing behind.
. "$SRCDIR/tests/lib/tap.sh"
seed=${SOAK_SEED:-$RANDOM}
run bash "$SRCDIR/bench/soak.sh" --parallel --jobs 10 --seed "$seed" "$BUILDDIR"
last=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "bench/soak.sh --parallel --jobs 10 --seed $seed exits 0" "$OUT" "$ERR"
expect_contains "$last" "soak: 10 jobs, 10 faults (by kind: " "its last line counts 10 jobs and their faults"
expect_contains "$last" ", 0 wrong outcomes, 0 leftovers, " "no wrong outcome, nothing left behind" "$OUT"

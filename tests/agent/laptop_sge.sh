#!/bin/bash
# From the laptop on Grid Engine (issue 71): a real Grid Engine cell (tests/cluster/sge.sh, 2 nodes
# in network namespaces) whose head runs a real sshd, and a laptop namespace on its bridge whose
# scheduler commands are traps (tests/cluster/laptop.sh). The laptop's installed ddpjob checks the
# cluster (Grid Engine's qsub told from PBS's), submits a 2-node job with --on (this version
# installed there first, the folder uploaded), waits for it, reads its logs and status, fetches
# its checkpoints; a failed rank is named from the laptop, and a job cancelled from the laptop
# leaves nothing running.
. "$SRCDIR/tests/lib/tap.sh"
SGE_USER=ddpjlsge
# One slot a node: the laptop's jobs run one rank on each.
SGE_SLOTS=1
. "$SRCDIR/tests/cluster/sge.sh"
. "$SRCDIR/tests/cluster/laptop.sh"
at_exit 'laptop_down'
sge_suite_up 2 "a 2-node Grid Engine cell runs in network namespaces" || exit 1
home=$SGE_CLUSTER/home/$SGE_USER
R=$LAPTOP_DIR
# A login shell on the head finds the cell, as a site's profile (settings.sh) puts it there.
{
    for var in $(sge_env); do printf 'export %s\n' "$var"; done
    printf 'export PATH=%s:$PATH\n' "$SGE_BIN"
} >"$home/.bash_profile"
chown "$SGE_USER:" "$home/.bash_profile"
LAPNS=$(sge_ns laptop)
laptop_suite_up head 10.76.0.1 "$SGE_USER" "$LAPNS" "$(sge_ns head)" 10.76.0.200 sge_in head || exit 1
laptop() { laptop_in "$LAPNS" "$SGE_CLUSTER/etc/hosts" "$@"; }

laptop_job
spec() { laptop_spec sge "$@" && printf 'sge: {pe: ddp}\n' >>"$LAPTOP_DIR/proj/$1.yaml"; }
spec lapsge '[sh, job.sh]'
spec lapfail '[sh, job.sh]' 'FAIL_RANK: "1"'
spec lapsleep '[sleep, "300"]'

laptop cluster add sge --host head --remote-dir '~/jobs'
expect_rc 0 "cluster add sge (the head's sshd)"
laptop cluster check sge
expect_contains "$OUT" "scheduler: Grid Engine, qsub at $SGE_BIN/qsub (SGE 8.1.9)" "cluster check finds Grid Engine there" "$ERR"
expect_lacks "$OUT" "scheduler: PBS" "... and does not take its qsub for PBS's"

laptop submit --on sge lapsge.yaml
expect_rc 0 "submit --on sge: a 2-node job submitted from the laptop"
JOB=$(tail -n 1 <<<"$OUT")
expect_contains "$ERR" "sge: installed ddpjob $LAPTOP_VERSION" "... this version installed there first"
expect_contains "$ERR" "sge: uploaded 4 files" "... the folder uploaded"
laptop wait "$JOB" --timeout 240
expect_rc 0 "wait from the laptop: the job completed (Grid Engine job $JOB)"
laptop logs lapsge
expect_contains "$OUT" "rank 0 of 2 on n" "logs from the laptop: rank 0's line" "$ERR"
expect_contains "$OUT" "rank 1 of 2 on n" "... and rank 1's"
laptop status "$JOB"
expect_contains "$OUT" "completed" "status from the laptop: completed" "$ERR"
laptop fetch lapsge
expect_rc 0 "fetch from the laptop"
expect_contains "$(cat "$R/proj/checkpoints/rank0.ckpt" 2>/dev/null)" "step 10 of rank 0" "... its checkpoints"

laptop submit --on sge lapfail.yaml
FAILED=$(tail -n 1 <<<"$OUT")
laptop wait "$FAILED" --timeout 240
expect_rc 3 "wait: the failed job's own status (3)"
laptop status lapfail
expect_contains "$OUT" "failed" "status from the laptop: failed" "$ERR"
expect_contains "$OUT" "rank 1" "... naming rank 1"

laptop submit --on sge lapsleep.yaml
run_until 90 "running" laptop status lapsleep
expect_contains "$OUT" "running" "status from the laptop: running"
laptop cancel lapsleep
expect_rc 0 "cancel from the laptop"
expect_within 60 "nothing of the cancelled job left running on the nodes" \
    sh -c '! pgrep -u "$1" -x sleep >/dev/null' _ "$SGE_USER"
expect_eq "$(cat "$R/trap.log" 2>/dev/null)" "" "the laptop never ran a scheduler command"

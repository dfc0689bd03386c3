#!/bin/bash
# Containers on the real Slurm with the real pyxis and enroot (both built by the install step from
# ../shared/tools): the suite's 2-node cluster loads pyxis through its plugstack.conf, and a spec's
# container: (runtime pyxis) runs each node's agent and its workers in an image this test makes
# (tests/lib/images.sh). Every rank is inside, a failure is named as without a container, cancel
# leaves no process and no enroot container, a requeued chain resumes inside, and ddp-train trains
# to the same bits as without the container.
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/lib/images.sh"
. "$SRCDIR/tests/cluster/slurm.sh"
at_exit 'cluster_down'
cd "$T" || exit 1

enroot_bin=$(image_enroot_path) || { fail "enroot is installed in /opt/enroot (scripts/install-test-deps.sh builds it)" "no /opt/enroot/bin/enroot"; exit 1; }
pyxis=/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pyxis.so
[ -e "$pyxis" ] || { fail "pyxis is installed ($pyxis; scripts/install-test-deps.sh builds it)" "missing"; exit 1; }
# slurmd's PATH finds enroot, as a site's would (pyxis runs it with the node's own PATH).
export PATH=$enroot_bin:$PATH
# This suite's nodes' enroot state (its site config keeps it per host name): nothing an earlier,
# interrupted run left, since job ids start again with each test cluster.
enroot_state() { rm -rf /var/tmp/enroot-data/n[12]/user-0/pyxis_* /run/enroot/n[12]/user-0/pyxis_*; }
enroot_state
at_exit enroot_state
if ! SLURM_PLUGSTACK="required $pyxis runtime_path=$T/pyxis" cluster_up 2 >"$T/cluster.log" 2>&1; then
    fail "a 2-node Slurm cluster with pyxis starts" "$(tail -n 20 "$T/cluster.log")" \
        "$(tail -n 5 "$CLUSTER"/log/*.log 2>/dev/null)"
    exit 1
fi
pass "a 2-node Slurm cluster with pyxis (plugstack.conf) runs in network namespaces"

image_root "$T/root" "$TRAIN"
image_sqsh "$T/root" "$T/image.sqsh"

submit() { # SPEC [ENV=VALUE...]: JOB gets the job id
    local spec=$1
    shift
    run env DDPJ_TESTMARK="$MARK" XDG_STATE_HOME="$T/state" "$@" bash -c '. "$0/tests/cluster/slurm.sh"; cluster_in head "$@"' \
        "$SRCDIR" "$DDPJOB" submit "$spec"
    JOB=$(grep -o '[0-9][0-9]*' <<<"$OUT" | tail -n 1)
}
dj() {
    run cluster_ddpjob "$T" "$@"
}
# No enroot container left on either node (enroot's data folder per node: its site config).
expect_no_containers() {
    local left
    left=$(find /var/tmp/enroot-data/n1/user-0 /var/tmp/enroot-data/n2/user-0 -mindepth 1 -maxdepth 1 2>/dev/null
        grep squashfuse /proc/mounts)
    if [ -z "$left" ]; then pass "$1"; else fail "$1" "left: $left"; fi
}

cat >job.yaml <<SPEC
name: pyxis
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
env: {FROM_SPEC: "from the spec"}
container:
  runtime: pyxis
  image: $T/image.sqsh
command: 'cat /etc/ddpjob-image; echo "host=\$(hostname) RANK=\$RANK WORLD_SIZE=\$WORLD_SIZE MASTER_ADDR=\$MASTER_ADDR FROM_SPEC=\$FROM_SPEC"; echo 5 >"\$DDPJOB_PROGRESS_FILE"; echo "\$RANK" >"$T/written-by-\$RANK"; [ "\$RANK" != "\${FAIL_RANK:-none}" ] || exit 3; [ -z "\${FAIL_RANK:-}\${SLEEP:-}" ] || exec sleep 120'
SPEC
submit job.yaml
cluster_wait_gone "$JOB"
expect_eq "$(grep -c '^\[rank [0-3]\] inside the test.s image' <<<"$OUT")" 4 "all 4 ranks ran inside the image"
for r in 0 1 2 3; do
    expect_contains "$OUT" "[rank $r] host=n$((r / 2 + 1)) RANK=$r WORLD_SIZE=4 MASTER_ADDR=n1 FROM_SPEC=from the spec" \
        "rank $r on n$((r / 2 + 1)) sees its torchrun variables and the spec's env"
    expect_file "$T/written-by-$r" "rank $r wrote into the bound folder"
done
dj status "$JOB"
expect_contains "$OUT" "pyxis (slurm job $JOB): completed, exit 0" "status: completed, exit 0"
expect_no_containers "pyxis removed each node's container"

submit job.yaml FAIL_RANK=1
cluster_wait_gone "$JOB"
dj status "$JOB"
expect_contains "$OUT" "failed, exit 3" "rank 1 exiting 3 fails the job with 3"
expect_contains "$OUT" "rank 1 (node 0, host n1): exited with code 3" "status names rank 1 and its code"
dj logs "$JOB" --rank 1
expect_contains "$OUT" "host=n1 RANK=1" "logs --rank 1 reads the record as without a container"
expect_no_containers "no container left after the failure"

# An image that is not there: pyxis fails the step before any agent starts. What it said reaches
# the record's batch stream, and status names it (the cause was once only in NAME-JOBID.out).
sed "s#image: $T/image.sqsh#image: $T/missing.sqsh#" job.yaml >missing.yaml
submit missing.yaml
cluster_wait_gone "$JOB"
dj status "$JOB"
expect_contains "$OUT" "pyxis (slurm job $JOB): failed" "a job whose image is missing fails" "$ERR"
expect_contains "$OUT" "no agent reported a failure; the batch shell" "status says no agent started and shows what the batch shell's steps said"
expect_contains "$OUT" "$T/missing.sqsh" "... naming the missing image (pyxis's own words)"
dj logs "$JOB" --batch
expect_contains "$OUT" "$T/missing.sqsh" "logs --batch shows the same"
expect_no_containers "no container left after the missing image"

submit job.yaml SLEEP=1
for _ in $(seq 300); do
    [ "$(ls "$T"/written-by-* 2>/dev/null | wc -l)" = 4 ] && [ "$(cluster_in head squeue -h -j "$JOB" -o %T)" = RUNNING ] && break
    sleep 0.2
done
rm -f "$T"/written-by-*
for _ in $(seq 300); do [ "$(ls "$T"/written-by-* 2>/dev/null | wc -l)" = 4 ] && break; sleep 0.2; done
dj cancel "$JOB"
expect_eq "$RC" 0 "cancel of the running job in its container exits 0"
cluster_wait_gone "$JOB"
expect_no_leftovers "cancel leaves no process of the job (agent, workers, enroot) on any node"
expect_no_containers "and no enroot container on any node"

# The walltime chain inside the container: the checkpoint signal reaches the program inside, it
# exits 75, and the job is requeued twice, each link starting a fresh container (no name).
# A container the first link's node left (as a node lost mid-step would) is removed before the
# next link starts, which pyxis would otherwise refuse ("File already exists"). Each link has 30 s
# to start before its checkpoint is due: on a loaded machine a container's setup took more than
# the 15 s a 1-minute walltime left, and the signal was never sent.
leave_container() { # JOB: once its first link has ended, a container under its first step's name
    for _ in $(seq 600); do
        [ "$(cluster_in head squeue -h -j "$1" -o '%T %r' 2>/dev/null)" = "PENDING BeginTime" ] && break
        sleep 0.2
    done
    mkdir -p "/var/tmp/enroot-data/n2/user-0/pyxis_$1.0"
}
cat >chain.yaml <<SPEC
name: pyxis-chain
scheduler: slurm
nodes: 2
procs_per_node: 1
walltime: "00:02:00"
checkpoint: {signal: USR1, before: 90}
requeue: 2
container:
  image: $T/image.sqsh
command: 'link=\$TORCHELASTIC_RESTART_COUNT; f=$T/chain-\$RANK; if [ "\$link" -lt 2 ]; then got=; trap "got=1" USR1; while [ -z "\$got" ]; do sleep 0.2; done; echo "link \$link" >>"\$f"; echo "rank \$RANK checkpointed in link \$link"; exit 75; fi; echo "rank \$RANK resumed after: \$(tr "\\n" " " <"\$f")"'
SPEC
rm -f "$T"/chain-*
submit chain.yaml
leave_container "$JOB"
cluster_wait_gone "$JOB"
expect_contains "$OUT" "requeueing it (2 of 2)" "the chain was requeued twice (the container left on n2 removed before the second link)"
expect_contains "$OUT" "[rank 1] rank 1 resumed after: link 0 link 1 " "its last link resumed inside the image from both links' checkpoints"
dj status "$JOB"
case $OUT in
*"pyxis-chain (slurm job $JOB): completed, exit 0"*) pass "status: completed after 3 links" ;;
*) fail "status: completed after 3 links" "$OUT" "$(grep -h "pyxis\|error" "$CLUSTER"/log/slurm*.log | tail -n 40)" ;;
esac
expect_no_containers "no container left by the chain"

# ddp-train (its libraries copied into the image) trains 2x2 inside; the checkpoint equals the
# same run's without the container, bit for bit.
for where in bare inside; do
    {
        echo "name: train-$where"
        echo "scheduler: slurm"
        echo "nodes: 2"
        echo "procs_per_node: 2"
        echo "walltime: \"00:05:00\""
        echo "env: {OPENBLAS_CORETYPE: Haswell}"
        echo "train: {synthetic: true, synthetic_size: \"1024,256\", epochs: 2, batch_size: 32, seed: 7, checkpoint_dir: $T/ckpt-$where}"
        # ddp-train's own folder is bound too: an image's /tmp is enroot's fresh one, which hides
        # the copy there when the build is under /tmp.
        [ "$where" = bare ] || printf 'container:\n  image: %s\n  mounts: [%s]\n' "$T/image.sqsh" \
            "$(dirname "$(readlink -f "$TRAIN")")"
    } >"train-$where.yaml"
    submit "train-$where.yaml"
    cluster_wait_gone "$JOB"
    expect_contains "$OUT" "trained after 2 of 2 epochs" "ddp-train 2x2 trains ($where)"
done
if diff=$("$TRAIN" diff "$T/ckpt-bare/checkpoint.ddpt" "$T/ckpt-inside/checkpoint.ddpt" --tolerance 0 2>&1); then
    pass "the checkpoint trained in the container equals the bare run's ($(tail -n 1 <<<"$diff"))"
else
    fail "the checkpoint trained in the container equals the bare run's" "$diff"
fi

# An allocation held by `ddpjob dev` for this spec (issue 68): a run's ranks and a shell on a
# node are inside the image (the shell through enroot, pyxis's own runtime, on the same file).
sed 's/^name: pyxis/name: pyxdev/' job.yaml >pyxdev.yaml
dj dev pyxdev.yaml --wait-for 180s
expect_eq "$RC" 0 "dev: a pyxis spec's 2 nodes held" "$ERR"
DEVJOB=$(grep -o 'job [0-9]*' <<<"$OUT" | head -n 1 | cut -d' ' -f2)
dj run --in pyxdev
expect_eq "$RC" 0 "run --in: the run completed" "$ERR"
expect_eq "$(grep -c '^\[rank [0-3]\] inside the test.s image' <<<"$OUT")" 4 "all 4 ranks of the run ran inside the image" "$OUT"
dj shell pyxdev --node 1 -- /bin/sh -c 'cat /etc/ddpjob-image; echo "FROM_SPEC=$FROM_SPEC host=$(hostname)"; [ -t 0 ] && echo on-a-terminal'
expect_eq "$RC" 0 "shell --node 1 -- COMMAND exits 0" "$ERR"
expect_contains "$OUT" "inside the test's image" "the shell's command ran inside the image"
expect_contains "$OUT" "FROM_SPEC=from the spec host=n2" "... with the spec's env, on node 1"
expect_contains "$OUT" "on-a-terminal" "... on a terminal"
dj dev stop pyxdev
expect_eq "$RC" 0 "dev stop" "$ERR"
cluster_wait_gone "$DEVJOB"
expect_no_containers "no container left by the held allocation, its run or its shell"

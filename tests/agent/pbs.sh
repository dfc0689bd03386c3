#!/bin/bash
# The whole PBS path on a real OpenPBS that this suite starts (tests/cluster/pbs.sh): a server and
# two MoMs n1 and n2, each in its own network namespace with its own hostname and address, and an
# unprivileged user who submits. `ddpjob submit` sends a spec without workdir: whose command is a
# real PyTorch DDP program (gloo, 2 workers per node) found on the PATH the user's login gives the
# batch shell; the rendered script asks for select=2:ncpus=2:ngpus=2, node 0's agent runs in the
# batch shell and pbsdsh starts node 1's. Then a rank that exits 3, and a node whose agent cannot
# start, must fail the PBS job (pbsdsh itself always exits 0), naming the node. A walltime chain
# of requeued links and its report in a real headless Chromium.
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/cluster/pbs.sh"
. "$SRCDIR/tests/cluster/sshd.sh"
. "$SRCDIR/tests/lib/images.sh"
. "$SRCDIR/tests/lib/browser.sh"

# Three nodes: the jobs run on two, the spares case (at the end) on all three.
pbs_suite_up 3 2 2 "a 3-node OpenPBS cluster (pbs_server, data service, pbs_sched, pbs_comm, 3 pbs_mom) runs in network namespaces" || exit 1

# What the user's jobs use must be theirs to read: the built programs and templates are copied
# beside the cluster, the workload into the user's submission directory.
home=$PBS_CLUSTER/home/$PBS_USER
bin=$PBS_CLUSTER/bin
jobdir=$home/jobs/e2e
mkdir -p "$bin" "$home/tools" "$jobdir"
cp "$DDPJOB" "$AGENT" "$TRAIN" "$bin/"
cp -r "$BUILDDIR/templates" "$PBS_CLUSTER/templates"
cp "$SRCDIR/tests/agent/py/env_ddp.py" "$jobdir/"
# The user's login puts their own tools first: the workers must find python3 there on every node.
ln -s /usr/bin/python3 "$home/tools/python3"
echo 'export PATH=$HOME/tools:$PATH' >"$home/.bash_profile"
chown -R "$PBS_USER:" "$home"

pbs_state() { # JOB FIELD
    pbs_in pbshead "$PBS_EXEC/bin/qstat" -xf "$1" 2>/dev/null | sed -n "s/^ *$2 = //p"
}

# SPEC [DDPJOB_ARGS...] (default: submit SPEC): JOB gets the job id, OUT the job's output,
# STATUS its Exit_status.
# submit_and_wait SPEC [ARGS...]: `ddpjob submit SPEC` (or ddpjob ARGS) as the user, with the
# suite's programs and templates, or, with INSTALLED set, with that install's ddpjob alone.
submit_and_wait() {
    submit_job "$@"
    wait_job "$1"
}

submit_job() { # SPEC [ARGS...]: JOB
    local spec=$1
    shift
    [ "$#" -gt 0 ] || set -- submit "$spec"
    if [ -n "${INSTALLED:-}" ]; then
        (cd "$jobdir" && pbs_as_user "$INSTALLED/bin/ddpjob" "$@") >"$T/submit.out" 2>&1
    else
        (cd "$jobdir" && pbs_as_user env DDPJOB_TEMPLATE_DIR="$PBS_CLUSTER/templates" \
            "$bin/ddpjob" "$@" --bindir "$bin") >"$T/submit.out" 2>&1
    fi
    JOB=$(tail -n 1 "$T/submit.out")
}

wait_job() { # SPEC [OUTPUT_FILE]: until JOB has finished (120 s at most); OUT, STATUS
    local spec=$1
    local deadline=$((SECONDS + 120))
    while [ "$(pbs_state "$JOB" job_state)" != F ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.5
    done
    # The MoM copies the output back as the job ends; on a busy machine that may come late.
    local out=${2:-$jobdir/${spec%.yaml}.o${JOB%%.*}}
    for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
    # What the MoMs said of the job when its output is missing (undelivered, say).
    OUT=$(cat "$out" 2>/dev/null || {
        ls -l "$PBS_CLUSTER"/n*/undelivered
        grep -h "${JOB%%.*}\.pbshead" "$PBS_CLUSTER"/n*/mom_logs/* | tail -n 20
    } 2>&1)
    STATUS=$(pbs_state "$JOB" Exit_status)
}

# ddpjob ARGS... as the user, from DIR (default the submission directory): RC, OUT, ERR.
pj() {
    local dir=$jobdir back=$PWD
    case $1 in DIR=*) dir=${1#DIR=}; shift ;; esac
    cd "$dir" && run pbs_as_user "$bin/ddpjob" "$@"
    cd "$back" || return
}

cat >"$jobdir/e2e.yaml" <<SPEC
name: e2e
scheduler: pbs
nodes: 2
gpus_per_node: 2
cpus_per_node: 2
walltime: "00:05:00"
setup: export FROM_SETUP="ran on \$(hostname)"
env: {FROM_SPEC: "from the spec"}
command: [python3, env_ddp.py]
SPEC
chown "$PBS_USER:" "$jobdir/e2e.yaml"
submit_and_wait e2e.yaml
expect_contains "$(cat "$jobdir/e2e.pbs")" "#PBS -l select=2:ncpus=2:ngpus=2
#PBS -l place=scatter" "the script asks PBS for 2 chunks of 2 CPUs and 2 GPUs, one per host"
expect_eq "$STATUS" 0 "qstat -xf shows Exit_status = 0 for the job that succeeded"
expect_contains "$OUT" "ddpjob: job $JOB: 2 node(s), 2 worker(s) each, master n1, in $jobdir" "the job script found its 2 nodes and master n1"
for r in 0 1 2 3; do
    node=$((r / 2)) host=n$((r / 2 + 1)) local=$((r % 2))
    expect_contains "$OUT" "[rank $r] host=$host RANK=$r LOCAL_RANK=$local WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=$node GROUP_WORLD_SIZE=2 MASTER_ADDR=n1 TORCHELASTIC_RUN_ID=$JOB FROM_SPEC=from the spec sum=6 expected=6 cwd=$jobdir python=$home/tools/python3 setup=ran on $host" \
        "rank $r on $host: right environment, the all_reduce, in the submission directory, the login's python3, the setup run there"
done
expect_no_file "$jobdir/.ddpjob/$JOB" "the job's own files (token, node environment) are gone afterwards"

# After submit, on the real OpenPBS: status from qstat -x, logs from the job's record, list
# from another directory; once the server has dropped the job from its history, the record
# alone answers.
pj status "$JOB"
expect_contains "$OUT" "e2e (pbs job $JOB): completed, exit 0 (qstat F" "status of a finished PBS job: from qstat -x"
pj logs "$JOB" --rank 3
expect_contains "$OUT" "host=n2 RANK=3 LOCAL_RANK=1" "logs --rank 3: rank 3's lines from the record"
pj DIR=/ list
expect_contains "$OUT" "e2e (pbs job $JOB): completed" "list from another directory finds the job"
pbs_in pbshead "$PBS_EXEC/bin/qdel" -x "$JOB" >/dev/null 2>&1
for _ in $(seq 100); do [ -z "$(pbs_state "$JOB" job_state)" ] && break; sleep 0.2; done
pj status "$JOB"
expect_contains "$OUT" "e2e (pbs job $JOB): completed, exit 0 (qstat F, kept in its record" "after the server purged it: the record says it completed, as qstat had said it"
expect_contains "$OUT" "2 node(s), elapsed 00:0" "... on 2 nodes, and how long it ran (from the link's start and end)"


# The job in a Charliecloud image (the real ch-run; the user's own image folder) on both nodes:
# node 0's agent in the batch shell and node 1's through pbsdsh start every worker inside; a
# rank's failure is named as without a container, and nothing of it is left.
image_root "$home/image"
chown -R "$PBS_USER:" "$home/image"
cat >"$jobdir/inside.yaml" <<SPEC
name: inside
scheduler: pbs
nodes: 2
cpus_per_node: 2
procs_per_node: 2
walltime: "00:05:00"
container: {runtime: charliecloud, image: $home/image}
command: 'cat /etc/ddpjob-image; echo "host=\$(hostname) RANK=\$RANK WORLD_SIZE=\$WORLD_SIZE"; [ "\$RANK" != "\$FAIL_RANK" ] || exit 3; [ "\$FAIL_RANK" = none ] || exec sleep 60'
env: {FAIL_RANK: none}
SPEC
chown "$PBS_USER:" "$jobdir/inside.yaml"
submit_and_wait inside.yaml
expect_eq "$STATUS" 0 "a job in a Charliecloud image on 2 PBS nodes: Exit_status 0"
expect_eq "$(grep -c "inside the test's image" <<<"$OUT")" 4 "every rank ran inside the image"
expect_contains "$OUT" "[rank 3] host=n2 RANK=3 WORLD_SIZE=4" "node 1's ranks too, started through pbsdsh"
sed -i 's/FAIL_RANK: none/FAIL_RANK: "2"/' "$jobdir/inside.yaml"
submit_and_wait inside.yaml
expect_eq "$STATUS" 3 "rank 2 exiting 3 in the image: Exit_status 3"
pj status "$JOB"
expect_contains "$OUT" "rank 2 (node 1, host n2): exited with code 3" "status names the rank, node and host"
left=
for _ in $(seq 50); do
    left=$(for i in 1 2; do ip netns pids "$(pbs_ns "n$i")"; done | xargs -r ps -o user=,args= -p | grep -v '^root ')
    [ -z "$left" ] && break
    sleep 0.1
done
expect_eq "$left" "" "nothing of the container job (agents, ch-run, workers) is left on either node"

# A shared workdir (a sticky 1777 /scratch): another user, who made .ddpjob there first and the
# folder of the job's next id in it, both open to all, must not get to swap what the job's nodes
# run (node-env, sourced by every other node). submit refuses to keep its record there; a script
# rendered and given to qsub by hand refuses to run, naming the folder and its owner.
other=ddpjpbs2
id "$other" >/dev/null 2>&1 || useradd -M -p '*' -d /nonexistent -s /bin/bash "$other"
at_exit "userdel $other 2>/dev/null"
shared=$PBS_CLUSTER/scratch
mkdir -m 1777 "$shared"
cp "$jobdir/e2e.yaml" "$jobdir/env_ddp.py" "$shared/"
chmod 644 "$shared/e2e.yaml" "$shared/env_ddp.py"
next=$((${JOB%%.*} + 1))
runuser -u "$other" -- bash -c "umask 0 && mkdir $shared/.ddpjob && for i in \$(seq $next $((next + 4))); do mkdir $shared/.ddpjob/\$i.pbshead; done"
run_in_shared() { (cd "$shared" && pbs_as_user env DDPJOB_TEMPLATE_DIR="$PBS_CLUSTER/templates" "$@"); }
run run_in_shared "$bin/ddpjob" submit e2e.yaml --bindir "$bin"
expect_eq "$RC" 3 "submit in a shared workdir where another user owns .ddpjob fails"
expect_contains "$ERR" "$shared/.ddpjob: refusing a folder owned by $other (uid $(id -u "$other")), not by this user" \
    "naming the folder and its owner"
{ run_in_shared "$bin/ddpjob" render e2e.yaml --bindir "$bin" -o e2e.pbs &&
    run_in_shared qsub e2e.pbs; } >"$T/submit.out" 2>&1
JOB=$(tail -n 1 "$T/submit.out")
saved_jobdir=$jobdir jobdir=$shared
wait_job e2e.yaml
jobdir=$saved_jobdir
expect_eq "$STATUS" 1 "the script qsub'd by hand there ends with Exit_status = 1 (job $JOB)"
expect_contains "$OUT" "ddpjob: refusing $shared/.ddpjob on n1: not a folder of this user's own that others cannot write ($other, mode 777)" \
    "naming the folder, the host and its owner"
expect_lacks "$OUT" "[rank " "and no worker ran"
rm -rf "$shared"

# A team's folder (2770, setgid, no sticky bit; Gadi's /scratch/PROJECT), the user's, shared with
# another member of its group (issue 66). While node 0's batch shell runs the spec's setup, that
# member renames .ddpjob and plants node-env under the job's folder name: node 1's pbsdsh task,
# which sources node-env, refuses the planted folder (exit 126), the job fails naming it, and
# nothing of the member's runs as the user.
team=ddpjpbsteam
groupdel "$team" 2>/dev/null
groupadd "$team" && usermod -aG "$team" "$PBS_USER" && usermod -aG "$team" "$other"
at_exit "groupdel $team 2>/dev/null"
teamdir=$PBS_CLUSTER/team
mkdir -m 2770 "$teamdir"
chown "$PBS_USER:$team" "$teamdir"
chmod 2770 "$teamdir"
printf 'name: teamjob\nscheduler: pbs\nnodes: 2\nprocs_per_node: 1\nsetup: sleep 8\ncommand: [sh, -c, "echo ran on $(hostname)"]\n' \
    >"$teamdir/teamjob.yaml"
chown "$PBS_USER:" "$teamdir/teamjob.yaml"
(cd "$teamdir" && pbs_as_user env DDPJOB_TEMPLATE_DIR="$PBS_CLUSTER/templates" \
    "$bin/ddpjob" submit teamjob.yaml --bindir "$bin") >"$T/submit.out" 2>&1
JOB=$(tail -n 1 "$T/submit.out")
for _ in $(seq 200); do [ -e "$teamdir/.ddpjob/$JOB/node-env" ] && break; sleep 0.3; done
expect_file "$teamdir/.ddpjob/$JOB/node-env" "the team's job wrote node-env in its own folder (job $JOB)"
runuser -u "$other" -- bash -c 'cd "$1" && mv .ddpjob .ddpjob.gone && mkdir -p ".ddpjob/$2" &&
    printf "touch %s/pwned-\$(id -un)\nddpjob_node_setup() { :; }\n" "$1" >".ddpjob/$2/node-env" &&
    chmod -R a+rwx .ddpjob' _ "$teamdir" "$JOB" >"$T/attack.out" 2>&1
expect_eq "$?:$(cat "$T/attack.out")" "0:" "the group member renamed .ddpjob and planted node-env"
# Its output file goes to the user's own folder, not the team's, where PBS would write it by
# name as the user (a member could plant a link there).
expect_contains "$(cat "$T/submit.out")" "ddpjob: note: $teamdir (owner uid $(id -u "$PBS_USER"), mode 2770) is open to others: the scheduler, which follows links there, writes the job's output file into $home/.local/state/ddpjob/output instead" \
    "submit says the output file goes to the user's own folder, and why"
wait_job teamjob.yaml "$home/.local/state/ddpjob/output/$JOB.OU"
expect_eq "$(find "$teamdir" -maxdepth 1 -name 'teamjob.o*')" "" "no output file in the team's folder"
expect_eq "$(ls "$teamdir" | grep pwned)" "" "node 1 did not source the planted node-env"
expect_contains "$OUT" "ddpjob: node 1 (n2): refusing $teamdir/.ddpjob/$JOB on n2: not a folder of this user's own that others cannot write ($other, mode 2777)" \
    "node 1's task refused the planted folder, and the job's output names it, its owner and mode"
if [ -n "$STATUS" ] && [ "$STATUS" != 0 ]; then pass "and the job failed (Exit_status $STATUS)"; else fail "and the job failed" "Exit_status '$STATUS'" "$OUT"; fi
rm -rf "$teamdir"

# A spec without site: submitted to a PBS server a profile recognises takes that profile, and
# says so (the user's profile here: this server is pbshead).
mkdir -p "$home/.config/ddpjob/sites"
printf 'name: lab\npbs_resources: select\nrecognise: {pbs_server: [pbshead]}\ndefault_queue: workq\nqueues:\n  workq: {cores_per_node: 2, gpus_per_node: 2}\n' \
    >"$home/.config/ddpjob/sites/lab.yaml"
chown -R "$PBS_USER:" "$home/.config"
sed 's/^name: e2e/name: lab/' "$jobdir/e2e.yaml" >"$jobdir/lab.yaml"
chown "$PBS_USER:" "$jobdir/lab.yaml"
submit_and_wait lab.yaml
expect_contains "$(cat "$T/submit.out")" "site: note: the PBS server pbshead is site lab's ($home/.config/ddpjob/sites/lab.yaml recognises it)" \
    "submit asks qstat -B which server it is, takes the profile that recognises it and says so"
expect_eq "$STATUS" 0 "and the job runs to its end"
rm -rf "$home/.config/ddpjob/sites"

# ddpjob doctor through the scheduler: the same job's agents on both nodes, preflight only.
submit_and_wait e2e.yaml doctor e2e.yaml --submit
expect_eq "$STATUS" 0 "ddpjob doctor --submit: the job ends with Exit_status = 0"
expect_contains "$OUT" "ddpjob-agent: preflight: 2 node(s); 0 fact(s) that must agree differ" \
    "and its output holds node 0's preflight of both nodes"
expect_contains "$OUT" "torch          $(/usr/bin/python3 -c 'import importlib.metadata as m; print(m.version("torch"))') on every node" \
    "with the login's python3 and its torch on every node"
expect_lacks "$OUT" "[rank " "doctor starts no worker"

sed 's/env: {FROM_SPEC: "from the spec"}/env: {FROM_SPEC: "from the spec", FAIL_RANK: "3"}/' \
    "$jobdir/e2e.yaml" >"$jobdir/fail.yaml"
sed -i 's/^name: e2e/name: fail/' "$jobdir/fail.yaml"
chown "$PBS_USER:" "$jobdir/fail.yaml"
submit_and_wait fail.yaml
expect_eq "$STATUS" 3 "a rank that exits 3 on n2 ends the PBS job with Exit_status = 3"
expect_contains "$OUT" "job failed (exit 3): rank 3 (node 1, host n2, local rank 1) exited with code 3" \
    "and the job's output names the rank, node, host and code"
pj status "$JOB"
expect_contains "$OUT" "fail (pbs job $JOB): failed, exit 3" "status: failed, exit 3"
expect_contains "$OUT" "  rank 3 (node 1, host n2): exited with code 3" "status names rank 3, its host and code"
pj wait "$JOB"
expect_eq "$RC" 3 "wait on it exits with the job's status, 3"

# cancel of a chain whose successor is already queued: link 0 checkpoints (exits 75) while the
# scheduler is paused, so its successor waits in the queue; cancel must end both.
cat >"$jobdir/stop.yaml" <<SPEC
name: stop
scheduler: pbs
nodes: 2
procs_per_node: 1
cpus_per_node: 2
walltime: "00:05:00"
requeue: 3
command: [/bin/sh, -c, "sleep 2; exit 75"]
SPEC
chown "$PBS_USER:" "$jobdir/stop.yaml"
pj submit stop.yaml --bindir "$bin"
JOB=$(tail -n 1 <<<"$OUT")
record=$(ls -d "$jobdir"/.ddpjob/jobs/stop.* | tail -n 1)
for _ in $(seq 300); do [ -e "$record/link-0/started" ] && break; sleep 0.1; done
pbs_qmgr "set server scheduling=false"
for _ in $(seq 300); do [ "$(wc -l <"$record/links" 2>/dev/null)" -ge 3 ] && break; sleep 0.1; done
next=$(sed -n 's/^1 //p' "$record/links" | tail -n 1)
expect_eq "$(pbs_state "$next" job_state)" Q "link 0 checkpointed and its successor waits in the queue"
pj cancel stop
expect_eq "$RC" 0 "cancel of the chain exits 0"
pbs_qmgr "set server scheduling=true"
sleep 3
expect_eq "$(pbs_state "$next" job_state)/$(pbs_state "$JOB" job_state)" F/F "neither link runs again"
expect_no_file "$record/link-1/started" "the successor never started"
pj status stop
expect_contains "$OUT" "stop (pbs job $next): cancelled" "status of the chain: cancelled, at its queued successor"

# cancel of a running job: nothing of it is left on either node.
cat >"$jobdir/sleepy.yaml" <<SPEC
name: sleepy
scheduler: pbs
nodes: 2
procs_per_node: 2
cpus_per_node: 2
walltime: "00:05:00"
command: [/bin/sleep, "300.$$"]
SPEC
chown "$PBS_USER:" "$jobdir/sleepy.yaml"
pj submit sleepy.yaml --bindir "$bin"
JOB=$(tail -n 1 <<<"$OUT")
for _ in $(seq 600); do [ "$(pgrep -c -f "sleep 300.$$")" -ge 4 ] && break; sleep 0.1; done
pj status sleepy
expect_contains "$OUT" "sleepy (pbs job $JOB): running (qstat R" "status of a running PBS job: from qstat"
pj cancel sleepy
expect_eq "$RC" 0 "cancel of a running PBS job exits 0 once it has ended"
pj status sleepy
expect_contains "$OUT" "sleepy (pbs job $JOB): cancelled" "status afterwards: cancelled"
pj wait sleepy
expect_eq "$RC" 1 "wait on it exits 1"
for _ in $(seq 300); do pgrep -f "sleep 300.$$" >/dev/null || break; sleep 0.2; done
expect_lacks "$(pgrep -af "sleep 300.$$")" "sleep" "nothing of the cancelled job runs on any node"

# What status says of a job never changes once PBS forgets it (issue 72; ddpjob(1), STATES): five
# endings nobody asked ddpjob about while the server knew them (root reads PBS's own word with
# qstat -x, which keeps nothing), then each purged from the job history (qdel -x: as a server
# without history forgets a job at its end) and status asked. The kernel's OOM killer as sites
# with PBS's cgroup hook have it (Gadi): each MoM, and so every job it starts, in a real memory
# cgroup of 256 MiB, which one rank's 1 GiB passes.
. "$SRCDIR/tests/lib/cgroup.sh"
mom_groups=()
for i in $(seq "$PBS_CLUSTER_NODES"); do
    if mem_cgroup_make "ddpj-pbs-$$-n$i" 256M &&
        cat "$PBS_CLUSTER/n$i/mom_priv/mom.lock" >"$CGROUP/cgroup.procs"; then
        mom_groups+=("$CGROUP")
    else
        fail "n$i's MoM in a memory cgroup of 256 MiB" "${CGROUP_WHY:-could not move it}"
    fi
done
for ending in completed failed qdel timeout oom; do
    case $ending in
    completed) command="[sh, -c, 'sleep 2']" walltime=00:05:00 ;;
    failed) command="[sh, -c, 'sleep 2; exit 3']" walltime=00:05:00 ;;
    oom) command="[/usr/bin/python3, -c, 'bytearray(1 << 30)']" walltime=00:05:00 ;;
    *) command="[sleep, '300.$$']" walltime=00:01:00 ;;
    esac
    printf 'name: end-%s\nscheduler: pbs\nnodes: 1\ncpus_per_node: 1\nwalltime: "%s"\ncommand: %s\n' \
        "$ending" "$walltime" "$command" >"$jobdir/end-$ending.yaml"
    chown "$PBS_USER:" "$jobdir/end-$ending.yaml"
    pj submit "end-$ending.yaml" --bindir "$bin"
    eval "end_$ending=\$(tail -n 1 <<<\"\$OUT\")"
done
for _ in $(seq 600); do
    [ -n "$(ls -d "$jobdir"/.ddpjob/jobs/end-qdel.*/link-0/started 2>/dev/null)" ] && break
    sleep 0.2
done
pbs_in pbshead "$PBS_EXEC/bin/qdel" "$end_qdel"
for ending in completed failed qdel timeout oom; do
    eval "id=\$end_$ending"
    for _ in $(seq 900); do [ "$(pbs_state "$id" job_state)" = F ] && break; sleep 0.3; done
    said=$(pbs_state "$id" Exit_status)
    pbs_in pbshead "$PBS_EXEC/bin/qdel" -x "$id" >/dev/null 2>&1
    for _ in $(seq 100); do [ -z "$(pbs_state "$id" job_state)" ] && break; sleep 0.2; done
    case $ending:$said in
    completed:0 | failed:3 | qdel:271 | timeout:-29 | oom:137) pass "PBS's own word on the $ending job as it ended: Exit_status $said" ;;
    *) fail "PBS's own word on the $ending job as it ended" "Exit_status ${said:-none}" ;;
    esac
    case $ending in qdel) want=cancelled ;; oom) want="out of memory" ;; *) want=$ending ;; esac
    pj status "$id"
    expect_contains "$OUT" "end-$ending (pbs job $id): $want" \
        "... and status, once the server has forgotten it, says $want" "$ERR"
done
expect_contains "$OUT" "rank 0 (node 0, host n" "... the OOM-killed rank named"
expect_contains "$OUT" "killed by the out-of-memory killer" "... and what killed it"
for group in "${mom_groups[@]}"; do
    while read -r pid; do echo "$pid" >"${group%/*}/cgroup.procs"; done <"$group/cgroup.procs"
    cgroup_remove "$group"
done
# A failure before any worker starts (issue 72): a setup line that fails. No agent reports it;
# status, wait and logs say what the batch shell said, from the record's batch stream.
printf 'name: badsetup\nscheduler: pbs\nnodes: 1\ncpus_per_node: 1\nwalltime: "00:05:00"\nsetup: "echo preparing the nodes; no-such-tool-%s --init"\ncommand: [sh, -c, "echo never ran"]\n' $$ \
    >"$jobdir/badsetup.yaml"
chown "$PBS_USER:" "$jobdir/badsetup.yaml"
pj submit badsetup.yaml --bindir "$bin"
bad=$(tail -n 1 <<<"$OUT")
pj wait "$bad"
expect_eq "$RC" 127 "wait on a PBS job whose setup line fails: 127"
expect_contains "$ERR" "no-such-tool-$$: command not found" "... and it prints what the batch shell said"
pj status "$bad"
expect_contains "$OUT" "no agent reported a failure; the batch shell on n" "status: the batch shell's last lines, and its host"
expect_contains "$OUT" "no-such-tool-$$: command not found" "... which name the cause"
pj logs "$bad"
expect_contains "$OUT" "[batch] preparing the nodes" "logs of a job no rank wrote to: the batch stream"
# A job status looked at while PBS knew it: the state then is kept, and said the same after.
pbs_in pbshead "$PBS_EXEC/bin/qdel" -x "$JOB" >/dev/null 2>&1
for _ in $(seq 100); do [ -z "$(pbs_state "$JOB" job_state)" ] && break; sleep 0.2; done
pj status sleepy
expect_contains "$OUT" "sleepy (pbs job $JOB): cancelled" "the cancelled job, purged from the history: cancelled still"
expect_contains "$OUT" "kept in its record" "... as qstat said it, kept in its record"

# cancel --checkpoint: the request goes through the job's record to the batch script's
# supervisor, which signals node 0's agent; its workers checkpoint and the ranks agree to stop,
# so every rank exits 75; the job is not requeued, though its spec allows it.
cat >"$jobdir/stopsave.yaml" <<SPEC
name: stopsave
scheduler: pbs
nodes: 2
procs_per_node: 2
cpus_per_node: 2
walltime: "00:05:00"
checkpoint: {signal: USR1, before: 40}
requeue: 3
train: $(chain_train stopsave)
SPEC
chown "$PBS_USER:" "$jobdir/stopsave.yaml"
pj submit stopsave.yaml --bindir "$bin"
JOB=$(tail -n 1 <<<"$OUT")
for _ in $(seq 600); do
    pj logs "$JOB" --rank 0
    grep -q "epoch 1/$CHAIN_EPOCHS" <<<"$OUT" && break
    sleep 0.2
done
pj cancel "$JOB" --checkpoint
expect_eq "$RC" 0 "cancel --checkpoint of a PBS training job exits 0 once it has ended"
expect_contains "$OUT" "asked job $JOB to checkpoint (SIGUSR1)" "it asks the workers to checkpoint with the spec's signal"
pj status "$JOB"
expect_contains "$OUT" "stopsave (pbs job $JOB): cancelled, exit 75" "status: cancelled, exit 75 (every rank checkpointed)"
expect_contains "$OUT" "link 1 of 1" "and it was not requeued"
step=$("$TRAIN" inspect "$jobdir/stopsave/checkpoint.ddpt" 2>&1 | sed -n 's/^position .*, step \([0-9]*\)$/\1/p')
if [ -n "$step" ] && [ "$step" -gt 0 ] && [ "$step" -lt $((CHAIN_EPOCHS * 32)) ]; then
    pass "the checkpoint holds the step it stopped at, mid-training ($step)"
else
    fail "the checkpoint holds the step it stopped at, mid-training" "step: ${step:-none}"
fi

sed -e 's/FAIL_RANK: "3"/KILL_RANK: "2"/' -e 's/^name: fail/name: killed/' "$jobdir/fail.yaml" >"$jobdir/killed.yaml"
chown "$PBS_USER:" "$jobdir/killed.yaml"
submit_and_wait killed.yaml
expect_eq "$STATUS" 137 "a rank killed by SIGKILL on n2 ends the PBS job with Exit_status = 137"
expect_contains "$OUT" "job failed (exit 137): rank 2 (node 1, host n2, local rank 0) killed by SIGKILL" "and the job's output names the rank, node, host and signal"

# `launcher: ssh`: the batch shell's `ddpjob launch` starts both nodes' agents over SSH, as the
# user, with the user's key and known_hosts; each node runs Debian's sshd in its namespace.
mkdir -p /run/sshd "$home/.ssh"
ssh-keygen -q -t ed25519 -N '' -f "$home/.ssh/id_ed25519"
for i in 1 2; do
    sshd_host_config "$PBS_CLUSTER/ssh" "n$i" "10.78.0.$((10 + i))" >>"$home/.ssh/known_hosts"
    pbs_in "n$i" /usr/sbin/sshd -f "$PBS_CLUSTER/ssh/sshd-n$i.conf"
done
cp "$home/.ssh/id_ed25519.pub" "$PBS_CLUSTER/ssh/keys/authorized_keys"
# sshd reads the authorized keys as the user; the host keys stay root's alone.
chmod 755 "$PBS_CLUSTER/ssh" "$PBS_CLUSTER/ssh/keys"
chmod 644 "$PBS_CLUSTER/ssh/keys/authorized_keys"
chown -R "$PBS_USER:" "$home/.ssh"
# What the login gave the batch shell, a command over SSH does not get: the setup says it.
sed -e 's/^name: e2e/name: ssh/' -e 's/^setup: /setup: export PATH=$HOME\/tools:$PATH; /' \
    "$jobdir/e2e.yaml" >"$jobdir/ssh.yaml"
echo 'pbs: {launcher: ssh}' >>"$jobdir/ssh.yaml"
chown "$PBS_USER:" "$jobdir/ssh.yaml"
submit_and_wait ssh.yaml
expect_eq "$STATUS" 0 "launcher: ssh: the job started over SSH ends with Exit_status = 0"
expect_contains "$OUT" "ddpjob launch: job $JOB on 2 host(s), master n1:$((10000 + 2 * (${JOB%%.*} % 10000)))" \
    "ddpjob launch reads PBS_NODEFILE: 2 hosts, master n1, the port the job id gives"
for r in 0 1 2 3; do
    node=$((r / 2)) host=n$((r / 2 + 1)) local=$((r % 2))
    expect_contains "$OUT" "$host: [rank $r] host=$host RANK=$r LOCAL_RANK=$local WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=$node GROUP_WORLD_SIZE=2 MASTER_ADDR=n1 TORCHELASTIC_RUN_ID=$JOB FROM_SPEC=from the spec sum=6 expected=6 cwd=$jobdir python=$home/tools/python3 setup=ran on $host" \
        "launcher: ssh: rank $r on $host: right environment, the all_reduce, in the submission directory, the setup run there"
done
expect_no_file "$jobdir/.ddpjob/$JOB" "launcher: ssh: the job's own files (the node script) are gone afterwards"
sed -e 's/^name: ssh/name: sshfail/' -e 's/env: {FROM_SPEC: "from the spec"}/env: {FROM_SPEC: "from the spec", FAIL_RANK: "3"}/' \
    "$jobdir/ssh.yaml" >"$jobdir/sshfail.yaml"
chown "$PBS_USER:" "$jobdir/sshfail.yaml"
submit_and_wait sshfail.yaml
expect_eq "$STATUS" 3 "launcher: ssh: a rank that exits 3 on n2 ends the PBS job with Exit_status = 3"
expect_contains "$OUT" "job failed (exit 3): rank 3 (node 1, host n2, local rank 1) exited with code 3" \
    "and the job's output names the rank, node, host and code"
pj status "$JOB"
expect_contains "$OUT" "  rank 3 (node 1, host n2): exited with code 3" \
    "launcher: ssh: status names rank 3 from the agents' reports in the record"
pj logs "$JOB" --rank 3
expect_contains "$OUT" "host=n2 RANK=3 LOCAL_RANK=1" "launcher: ssh: logs --rank 3 from the record"

# Node 1's agent is missing on n2 alone: its MoM's mount namespace hides the programs' directory.
mkdir -p "$PBS_CLUSTER/empty"
nsenter --mount --target "$(cat "$PBS_CLUSTER/n2/mom_priv/mom.lock")" mount --bind "$PBS_CLUSTER/empty" "$bin"
sed 's/^name: e2e/name: lost/' "$jobdir/e2e.yaml" >"$jobdir/lost.yaml"
chown "$PBS_USER:" "$jobdir/lost.yaml"
started=$SECONDS
submit_and_wait lost.yaml
nsenter --mount --target "$(cat "$PBS_CLUSTER/n2/mom_priv/mom.lock")" umount "$bin"
expect_eq "$STATUS" 127 "a node whose agent cannot start ends the PBS job with its status (127)"
if grep -qF -e "ddpjob: node 1 (n2): line " <<<"$OUT" &&
    grep -q "^ddpjob: node 1 (n2): line [0-9]*: $bin/ddpjob-agent: No such file or directory" <<<"$OUT"; then
    pass "the job's output says why, naming the node"
else
    fail "the job's output says why, naming the node" "$OUT"
fi
expect_contains "$OUT" "ddpjob: node 1 (n2): its agent could not start (status 127; its output is above); stopping the job" \
    "and that the job stopped for it"
if [ $((SECONDS - started)) -lt 60 ]; then
    pass "... at once, not at the rendezvous timeout (300 s)"
else
    fail "... at once, not at the rendezvous timeout (300 s)" "took $((SECONDS - started)) s"
fi

# The walltime contract on PBS, which warns of nothing before its limit: the agents send the
# checkpoint signal 40 s before the 1-minute walltime, ddp-train checkpoints and every rank exits
# 75, and the batch script submits its successor, which resumes; until the training is done. The
# chain's last checkpoint equals an uninterrupted run's.
cat >"$jobdir/chain.yaml" <<SPEC
name: chain
scheduler: pbs
nodes: 2
procs_per_node: 2
cpus_per_node: 2
walltime: "00:01:00"
checkpoint: {signal: USR1, before: 40}
# 2 links at least (chain_train); a slower or busier machine needs more.
requeue: 10
# One BLAS kernel for the chain and the reference run (OpenBLAS picks by CPU and environment).
env: {OPENBLAS_CORETYPE: Haswell}
train: $(chain_train ckpt)
SPEC
chown "$PBS_USER:" "$jobdir/chain.yaml"
submit_and_wait chain.yaml
links=1 chain=$OUT
while next=$(sed -n 's/.*its successor \([^ ]*\) resumes it.*/\1/p' <<<"$OUT") && [ -n "$next" ] && [ "$links" -lt 11 ]; do
    JOB=$next
    local_deadline=$((SECONDS + 120))
    while [ "$(pbs_state "$JOB" job_state)" != F ] && [ "$SECONDS" -lt "$local_deadline" ]; do sleep 0.5; done
    OUT=$(cat "$jobdir/chain.o${JOB%%.*}" 2>/dev/null)
    chain+=$'\n'"$OUT"
    links=$((links + 1))
done
expect_contains "$chain" "its successor" "a link stopped by the checkpoint signal submits its successor"
expect_contains "$chain" "ddpjob: requeue 1 of 10 (job" "which knows its place in the chain"
expect_contains "$chain" "[rank 0] ddp-train: resuming from ckpt/checkpoint.ddpt at epoch" "and resumes from the checkpoint"
expect_contains "$chain" "trained after $CHAIN_EPOCHS of $CHAIN_EPOCHS epochs" "the chain of $links PBS jobs trains to the end"
expect_eq "$(pbs_state "$JOB" Exit_status)" 0 "and its last job ends with Exit_status = 0"
pj status chain
expect_contains "$OUT" "chain (pbs job $JOB): completed, exit 0" "status of the chain, by its name: completed at its last job"
expect_contains "$OUT" "link $links of $links" "... link $links of $links"
expect_contains "$OUT" "  last steps (20" "... with each rank's last step, from node 0's report (--progress-file)"
pj wait chain
expect_eq "$RC" 0 "wait on the chain exits 0"
pbs_in pbshead "$PBS_EXEC/bin/qdel" -x "$JOB" >/dev/null 2>&1
for _ in $(seq 100); do [ -z "$(pbs_state "$JOB" job_state)" ] && break; sleep 0.2; done
pj status chain
expect_contains "$OUT" "chain (pbs job $JOB): completed, exit 0 (qstat F" "purged from the history: completed still, as qstat said it"
pj logs chain --rank 0 --link 1
expect_contains "$OUT" "epoch 1/$CHAIN_EPOCHS" "logs --link 1: the first job's lines"
pj logs chain --rank 0 --link "$links"
expect_contains "$OUT" "resuming from ckpt/checkpoint.ddpt" "logs --link $links: the last job's lines"
# The chain's report, opened in a real headless Chromium: every link on the time axis, each but
# the last with its checkpoint, a line per rank, the training's metrics.
pj report chain -o "$home/chain.html"
expect_eq "$RC" 0 "report of the chain exits 0"
dom=$(browser_dom "$home/chain.html")
for k in $(seq "$links"); do
    expect_contains "$dom" "<g class=\"link\" data-link=\"$k\">" "the report's chain shows link $k of $links"
done
# Each link but the last stopped with its checkpoints: by the agents' signal before the walltime,
# or, when a loaded machine's start took that long, by PBS's own SIGTERM at it.
checkpoints=$(grep -c '<path class="event checkpoint"' <<<"$dom")
if [ "$checkpoints" = $((links - 1)) ]; then pass "a checkpoint on each link but the last, on the chain"; else
    fail "a checkpoint on each link but the last, on the chain" "$checkpoints of $((links - 1))" \
        "$(grep -h '"event"' "$jobdir"/.ddpjob/jobs/chain.*/link-*/history.jsonl 2>&1)"
fi
expect_contains "$dom" "checkpointed, requeued" "the links that checkpointed, said so"
expect_eq "$(grep -c '<path class="rank" data-rank=' <<<"$dom")" 4 "a line per rank, 4 of them"
expect_contains "$dom" 'aria-label="loss"' "ddp-train's metrics, over the links"
expect_eq "$(browser_errors)" "" "Chromium reports no error"
REFERENCE_HOSTS=("$(pbs_ns n1)" "$(pbs_ns n2)") REFERENCE_MASTER=10.78.0.11
expect_same_as_uninterrupted "$jobdir/ckpt/checkpoint.ddpt" "the PBS chain's final checkpoint = an uninterrupted run's" "$chain"

# A user without root installs the release bundle in their home (scripts/bundle.sh, its
# install.sh), puts its modulefiles on MODULEPATH in their profile, and submits with its ddpjob a
# spec whose modules: loads ddpjob on every node (the real environment-modules): the nodes run
# the bundle's static agent; nothing of the suite's programs is used.
if ! bundle=$(bash "$SRCDIR/scripts/bundle.sh" "$T" 2>"$T/bundle.err"); then
    fail "scripts/bundle.sh builds the bundle" "$(tail -n 20 "$T/bundle.err")"
else
    cp "$bundle" "$home/tools/"
    chown "$PBS_USER:" "$home/tools/$(basename "$bundle")"
    unpacked=$home/tools/$(basename "$bundle" .tar.gz)
    # From the user's home: pbs_as_user starts in the current directory, which may be closed
    # to them (a clone under a private temporary directory).
    (cd "$home" && pbs_as_user tar -xzf "$unpacked.tar.gz" -C "$home/tools" &&
        pbs_as_user "$unpacked/install.sh" "$home/tools/ddpjob") >"$T/install.out" 2>&1
    echo "export MODULEPATH=$home/tools/ddpjob/share/ddpjob/modulefiles" >>"$home/.bash_profile"
    sed -e 's/^name: e2e/name: bundled/' -e 's/^setup: .*/setup: export FROM_SETUP="$DDPJOB_ROOT on $(hostname)"/' \
        "$jobdir/e2e.yaml" >"$jobdir/bundled.yaml"
    echo 'modules: [ddpjob]' >>"$jobdir/bundled.yaml"
    chown "$PBS_USER:" "$jobdir/bundled.yaml"
    INSTALLED=$home/tools/ddpjob submit_and_wait bundled.yaml
    if [ "$STATUS" = 0 ]; then
        pass "the bundle installed by the user, modules: [ddpjob]: the 2-node job ends with Exit_status = 0"
    else
        fail "the bundle installed by the user, modules: [ddpjob]: the 2-node job ends with Exit_status = 0" \
            "Exit_status: $STATUS" "install: $(cat "$T/install.out")" "submit: $(cat "$T/submit.out")"
    fi
    expect_contains "$(cat "$jobdir/bundled.pbs")" "$home/tools/ddpjob/bin/ddpjob-agent" "its script starts the bundle's agent"
    for r in 0 3; do
        host=n$((r / 2 + 1))
        expect_contains "$OUT" "[rank $r] host=$host RANK=$r" "rank $r ran on $host"
        expect_contains "$OUT" "setup=$home/tools/ddpjob on $host" "module load ddpjob set DDPJOB_ROOT on $host"
    done
fi

# Spares: a spec with `nodes: 2` and `spares: 1` (select=3, -W tolerate_node_failures=all,
# pbs-agents --spares) loses node 1 (n2) once its first checkpoint is written: its agent killed,
# its MoM killed, its link cut, the whole node frozen (every process on it stopped). The job must end with Exit_status 0 and the final checkpoint of an
# uninterrupted run; where node 1 was lost to the job, the spare on n3 takes its place.
n2_agent() {
    local pid
    for pid in $(ip netns pids "$(pbs_ns n2)"); do
        [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = ddpjob-agent ] && echo "$pid" && return
    done
}
CHAIN_EPOCHS=6
for loss in "agent killed" "MoM killed" "link cut" "node frozen"; do
    ckpt=$jobdir/ckpt-${loss// /-}
    spares_spec pbs "$ckpt" 1 >"$jobdir/spares.yaml"
    chown "$PBS_USER:" "$jobdir/spares.yaml"
    submit_job spares.yaml
    for _ in $(seq 600); do [ -s "$ckpt/checkpoint.ddpt" ] && [ -n "$(n2_agent)" ] && break; sleep 0.1; done
    case $loss in
    "agent killed") kill -9 "$(n2_agent)" ;;
    "MoM killed") kill -9 "$(cat "$PBS_CLUSTER/n2/mom_priv/mom.lock")" ;;
    "link cut") ip -n "$(pbs_ns pbshead)" link set v2 down ;;
    "node frozen")
        frozen=$(ip netns pids "$(pbs_ns n2)")
        # shellcheck disable=SC2086
        kill -STOP $frozen
        ;;
    esac
    if [ "$loss" = "node frozen" ]; then
        # Found: the batch script ends with the training, but PBS does not finish the job while
        # the frozen sister's MoM cannot answer (qstat itself may wait on it): let it go once the
        # script on n1 has ended (120 s at most).
        until_at=$((SECONDS + 120))
        while [ "$SECONDS" -lt "$until_at" ] &&
            ip netns pids "$(pbs_ns n1)" | xargs -r ps -o user= -p | grep -q "^$PBS_USER"; do
            sleep 0.2
        done
        echo "# node frozen: the script on n1 ended after $((SECONDS - until_at + 120)) s; the job then: $(pbs_in pbshead timeout 10 "$PBS_EXEC/bin/qstat" -x "$JOB" 2>&1 | tail -n 1)"
        # shellcheck disable=SC2086
        kill -CONT $frozen
    fi
    wait_job spares.yaml
    ip -n "$(pbs_ns pbshead)" link set v2 up
    echo "# $loss: Exit_status $STATUS; n2 $(pbs_in pbshead "$PBS_EXEC/bin/pbsnodes" n2 2>/dev/null | sed -n 's/^ *state = //p')"
    grep -h "${JOB%%.*}\.pbshead" "$PBS_CLUSTER"/n1/mom_logs/* 2>/dev/null | grep -i "node\|sister\|EOF" | tail -n 3 | sed 's/^/#   /'
    expect_eq "$STATUS" 0 "spares, $loss: the job ends with Exit_status 0" "$OUT"
    expect_contains "$OUT" "2 node(s) and 1 spare(s)" "spares, $loss: the script asked for the spare"
    if [ "$loss" = "MoM killed" ]; then
        expect_lacks "$OUT" "takes the place of" "spares, $loss: the job's processes on n2 went on: nothing was replaced"
        pbs_in n2 /etc/init.d/pbs start >>"$T/cluster.log" 2>&1
    else
        expect_contains "$OUT" "node rank 1: n3 (slot 2) takes the place of n2 (slot 1)" "spares, $loss: n3 took node 1's place"
        expect_contains "$OUT" "resuming from $ckpt/checkpoint.ddpt" "spares, $loss: training resumed from its checkpoint"
    fi
    REFERENCE_HOSTS=("$(pbs_ns n1)" "$(pbs_ns n2)") REFERENCE_MASTER=10.78.0.11
    expect_same_as_uninterrupted "$ckpt/checkpoint.ddpt" "spares, $loss: the final checkpoint = an uninterrupted run's"
done

# no_spare_job NAME [SED]: the spares job without a spare (so without -W tolerate_node_failures=
# all; 20 epochs, half a minute: time for the mother superior to poll its sisters), SED applied to
# its spec, submitted as NAME once every node is free again and run past its first checkpoint:
# JOB, and its second node in sister.
no_spare_job() {
    CHAIN_EPOCHS=20 spares_spec pbs "$jobdir/ckpt-$1" 0 | sed "s/^name: spares/name: $1/; ${2:-}" >"$jobdir/$1.yaml"
    chown "$PBS_USER:" "$jobdir/$1.yaml"
    for _ in $(seq 600); do
        [ "$(pbs_in pbshead "$PBS_EXEC/bin/pbsnodes" -a 2>/dev/null | grep -c 'state = free')" = 3 ] && break
        sleep 0.1
    done
    submit_job "$1.yaml"
    for _ in $(seq 600); do [ -s "$jobdir/ckpt-$1/checkpoint.ddpt" ] && break; sleep 0.1; done
    sister=$(pbs_state "$JOB" exec_host | tr '+' '\n' | sed -n '2s|/.*||p')
}

# Losing a sister's MoM: what PBS itself does to a job when a sister's MoM goes away.
no_spare_job nospare
kill -9 "$(cat "$PBS_CLUSTER/$sister/mom_priv/mom.lock")"
wait_job nospare.yaml
pbs_in "$sister" /etc/init.d/pbs start >>"$T/cluster.log" 2>&1
eof=$(grep -h "${JOB%%.*}\.pbshead" "$PBS_CLUSTER"/n1/mom_logs/* 2>/dev/null | grep -i -m3 "EOF\|sister\|kill")
echo "# no spares, $sister's MoM killed: Exit_status $STATUS, run_count $(pbs_state "$JOB" run_count)"
grep "ddpjob" <<<"$OUT" | tail -n 4 | sed 's/^/#   /'
# Found: OpenPBS 23.06 keeps the job ("im_eof, lost communication with n2, not killing job yet");
# its pbsdsh task for the node ends, which pbs-agents (without --spares) takes as the node's end.
expect_contains "$eof" "lost communication with $sister, not killing job yet" \
    "no spares, a sister's MoM killed: the mother superior keeps the job"

# A node lost without a spare (its link cut, for 20 s): the agents end the job naming the node
# they lost. status says node failure while PBS knows the job and once it is purged.
no_spare_job cut 's/^max_restarts: 2/max_restarts: 0/'
ip -n "$(pbs_ns pbshead)" link set "v${sister#n}" down
sleep 20
ip -n "$(pbs_ns pbshead)" link set "v${sister#n}" up
wait_job cut.yaml
echo "# node lost, no spare: Exit_status $STATUS"
pj status "$JOB"
expect_contains "$OUT" "cut (pbs job $JOB): node failure" "node lost without a spare: status says node failure while PBS knows the job" "$ERR"
expect_contains "$OUT" "(host $sister)" "... naming the node's host"
pbs_in pbshead "$PBS_EXEC/bin/qdel" -x "$JOB" >/dev/null 2>&1
for _ in $(seq 100); do [ -z "$(pbs_state "$JOB" job_state)" ] && break; sleep 0.2; done
pj status "$JOB"
expect_contains "$OUT" "cut (pbs job $JOB): node failure" "... and node failure still once PBS has purged it" "$ERR"

left=$(for i in 1 2 3; do ip netns pids "$(pbs_ns "n$i")"; done | xargs -r ps -o user=,args= -p | grep -v '^root ')
expect_eq "$left" "" "nothing of the jobs is left running on any node"
# What this cluster started, and only that: another suite's cluster may run beside it.
cluster=$PBS_CLUSTER
pbs_cluster_down
left=$(grep -lsz "^PBS_CLUSTER=$cluster\$" /proc/[0-9]*/environ | xargs -r ls -l 2>/dev/null;
    pgrep -af "$cluster" || true)
expect_eq "$left" "" "and nothing of the cluster is left once it is stopped"

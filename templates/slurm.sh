#!/bin/bash
{{! ddpjob's Slurm job script. Sites may copy this file, adjust it and render with
    `ddpjob render --template FILE`. Every value arrives already shell-quoted where it reaches
    the shell; directive values were checked to hold no blanks or newlines. }}
{{> generated_by}}
#SBATCH --job-name={{name}}
#SBATCH --nodes={{alloc_nodes}}
{{#spares}}
{{! Spares: a node that fails must not end the job (sbatch --no-kill); the agents replace it. }}
#SBATCH --no-kill
{{/spares}}
{{#hold_pack}}
{{! A packed sweep's allocation: a node that fails takes only the trials on it (the holder asks
    them again on the others), not the allocation. }}
#SBATCH --no-kill
{{/hold_pack}}
#SBATCH --ntasks-per-node=1
{{#gpus_per_node}}
#SBATCH --gpus-per-node={{gpus_per_node}}
{{/gpus_per_node}}
{{#cpus_per_node}}
#SBATCH --cpus-per-task={{cpus_per_node}}
{{/cpus_per_node}}
{{#mem}}
#SBATCH --mem={{mem}}
{{/mem}}
{{#time}}
#SBATCH --time={{time}}
{{/time}}
{{#queue}}
#SBATCH --partition={{queue}}
{{/queue}}
{{#project}}
#SBATCH --account={{project}}
{{/project}}
{{#constraint}}
#SBATCH --constraint={{constraint}}
{{/constraint}}
{{#exclusive}}
#SBATCH --exclusive
{{/exclusive}}
#SBATCH --output=%x-%j.out
{{#mail_user}}
#SBATCH --mail-user={{mail_user}}
#SBATCH --mail-type={{mail_events}}
{{/mail_user}}
{{! No --signal: Slurm would signal every process of the step, the workers too, and the agent
    would forward it again. The agent sends the spec's checkpoint signal itself, once. }}
{{#requeue}}
#SBATCH --requeue
#SBATCH --open-mode=append
{{/requeue}}
{{#directives}}
#SBATCH {{directive}}
{{/directives}}

{{> batch_shell}}

# This job's place in a chain of requeues; a sweep's array task is known by ARRAY_TASK, as squeue,
# sacct and scancel name it. The record first, so that it hears of whatever fails after.
{{#held_run}}
# A run in a held allocation: its link, from its holder (one asked again goes on as the next).
ddpjob_requeue=${DDPJOB_HELD_LINK:-0}
{{/held_run}}
{{^held_run}}
ddpjob_requeue=${SLURM_RESTART_COUNT:-0}
{{/held_run}}
ddpjob_jobid=${SLURM_ARRAY_JOB_ID:+${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}}
ddpjob_jobid=${ddpjob_jobid:-$SLURM_JOB_ID}
ddpjob_deadline=
# What a signal from outside meant: Slurm's own state for the job by then (TIMEOUT, CANCELLED,
# NODE_FAIL, PREEMPTED), else whether the walltime had come.
ddpjob_ended_by() {
    local state
    state=$(timeout 10 scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null | grep -o ' JobState=[A-Z_]*') || state=
    case ${state# JobState=} in
    '' | RUNNING | COMPLETING | CONFIGURING | SUSPENDED) ddpjob_by_walltime ;;
    *) echo "sched=${state# JobState=}" ;;
    esac
}

{{> job_record}}

# What every node runs before its agent starts: modules, the spec's setup, its environment.
ddpjob_node_setup() {
    {{> node_setup}}
{{#workdir}}
    cd -- {{workdir}}
{{/workdir}}
    :
}
{{^hold}}
# Each srun task runs the node setup, then the agent. Node 0's agent knows the job's outcome: its
# task writes its status into a file this script (on node 0's host too) reads, and watches
# (ddpjob_step_watch). With spares a lost node's or a spare's own end does not decide the job, so
# only node 0's status reaches srun. The file is in a folder made fresh for it: in a shared /tmp a
# name of its own would be another user's to plant. The task's shell outlives the signals Slurm
# sends every process of the step (scancel --signal, the walltime's TERM): the agent takes them,
# and the shell then reports the agent's status.
ddpjob_status_dir=$(mktemp -d "${TMPDIR:-/tmp}/ddpjob-$SLURM_JOB_ID.XXXXXX") ||
    ddpjob_fail "cannot make a folder under ${TMPDIR:-/tmp} for node 0's status"
ddpjob_status_file=$ddpjob_status_dir/status
ddpjob_node_cmd="$(declare -f ddpjob_node_setup)
ddpjob_node_setup
trap : HUP INT QUIT TERM USR1 USR2 ALRM URG{{#checkpoint_signal}} {{checkpoint_signal}}{{/checkpoint_signal}}
\"\$@\"
s=\$?
[ \"\$SLURM_NODEID\" = 0 ] || exit {{#spares}}0{{/spares}}{{^spares}}\$s{{/spares}}
echo \$s >$(printf %q "$ddpjob_status_file")
exit \$s"
# ddpjob_step_watch PID: srun (PID) waits for every task of its step, and one on a node Slurm has
# not found unreachable (its link down for less than SlurmdTimeout) keeps it waiting after node 0's
# agent has ended the job, until the walltime. 60 s after node 0's status, srun is ended. Its
# sleeps hold none of the job's output open: one left when the watch is ended would keep the
# batch log's copies (and the script's end) waiting for it.
ddpjob_step_watch() {
    local waited=0
    while kill -0 "$1" 2>/dev/null && [ ! -s "$ddpjob_status_file" ]; do sleep 2 >/dev/null 2>&1; done
    while kill -0 "$1" 2>/dev/null && [ "$waited" -lt 60 ]; do
        sleep 2 >/dev/null 2>&1
        waited=$((waited + 2))
    done
    kill -0 "$1" 2>/dev/null || return 0
    echo "ddpjob: node 0's agent ended the job (status $(cat "$ddpjob_status_file")) 60 s ago, but srun still waits for a task of the step (on a node Slurm cannot reach?): ending srun" >&2
    kill -KILL "$1"
}
{{/hold}}

ddpjob_node_setup

# The master is the first node of the allocation, read by our own hostlist code.
{{#held_run}}
# A run in an allocation `ddpjob dev` holds (or a packed trial): the nodes its holder gave it.
ddpjob_nodes=$({{ddpjob}} nodes --slurm "${DDPJOB_HELD_NODES:?not started by the holder of an allocation}") ||
    ddpjob_fail "cannot read DDPJOB_HELD_NODES=$DDPJOB_HELD_NODES"
{{/held_run}}
{{^held_run}}
ddpjob_nodes=$({{ddpjob}} nodes --slurm "${SLURM_JOB_NODELIST:?not inside a Slurm job}") ||
    ddpjob_fail "cannot read SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST"
{{/held_run}}
mapfile -t ddpjob_hosts <<<"$ddpjob_nodes"
[ "${#ddpjob_hosts[@]}" -eq {{alloc_nodes}} ] ||
    ddpjob_fail "expected {{alloc_nodes}} nodes, Slurm gave ${#ddpjob_hosts[@]} ($SLURM_JOB_NODELIST)"
ddpjob_master=${ddpjob_hosts[0]}

# The job token reaches the agents through srun's environment; it is never written to disk.
DDPJOB_TOKEN=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export DDPJOB_TOKEN
echo "ddpjob: job $SLURM_JOB_ID: {{nodes}} node(s){{#spares}} and {{spares}} spare(s){{/spares}}, {{procs_per_node}} worker(s) each, master $ddpjob_master"

# When Slurm ends the job (its own end time, else the start plus the walltime), for the agents'
# checkpoint signal.
ddpjob_walltime_args=()
{{#held_run}}
# A run in a held allocation ends with it: the allocation's end, from its holder (no squeue of
# its own: a packed trial's start waits for none).
ddpjob_deadline=${DDPJOB_HELD_DEADLINE:-}
{{/held_run}}
{{^held_run}}
# Only while it runs: a job cancelled before this asks has the cancel's time as its end, which
# would make its signal look like the walltime's.
ddpjob_end=$(squeue -h -j "$SLURM_JOB_ID" -o '%T %e' 2>/dev/null) || ddpjob_end=
case $ddpjob_end in
'RUNNING '[0-9]*) ddpjob_deadline=$(date -d "${ddpjob_end#RUNNING }" +%s 2>/dev/null) || ddpjob_deadline= ;;
*) ddpjob_deadline= ;;
esac
{{/held_run}}
{{#walltime_s}}
[ -n "$ddpjob_deadline" ] || ddpjob_deadline=$(($(date +%s) + {{walltime_s}}))
{{/walltime_s}}
[ -z "$ddpjob_deadline" ] || ddpjob_walltime_args+=(--deadline "$ddpjob_deadline")
{{#hold}}
# `ddpjob shell`'s node side: a step on that node beside a run's (--overlap).
ddpjob_node_exec='srun --overlap --nodes=1 --ntasks=1 --nodelist=%h'
{{/hold}}
{{> dev_hold}}
{{^hold}}
ddpjob_resume=()
{{#requeue}}
if [ "$ddpjob_requeue" -gt 0 ]; then
    echo "ddpjob: requeue $ddpjob_requeue of {{requeue}} of job $SLURM_JOB_ID, resuming"
{{#train_resumes}}
    ddpjob_resume=(--resume)
{{/train_resumes}}
fi
{{/requeue}}

{{#pyxis_image}}
# pyxis (srun --container-image) starts each node's setup and agent inside the image, and the
# agent its workers there: the agent is static, so any image runs it. Bound at their own paths:
# ddpjob's programs, the spec's folders and mounts, this folder, the job's record and the folder
# of node 0's status. No --container-name: each step's container is its own
# and is removed when the step ends, so a requeued or restarted job never meets the last one's.
case $PWD in *,*) ddpjob_fail "pyxis takes its mounts as one comma-separated list: this folder's name has a comma ($PWD)" ;; esac
ddpjob_container_mounts={{pyxis_mounts}},$PWD
[ -z "${DDPJOB_RECORD:-}" ] || ddpjob_container_mounts+=,$DDPJOB_RECORD
ddpjob_container_mounts+=,$ddpjob_status_dir
ddpjob_container_args=(--container-image={{pyxis_image}} "--container-mounts=$ddpjob_container_mounts" "--container-workdir=$PWD")
{{#requeue}}
# A requeued link numbers its steps from 0 again, and pyxis names a step's container after them
# (pyxis_JOB.STEP): one that a node lost mid-step left under this job's id would refuse this
# link's ("File already exists"). Each node removes this job's first.
if [ "$ddpjob_requeue" -gt 0 ]; then
    srun --nodes={{alloc_nodes}} --ntasks={{alloc_nodes}} --ntasks-per-node=1 /bin/sh -c \
        'enroot list 2>/dev/null | grep "^pyxis_${SLURM_JOB_ID}\." | xargs -r enroot remove -f >/dev/null' ||
        echo "ddpjob: could not look for containers the last link left (enroot list/remove failed)" >&2
fi
{{/requeue}}
{{/pyxis_image}}
# Each agent reads the rest from Slurm: the nodes, its own rank, the master (the first node), the
# run id and the rendezvous port, both from the job id.
# Every CPU the job has on a node is its agent's, for its workers, said to srun: a step that
# names none gets one CPU per task where steps are exact (srun --exact, SLURM_EXACT, newer
# Slurm's defaults; Slurm 22.05 to 23.02 do not pass the batch job's --cpus-per-task on), bound
# to it where cores are constrained (TaskPlugin task/affinity,task/cgroup, ConstrainCores=yes).
ddpjob_step_cpus={{#cpus_per_node}}{{cpus_per_node}}{{/cpus_per_node}}{{^cpus_per_node}}${SLURM_CPUS_ON_NODE:-1}{{/cpus_per_node}}
{{#spares}}
# With spares, a task that ends (a lost node's agent) must not end the step: the others go on
# (--kill-on-bad-exit=0), and a failed node does not end it either (--no-kill).
{{/spares}}
# The node command carries the spec's env: and setup: values: it reaches each task through srun's
# environment (this user's alone to read), never on a command line anyone's `ps` shows.
export DDPJOB_NODE_CMD=$ddpjob_node_cmd
srun {{#pyxis_image}}"${ddpjob_container_args[@]}" {{/pyxis_image}}--nodes={{alloc_nodes}} --ntasks={{alloc_nodes}} --ntasks-per-node=1 {{#held_run}}--nodelist="$DDPJOB_HELD_NODES" {{/held_run}}--cpus-per-task="$ddpjob_step_cpus" {{#gpus_per_node}}--gpus-per-node={{gpus_per_node}} {{/gpus_per_node}}{{#spares}}--kill-on-bad-exit=0 --no-kill{{/spares}}{{^spares}}--kill-on-bad-exit=1{{/spares}} \
    /bin/bash -c 'ddpjob_node_cmd=$DDPJOB_NODE_CMD; unset DDPJOB_NODE_CMD; eval "$ddpjob_node_cmd"' ddpjob-node \
    {{agent}} {{#spares}}--nnodes {{nodes}} --spares {{spares}} {{/spares}}--nproc-per-node {{procs_per_node}} {{#master_port}}--master-port {{master_port}} {{/master_port}}\
    "${ddpjob_walltime_args[@]}" --requeue-count "$ddpjob_requeue"{{agent_args}} \
    "${ddpjob_record_args[@]}" -- {{command}} "${ddpjob_resume[@]}" &
ddpjob_srun=$!
ddpjob_step_watch "$ddpjob_srun" &
ddpjob_watch=$!
ddpjob_wait "$ddpjob_srun"
kill "$ddpjob_watch" 2>/dev/null
[ ! -s "$ddpjob_status_file" ] || ddpjob_status=$(cat "$ddpjob_status_file")
rm -rf "$ddpjob_status_dir"
{{/hold}}
{{#requeue}}
# 75: every rank checkpointed on request. The same job id goes back to the queue and resumes.
if [ "$ddpjob_status" -eq 75 ] && [ "$ddpjob_requeue" -lt {{requeue}} ]; then
    if ddpjob_cancelled; then
        echo "ddpjob: job $SLURM_JOB_ID stopped with every rank's checkpoint written; cancelled, so not requeued"
    else
        echo "ddpjob: job $SLURM_JOB_ID stopped with every rank's checkpoint written; requeueing it ($((ddpjob_requeue + 1)) of {{requeue}})"
        scontrol requeue "$SLURM_JOB_ID" ||
            echo "ddpjob: scontrol requeue $SLURM_JOB_ID failed; resume by hand: sbatch the script again (the checkpoints are written)" >&2
    fi
fi
{{/requeue}}
ddpjob_exit "$ddpjob_status"

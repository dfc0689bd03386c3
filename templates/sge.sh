#!/bin/bash
{{! ddpjob's Grid Engine job script (Son of Grid Engine, gridengine 8.1, Altair Grid Engine, Open
    Cluster Scheduler). Sites may copy this file, adjust it and render with `ddpjob render
    --template FILE`. Every value arrives already shell-quoted where it reaches the shell;
    directive values were checked to hold no blanks or newlines. }}
{{> generated_by}}
#$ -N {{name}}
#$ -S /bin/bash
{{! The job's output file in the folder it was submitted from, as PBS and Slurm write it. }}
#$ -cwd
{{! The parallel environment's allocation rule gives the job whole nodes: slots are its workers,
    and Grid Engine's per-job requests (memory, GPUs) count per slot. }}
#$ -pe {{pe}} {{slots}}
{{#project}}
#$ -P {{project}}
{{/project}}
{{#queue}}
#$ -q {{queue}}
{{/queue}}
{{#h_rt}}
#$ -l h_rt={{h_rt}}
{{/h_rt}}
{{#mem_per_slot}}
#$ -l {{mem_resource}}={{mem_per_slot}}
{{/mem_per_slot}}
{{#gpus_per_slot}}
#$ -l gpu={{gpus_per_slot}}
{{/gpus_per_slot}}
#$ -j y
{{#mail_user}}
#$ -M {{mail_user}}
#$ -m {{mail_events}}
{{/mail_user}}
{{#directives}}
#$ {{directive}}
{{/directives}}

{{> batch_shell}}

# A job's environment is Grid Engine's, not the submitter's: its programs (qrsh, qsub) are where
# the execution daemon says, or under SGE_ROOT.
ddpjob_sge_bin=${SGE_BINARY_PATH:-${SGE_ROOT:?not inside a Grid Engine job}/bin/${SGE_ARCH:-lx-amd64}}
PATH=$ddpjob_sge_bin:$PATH

# Grid Engine kills at h_rt with no warning the job can use (SIGKILL; -notify's SIGUSR2 comes only
# before a qdel or a suspend, and to every process of the job, whose workers it would kill, so it
# is not asked): the agents learn when the walltime comes, for the spec's checkpoint signal.
# This job's place in a chain of requeues comes from its predecessor (qsub -v).
ddpjob_walltime_args=()
ddpjob_deadline=
{{#walltime_s}}
ddpjob_deadline=$(($(date +%s) + {{walltime_s}}))
ddpjob_walltime_args+=(--deadline "$ddpjob_deadline")
{{/walltime_s}}
# What a signal from outside meant: whether the walltime had come.
ddpjob_ended_by() { ddpjob_by_walltime; }
ddpjob_requeue=${DDPJOB_REQUEUE_COUNT:-0}

# The job runs in the spec's workdir, by default the directory it was submitted from, on every
# node.
{{#workdir}}
ddpjob_workdir={{workdir}}
{{/workdir}}
{{^workdir}}
ddpjob_workdir=${SGE_O_WORKDIR:?not inside a Grid Engine job}
{{/workdir}}
cd -- "$ddpjob_workdir" || ddpjob_fail "cannot enter the workdir $ddpjob_workdir on $(hostname)"

# What every node runs before its agent starts, in the workdir: modules, the spec's setup, its
# environment.
ddpjob_node_setup() {
    cd -- "$ddpjob_workdir" || return
    {{> node_setup}}
    :
}

# The job's own files live in the workdir, which every node sees, in .ddpjob/JOBID: made here
# (0700), or taken only when it is this user's own folder that no one else can write, and reached
# through a hold on it (ddpjob_hold_dir). An array task's id is JOB.TASK.
ddpjob_jobid=${JOB_ID:?not inside a Grid Engine job}
case ${SGE_TASK_ID:-undefined} in
undefined) ;;
*) ddpjob_jobid=$ddpjob_jobid.$SGE_TASK_ID ;;
esac
ddpjob_dir=$ddpjob_workdir/.ddpjob/$ddpjob_jobid
# shellcheck disable=SC2034 # read through ddpjob_on_exit's command, which shellcheck cannot see
ddpjob_held=
mkdir -m 700 -- "${ddpjob_dir%/*}" 2>/dev/null || :
ddpjob_hold_dir ddpjob_held "${ddpjob_dir%/*}"
mkdir -m 700 -- "$ddpjob_dir" 2>/dev/null || :
ddpjob_hold_dir ddpjob_held "$ddpjob_dir"
ddpjob_on_exit 'rm -rf -- "$ddpjob_held"/* && rmdir -- "$ddpjob_dir" "${ddpjob_dir%/*}" 2>/dev/null'

{{> job_record}}
# -hold_jid let this job start once the jobs it waited for had ended, however they ended: those it
# needs to have succeeded (afterok) or failed (afternotok) are checked in the accounting, which
# holds a job some seconds after its end (its flush time). DDPJOB_SGE_AFTER comes from submit:
# afterok:ID:ID+afternotok:ID.
ddpjob_after_unmet() {
    local group kind ids id task records bad deadline
    for group in ${1//+/ }; do
        kind=${group%%:*}
        IFS=: read -ra ids <<<"${group#*:}"
        for id in "${ids[@]}"; do
            case $id in '' | *[!0-9.]*) echo "\"$id\" is no job id" && return ;; esac
            [ "$kind" = afterok ] || [ "$kind" = afternotok ] || continue
            task=()
            [ "${id#*.}" = "$id" ] || task=(-t "${id#*.}")
            deadline=$((SECONDS + 120))
            until records=$(qacct -j "${id%%.*}" "${task[@]}" 2>/dev/null); do
                [ "$SECONDS" -lt "$deadline" ] ||
                    { echo "job $id, which it runs after, has no accounting record 120 s after this job started" && return; }
                sleep 2
            done
            bad=$(awk '($1 == "failed" || $1 == "exit_status") && $2 != 0 { n++ } END { print n + 0 }' <<<"$records")
            if [ "$kind" = afterok ] && [ "$bad" != 0 ]; then
                echo "job $id, which it runs after if it succeeded (afterok), failed" && return
            elif [ "$kind" = afternotok ] && [ "$bad" = 0 ]; then
                echo "job $id, which it runs after if it failed (afternotok), succeeded" && return
            fi
        done
    done
}
if [ -n "${DDPJOB_SGE_AFTER:-}" ]; then
    ddpjob_unmet=$(ddpjob_after_unmet "$DDPJOB_SGE_AFTER")
    [ -z "$ddpjob_unmet" ] || ddpjob_fail "not run: $ddpjob_unmet"
fi
ddpjob_token_file=$ddpjob_dir/token
(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$ddpjob_held/token") ||
    ddpjob_fail "cannot write the job token under $ddpjob_dir"

# A task started by qrsh -inherit gets the job's environment as Grid Engine gave it: it first
# takes this shell's as it is now, before the setup, bar what Grid Engine and bash set for each
# host and shell; then it runs the same setup.
ddpjob_node_env=$ddpjob_dir/node-env
{
    for ddpjob_var in $(compgen -e); do
        case $ddpjob_var in
        SGE_* | JOB_* | PE | PE_HOSTFILE | NHOSTS | NSLOTS | NQUEUES | QUEUE | RESTARTED | ENVIRONMENT | REQUEST | REQNAME | TMPDIR | TMP | HOSTNAME | PWD | OLDPWD | SHLVL | _ | BASHOPTS | SHELLOPTS | BASH_* | UID | EUID | PPID) continue ;;
        esac
        printf 'export %s=%q\n' "$ddpjob_var" "${!ddpjob_var}"
    done
    declare -p ddpjob_workdir
    declare -f ddpjob_node_setup
} >"$ddpjob_held/node-env" || ddpjob_fail "cannot write $ddpjob_node_env"

ddpjob_node_setup

# PE_HOSTFILE has a line per host of the job ("HOST SLOTS QUEUE PROCESSORS"), the master's first.
ddpjob_nodefile=$ddpjob_dir/nodefile
awk '{ print $1 }' "${PE_HOSTFILE:?not a parallel job (no sge: pe: in the spec)}" >"$ddpjob_held/nodefile" ||
    ddpjob_fail "cannot read PE_HOSTFILE=$PE_HOSTFILE"
ddpjob_nodes=$({{ddpjob}} nodes --nodefile "$ddpjob_nodefile") ||
    ddpjob_fail "cannot read PE_HOSTFILE=$PE_HOSTFILE"
mapfile -t ddpjob_hosts <<<"$ddpjob_nodes"
[ "${#ddpjob_hosts[@]}" -eq {{alloc_nodes}} ] ||
    ddpjob_fail "expected {{alloc_nodes}} nodes in $PE_HOSTFILE, found ${#ddpjob_hosts[@]}: ${ddpjob_hosts[*]} (does parallel environment $PE give whole nodes, {{procs_per_node}} slots each?)"
ddpjob_master=${ddpjob_hosts[0]}
echo "ddpjob: job $ddpjob_jobid: {{nodes}} node(s){{#spares}} and {{spares}} spare(s){{/spares}}, {{procs_per_node}} worker(s) each, master $ddpjob_master, in $ddpjob_workdir"

ddpjob_resume=()
{{#requeue}}
if [ "$ddpjob_requeue" -gt 0 ]; then
    echo "ddpjob: requeue $ddpjob_requeue of {{requeue}} (job $ddpjob_jobid), resuming"
{{#train_resumes}}
    ddpjob_resume=(--resume)
{{/train_resumes}}
fi
{{/requeue}}

# The agents derive the rendezvous port from the run id.
ddpjob_agent_args=(--nnodes {{nodes}} {{#spares}}--spares {{spares}} {{/spares}}--nproc-per-node {{procs_per_node}}
    --master-addr "$ddpjob_master" {{#master_port}}--master-port {{master_port}} {{/master_port}}--run-id "$ddpjob_jobid"
    --token-file "$ddpjob_token_file"
    "${ddpjob_walltime_args[@]}" --requeue-count "$ddpjob_requeue"{{agent_args}}
    "${ddpjob_record_args[@]}" -- {{command}} "${ddpjob_resume[@]}")

# Node 0's agent runs here and learns every joined node's outcome through the store, so its status
# is the job's; `ddpjob node-agents` starts the other nodes' agents as tasks of this job (qrsh
# -inherit: accounted, and killed with it) and stops the job when one of them cannot start, or
# ends while node 0's goes on (ddpjob(1)). `ddpjob cancel --checkpoint` asks through the job's
# record.
ddpjob_supervisor_args=()
{{#checkpoint_signal}}
[ -z "$ddpjob_link_dir" ] || ddpjob_supervisor_args=(--checkpoint-file "$ddpjob_record/checkpoint-request"
    --checkpoint-signal {{checkpoint_signal}})
{{/checkpoint_signal}}
{{ddpjob}} node-agents --via qrsh --nodefile "$ddpjob_nodefile" --nodes {{alloc_nodes}} --node-env "$ddpjob_node_env" \
    --task-dir "$ddpjob_held" {{#spares}}--spares {{/spares}}"${ddpjob_supervisor_args[@]}" -- {{agent}} "${ddpjob_agent_args[@]}" &
ddpjob_wait $!
{{#requeue}}
# 75: every rank checkpointed on request. The job's successor is this script submitted again, told
# its place in the chain: the record's copy, as submitted, through the hold on the record (the
# file `ddpjob submit` wrote may have been written over since), else that file.
if [ "$ddpjob_status" -eq 75 ] && [ "$ddpjob_requeue" -lt {{requeue}} ]; then
    ddpjob_successor={{script_file}}
    ddpjob_successor_name=$ddpjob_successor
    if [ -n "$ddpjob_record" ]; then
        ddpjob_successor=$ddpjob_record/script
        ddpjob_successor_name=$DDPJOB_RECORD/script
    fi
    # A job's output moved out of a workdir open to others (DDPJOB_OUTPUT, from submit) stays out.
    ddpjob_vars="DDPJOB_REQUEUE_COUNT=$((ddpjob_requeue + 1))${DDPJOB_RECORD:+,DDPJOB_RECORD=$DDPJOB_RECORD}${DDPJOB_OUTPUT:+,DDPJOB_OUTPUT=$DDPJOB_OUTPUT}"
    if ddpjob_cancelled; then
        echo "ddpjob: job $ddpjob_jobid stopped with every rank's checkpoint written; cancelled, so no successor"
    elif ddpjob_next=$(cd "$SGE_O_WORKDIR" && qsub -terse ${DDPJOB_OUTPUT:+-o "$DDPJOB_OUTPUT"} -v "$ddpjob_vars" "$ddpjob_successor"); then
        echo "ddpjob: job $ddpjob_jobid stopped with every rank's checkpoint written; its successor $ddpjob_next resumes it ($((ddpjob_requeue + 1)) of {{requeue}})"
        [ -z "$ddpjob_record" ] || echo "$((ddpjob_requeue + 1)) $ddpjob_next" >>"$ddpjob_record/links"
        # A cancel that came while qsub ran did not see the successor: it goes now.
        if ddpjob_cancelled; then qdel "$ddpjob_next"; fi
    else
        echo "ddpjob: job $ddpjob_jobid stopped with every rank's checkpoint written, but qsub of its successor failed; resume by hand: cd $SGE_O_WORKDIR && qsub ${DDPJOB_OUTPUT:+-o $DDPJOB_OUTPUT }-v $ddpjob_vars $ddpjob_successor_name" >&2
    fi
fi
{{/requeue}}
ddpjob_exit "$ddpjob_status"

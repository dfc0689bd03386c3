#!/bin/bash
{{! ddpjob's PBS Pro (Gadi-style) job script. Sites may copy this file, adjust it and render
    with `ddpjob render --template FILE`. Every value arrives already shell-quoted where it reaches
    the shell; directive values were checked to hold no blanks or newlines. }}
{{> generated_by}}
#PBS -N {{name}}
{{#project}}
#PBS -P {{project}}
{{/project}}
{{#queue}}
#PBS -q {{queue}}
{{/queue}}
{{#select}}
#PBS -l select={{select}}
#PBS -l place={{place}}
{{/select}}
{{#ncpus}}
#PBS -l ncpus={{ncpus}}
{{/ncpus}}
{{#ngpus}}
#PBS -l ngpus={{ngpus}}
{{/ngpus}}
{{#mem}}
#PBS -l mem={{mem}}
{{/mem}}
{{#walltime}}
#PBS -l walltime={{walltime}}
{{/walltime}}
{{#jobfs}}
#PBS -l jobfs={{jobfs}}
{{/jobfs}}
{{#storage}}
#PBS -l storage={{storage}}
{{/storage}}
#PBS -j oe
{{#mail_user}}
#PBS -M {{mail_user}}
#PBS -m {{mail_events}}
{{/mail_user}}
{{#spares}}
{{! Spares: the agents replace a lost node. Without this, OpenPBS's mother superior kills the
    whole job once a sister fails its poll (mom_main.c, "node EOF"); seen in the suite's 23.06 on
    a sister's MoM killed: "im_eof, lost communication with n2, not killing job yet". }}
#PBS -W tolerate_node_failures=all
{{/spares}}
{{#hold_pack}}
{{! A packed sweep's allocation: a node that fails takes only the trials on it (the holder asks
    them again on the others), not the allocation. }}
#PBS -W tolerate_node_failures=all
{{/hold_pack}}
{{#directives}}
#PBS {{directive}}
{{/directives}}

{{> batch_shell}}

# PBS gives no warning before the walltime (SIGTERM at the limit, SIGKILL soon after): the agents
# learn when it comes, for the spec's checkpoint signal. This job's place in a chain of requeues
# comes from its predecessor (qsub -v).
ddpjob_walltime_args=()
ddpjob_deadline=
{{#walltime_s}}
ddpjob_deadline=$(($(date +%s) + {{walltime_s}}))
{{^held_run}}
ddpjob_walltime_args+=(--deadline "$ddpjob_deadline")
{{/held_run}}
{{/walltime_s}}
{{#held_run}}
# A run in a held allocation ends with it: the allocation's end, from its holder.
ddpjob_deadline=${DDPJOB_HELD_DEADLINE:-$ddpjob_deadline}
[ -z "$ddpjob_deadline" ] || ddpjob_walltime_args+=(--deadline "$ddpjob_deadline")
{{/held_run}}
# What a signal from outside meant: qstat says nothing of it while the job still runs, so whether
# the walltime had come.
ddpjob_ended_by() { ddpjob_by_walltime; }
{{#held_run}}
# A run in a held allocation: its link, from its holder (one asked again goes on as the next).
ddpjob_requeue=${DDPJOB_HELD_LINK:-0}
{{/held_run}}
{{^held_run}}
ddpjob_requeue=${DDPJOB_REQUEUE_COUNT:-0}
{{/held_run}}

# PBS starts this script in the home directory (and pbsdsh its tasks too): the job runs in the
# spec's workdir, by default the directory it was submitted from, on every node.
{{#workdir}}
ddpjob_workdir={{workdir}}
{{/workdir}}
{{^workdir}}
ddpjob_workdir=${PBS_O_WORKDIR:?not inside a PBS job}
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
# (0700), or taken only when it is this user's own folder that no one else can write (in a shared
# workdir another user may have made it first, job ids being predictable, to swap what the other
# nodes run), and reached through a hold on it (ddpjob_hold_dir). Nothing is left there after
# (.ddpjob itself stays while it holds job records; under set -e the trap must not fail).
ddpjob_jobid=${PBS_JOBID:?not inside a PBS job}
{{#held_run}}
# A run in an allocation `ddpjob dev` holds (or a packed trial) shares its job id with the
# allocation and the runs beside it: its folder is its own by its number.
ddpjob_dir=$ddpjob_workdir/.ddpjob/$ddpjob_jobid.run${DDPJOB_HELD_RUN:?not started by the holder of an allocation}
{{/held_run}}
{{^held_run}}
ddpjob_dir=$ddpjob_workdir/.ddpjob/$ddpjob_jobid
{{/held_run}}
# shellcheck disable=SC2034 # read through ddpjob_on_exit's command, which shellcheck cannot see
ddpjob_held=
mkdir -m 700 -- "${ddpjob_dir%/*}" 2>/dev/null || :
ddpjob_hold_dir ddpjob_held "${ddpjob_dir%/*}"
mkdir -m 700 -- "$ddpjob_dir" 2>/dev/null || :
ddpjob_hold_dir ddpjob_held "$ddpjob_dir"
ddpjob_on_exit 'rm -rf -- "$ddpjob_held"/* && rmdir -- "$ddpjob_dir" "${ddpjob_dir%/*}" 2>/dev/null'

{{> job_record}}
{{^hold}}
{{#launch_pbsdsh}}
ddpjob_token_file=$ddpjob_dir/token
(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$ddpjob_held/token") ||
    ddpjob_fail "cannot write the job token under $ddpjob_dir"
{{/launch_pbsdsh}}

{{#launch_pbsdsh}}
# A pbsdsh task starts with PBS's bare environment (PATH=/bin:/usr/bin): it first takes this
# shell's environment as it is now, before the setup, bar what PBS and bash set for each host
# and shell; then it runs the same setup.
ddpjob_node_env=$ddpjob_dir/node-env
{
    for ddpjob_var in $(compgen -e); do
        case $ddpjob_var in
        PBS_* | TMPDIR | HOSTNAME | PWD | OLDPWD | SHLVL | _ | BASHOPTS | SHELLOPTS | BASH_* | UID | EUID | PPID) continue ;;
        esac
        printf 'export %s=%q\n' "$ddpjob_var" "${!ddpjob_var}"
    done
    declare -p ddpjob_workdir
    declare -f ddpjob_node_setup
} >"$ddpjob_held/node-env" || ddpjob_fail "cannot write $ddpjob_node_env"
{{/launch_pbsdsh}}
{{/hold}}

ddpjob_node_setup

# PBS_NODEFILE has one line per CPU or chunk: its unique hosts, in order, are the nodes, and the
# first is the master.
{{#held_run}}
# A run in a held allocation: the nodes its holder gave it, one line each, as its node file;
# pbs-agents finds their tasks in the job's own.
ddpjob_job_nodefile=${PBS_NODEFILE:?not inside a PBS job}
tr , '\n' <<<"${DDPJOB_HELD_NODES:?not started by the holder of an allocation}" >"$ddpjob_held/nodefile" ||
    ddpjob_fail "cannot write the run's node file under $ddpjob_dir"
PBS_NODEFILE=$ddpjob_dir/nodefile
{{/held_run}}
ddpjob_nodes=$({{ddpjob}} nodes --nodefile "${PBS_NODEFILE:?not inside a PBS job}") ||
    ddpjob_fail "cannot read PBS_NODEFILE=$PBS_NODEFILE"
mapfile -t ddpjob_hosts <<<"$ddpjob_nodes"
[ "${#ddpjob_hosts[@]}" -eq {{alloc_nodes}} ] ||
    ddpjob_fail "expected {{alloc_nodes}} nodes in $PBS_NODEFILE, found ${#ddpjob_hosts[@]}: ${ddpjob_hosts[*]}"
ddpjob_master=${ddpjob_hosts[0]}
echo "ddpjob: job $ddpjob_jobid: {{nodes}} node(s){{#spares}} and {{spares}} spare(s){{/spares}}, {{procs_per_node}} worker(s) each, master $ddpjob_master, in $ddpjob_workdir"

{{#hold}}
# `ddpjob shell`'s node side: a task of this job on that node.
ddpjob_node_exec='pbsdsh -h %h --'
{{/hold}}
{{> dev_hold}}
{{^hold}}
ddpjob_resume=()
{{#requeue}}
if [ "$ddpjob_requeue" -gt 0 ]; then
    echo "ddpjob: requeue $ddpjob_requeue of {{requeue}} (job $ddpjob_jobid), resuming"
{{#train_resumes}}
    ddpjob_resume=(--resume)
{{/train_resumes}}
fi
{{/requeue}}

{{#launch_pbsdsh}}
# The agents derive the rendezvous port from PBS_JOBID.
ddpjob_agent_args=(--nnodes {{nodes}} {{#spares}}--spares {{spares}} {{/spares}}--nproc-per-node {{procs_per_node}}
    --master-addr "$ddpjob_master" {{#master_port}}--master-port {{master_port}} {{/master_port}}--run-id "$ddpjob_jobid"
    --token-file "$ddpjob_token_file"
    "${ddpjob_walltime_args[@]}" --requeue-count "$ddpjob_requeue"{{agent_args}}
    "${ddpjob_record_args[@]}" -- {{command}} "${ddpjob_resume[@]}")

# Node 0's agent runs here and learns every joined node's outcome through the store, so its status
# is the job's; `ddpjob pbs-agents` starts the other nodes' agents through pbsdsh and stops the job
# when one of them cannot start, or ends while node 0's goes on (ddpjob(1)).
# `ddpjob cancel --checkpoint` asks through the job's record: qsig would reach only this node's
# session, and end the job's login shell, and with it the job, before the checkpoint is written.
ddpjob_supervisor_args=()
{{#checkpoint_signal}}
[ -z "$ddpjob_link_dir" ] || ddpjob_supervisor_args=(--checkpoint-file "$ddpjob_record/checkpoint-request"
    --checkpoint-signal {{checkpoint_signal}})
{{/checkpoint_signal}}
{{ddpjob}} pbs-agents --nodefile "$PBS_NODEFILE" {{#held_run}}--job-nodefile "$ddpjob_job_nodefile" {{/held_run}}--nodes {{alloc_nodes}} --node-env "$ddpjob_node_env" \
    --task-dir "$ddpjob_held" {{#spares}}--spares {{/spares}}"${ddpjob_supervisor_args[@]}" -- {{agent}} "${ddpjob_agent_args[@]}" &
ddpjob_wait $!
{{/launch_pbsdsh}}
{{#launch_ssh}}
# `ddpjob launch` starts every node's agent, this node's too, over SSH (keys in ~/.ssh, hosts in
# ~/.ssh/known_hosts) and ends with the job's status; the job token travels on each connection.
# Every node runs the node script this job carries, in the workdir.
ddpjob_node_script=$ddpjob_held/node.sh
printf '%s\n' {{node_script}} >"$ddpjob_node_script" || ddpjob_fail "cannot write $ddpjob_dir/node.sh"
{{ddpjob}} launch --node-script "$ddpjob_node_script" --nodefile "$PBS_NODEFILE" \
    --nproc-per-node {{procs_per_node}} --workdir "$ddpjob_workdir" {{#master_port}}--master-port {{master_port}} {{/master_port}}\
    {{#spares}}--spares {{spares}} {{/spares}}--run-id "$ddpjob_jobid" "${ddpjob_walltime_args[@]}" --requeue-count "$ddpjob_requeue" \
    "${ddpjob_record_args[@]/#/--agent-option=}" -- "${ddpjob_resume[@]}" &
ddpjob_wait $!
{{/launch_ssh}}
{{/hold}}
{{#requeue}}
# 75: every rank checkpointed on request. The job's successor is this script submitted again, told
# its place in the chain: the record's copy, as submitted, through the hold on the record (the
# file `ddpjob submit` wrote may have been written over since, by a later submit of the same
# spec), else that file.
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
    elif ddpjob_next=$(cd "$PBS_O_WORKDIR" && qsub ${DDPJOB_OUTPUT:+-o "$DDPJOB_OUTPUT"} -v "$ddpjob_vars" "$ddpjob_successor"); then
        echo "ddpjob: job $ddpjob_jobid stopped with every rank's checkpoint written; its successor $ddpjob_next resumes it ($((ddpjob_requeue + 1)) of {{requeue}})"
        [ -z "$ddpjob_record" ] || echo "$((ddpjob_requeue + 1)) $ddpjob_next" >>"$ddpjob_record/links"
        # A cancel that came while qsub ran did not see the successor: it goes now.
        if ddpjob_cancelled; then qdel "$ddpjob_next"; fi
    else
        echo "ddpjob: job $ddpjob_jobid stopped with every rank's checkpoint written, but qsub of its successor failed; resume by hand: cd $PBS_O_WORKDIR && qsub ${DDPJOB_OUTPUT:+-o $DDPJOB_OUTPUT }-v $ddpjob_vars $ddpjob_successor_name" >&2
    fi
fi
{{/requeue}}
ddpjob_exit "$ddpjob_status"

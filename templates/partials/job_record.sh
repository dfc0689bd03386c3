{{! This link's part of the job's record (ddpjob(1), JOB RECORD), when `ddpjob submit` made one:
    needs ddpjob_jobid, ddpjob_requeue, ddpjob_deadline (may be empty) and ddpjob_ended_by. }}
# The job's record, when `ddpjob submit` made one: this link's start and end, the agents' failure
# reports, each rank's last step and its logs, for `ddpjob status`, `logs`, `cancel` and `wait`.
# This shell writes and reads the record through a hold on its folder (ddpjob_hold_dir); the
# agents, on other hosts, get its path, and write there only files of their own, made fresh.
ddpjob_record_args=()
ddpjob_link_dir=
ddpjob_record=
if [ -n "${DDPJOB_RECORD:-}" ]; then
    ddpjob_hold_dir ddpjob_record "$DDPJOB_RECORD"
    ddpjob_link_dir=$DDPJOB_RECORD/link-$ddpjob_requeue
    { mkdir -p "$ddpjob_record/link-$ddpjob_requeue" && echo "$ddpjob_requeue $ddpjob_jobid" >>"$ddpjob_record/links" &&
        echo "$(date +%s) $ddpjob_jobid $(hostname)" >"$ddpjob_record/link-$ddpjob_requeue/started"; } ||
        ddpjob_fail "cannot write the job's record $DDPJOB_RECORD"
    # What this shell and what it starts say (srun, pbsdsh, pyxis, a module or setup line), bar the
    # ranks' own lines, which their logs hold: its first MiB, in the record's batch.log, for
    # status, wait, logs --batch and report; a failure before any worker starts is named there.
    # On the way to the job's output as before, a line at a time. awk writes the record's copy to
    # its stderr, the file this shell opened: awks differ on paths such as /dev/fd/N/...
    if exec {ddpjob_batch_fd}>>"$ddpjob_record/link-$ddpjob_requeue/batch.log"; then
        ddpjob_batch_log() {
            awk '{ print; fflush() } !/^\[rank ?[0-9]+[] ]/ && kept < 1048576 { kept += length($0) + 1; print >"/dev/stderr"; fflush("/dev/stderr") }' \
                2>&"$ddpjob_batch_fd"
        }
        exec > >(ddpjob_batch_log)
        ddpjob_batch_pids=$!
        exec 2> >(ddpjob_batch_log >&2)
        ddpjob_batch_pids+=" $!"
        # The last lines are the ones that say why: the scheduler ends the job's processes once
        # this shell has gone, so it lets the two copies finish first.
        ddpjob_exit_last='exec >&- 2>&-; wait $ddpjob_batch_pids 2>/dev/null'
    fi
{{^own_log_dir}}
    ddpjob_record_args+=(--log-dir "$ddpjob_link_dir/logs")
{{/own_log_dir}}
    ddpjob_record_args+=(--progress-file "$ddpjob_link_dir/progress.json" --history-file "$ddpjob_link_dir/history.jsonl")
{{^own_error_file}}
    ddpjob_record_args+=(--error-file "$ddpjob_link_dir/error-node%n.json")
{{/own_error_file}}
fi
# A signal from outside ends a job: the scheduler's SIGTERM at the walltime, on a cancel (scancel,
# qdel) or a lost node, and SIGKILL some seconds later. The job's step runs in the background
# (ddpjob_wait) so that this shell takes the first at once: it writes the link's end and what
# ended it (ddpjob_ended_by) before the second can come, for when the scheduler has forgotten the
# job, and again with the step's status should it outlive the step.
ddpjob_signalled=
trap 'ddpjob_signalled=1; ddpjob_record_end 143' TERM
# Whether the walltime had come when the signal did (a cancel in its last seconds reads as it).
ddpjob_by_walltime() {
    if [ -n "${ddpjob_deadline:-}" ] && [ "$(date +%s)" -ge $((ddpjob_deadline - 10)) ]; then
        echo walltime
    else
        echo signal
    fi
}
# ddpjob_wait PID: the step's status into ddpjob_status, the wait going on through the signal.
ddpjob_wait() {
    ddpjob_status=0
    wait "$1" || ddpjob_status=$?
    while kill -0 "$1" 2>/dev/null; do
        ddpjob_status=0
        wait "$1" || ddpjob_status=$?
    done
}
ddpjob_notify_pid=
{{#notify_webhook}}
# The spec's webhook (its URL in the record, not here): `ddpjob notify` sends this link's events
# as they come and its end, each within its own deadline; a message that fails is logged in the
# record and never fails the job.
if [ -n "$ddpjob_link_dir" ]; then
    {{ddpjob}} notify --record "$DDPJOB_RECORD" --link "$ddpjob_requeue" &
    ddpjob_notify_pid=$!
fi
{{/notify_webhook}}
# ddpjob_record_end STATUS: the link's end, in the record, with what ended it where a signal did.
ddpjob_record_end() {
    local by=
    [ -z "$ddpjob_signalled" ] || by=" $(ddpjob_ended_by)"
    [ -z "$ddpjob_link_dir" ] || echo "$1 $(date +%s)$by" >"$ddpjob_record/link-$ddpjob_requeue/ended" ||
        echo "ddpjob: cannot write $ddpjob_link_dir/ended" >&2
    ddpjob_record_ended=1
}
# A shell that ends before ddpjob_exit (a module load or setup line that fails under set -e,
# ddpjob_fail) writes its end all the same.
ddpjob_record_ended=
# shellcheck disable=SC2317 # run by ddpjob_at_exit
ddpjob_record_end_once() { [ -n "$ddpjob_record_ended" ] || ddpjob_record_end "$ddpjob_exit_status"; }
ddpjob_on_exit ddpjob_record_end_once
{{#pipeline_stage}}
# A stage of a pipeline: as this link ends, its end in the record, `ddpjob pipeline-next` starts
# the stages that waited for it, or says why they never will (it does nothing while this job
# goes on: a requeue, another trial still running). Once, within its own deadline.
ddpjob_pipeline_told=
ddpjob_tell_pipeline() {
    [ -z "$ddpjob_pipeline_told" ] && [ -n "$ddpjob_link_dir" ] || return 0
    ddpjob_pipeline_told=1
    timeout 300 {{ddpjob}} pipeline-next {{pipeline_record}} || echo "ddpjob: the pipeline's next stages were not started: \`ddpjob status\` of it starts them" >&2
}
ddpjob_on_exit ddpjob_tell_pipeline
{{/pipeline_stage}}
# ddpjob_exit STATUS: the link's end, in the record (and told, where the spec asks); then this shell
# exits with STATUS, or by the signal that ended the job, as the scheduler expects of it (PBS
# calls a job killed by SIGTERM 256+15, a qdel's; an exit of its own, the script's status).
ddpjob_exit() {
    ddpjob_record_end "$1"
    [ -z "$ddpjob_notify_pid" ] || wait "$ddpjob_notify_pid"
{{#pipeline_stage}}
    ddpjob_tell_pipeline
{{/pipeline_stage}}
    if [ -n "$ddpjob_signalled" ]; then
        trap - TERM
        kill -TERM $$
    fi
    exit "$1"
}
{{#requeue}}
# Whether `ddpjob cancel` was asked: then no link submits a successor.
ddpjob_cancelled() {
    [ -n "$ddpjob_record" ] && [ -e "$ddpjob_record/cancelled" ]
}
{{/requeue}}

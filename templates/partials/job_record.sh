{{! This link's part of the job's record (ddpjob(1), JOB RECORD), when `ddpjob submit` made one:
    needs ddpjob_jobid and ddpjob_requeue. }}
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
{{^own_log_dir}}
    ddpjob_record_args+=(--log-dir "$ddpjob_link_dir/logs")
{{/own_log_dir}}
    ddpjob_record_args+=(--progress-file "$ddpjob_link_dir/progress.json" --history-file "$ddpjob_link_dir/history.jsonl")
{{^own_error_file}}
    ddpjob_record_args+=(--error-file "$ddpjob_link_dir/error-node%n.json")
{{/own_error_file}}
fi
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
# ddpjob_record_end STATUS: the link's end, in the record (and told, where the spec asks).
ddpjob_record_end() {
    [ -z "$ddpjob_link_dir" ] || echo "$1 $(date +%s)" >"$ddpjob_record/link-$ddpjob_requeue/ended" ||
        echo "ddpjob: cannot write $ddpjob_link_dir/ended" >&2
    [ -z "$ddpjob_notify_pid" ] || wait "$ddpjob_notify_pid"
}
{{#requeue}}
# Whether `ddpjob cancel` was asked: then no link submits a successor.
ddpjob_cancelled() {
    [ -n "$ddpjob_record" ] && [ -e "$ddpjob_record/cancelled" ]
}
{{/requeue}}

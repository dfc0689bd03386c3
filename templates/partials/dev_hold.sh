{{! `ddpjob dev`: the job holds its nodes. Needs ddpjob_hosts, ddpjob_record, ddpjob_deadline
    (may be empty) and ddpjob_exit. }}
{{#hold}}
# `ddpjob dev`: this job holds its nodes until it has been idle {{hold_idle_s}} s (0: until its
# walltime) or is cancelled. Each `ddpjob run --in` is a job script of its own, which the holder
# runs from here, one at a time, with its own record: its agents start as this job's would, a
# step of this allocation (dev_record.h).
[ -n "$ddpjob_record" ] || ddpjob_fail "a held allocation needs its record (DDPJOB_RECORD)"
{{ddpjob}} dev-hold --record "$ddpjob_record" --idle {{hold_idle_s}} ${ddpjob_deadline:+--deadline "$ddpjob_deadline"} -- "${ddpjob_hosts[@]}" &
ddpjob_wait $!
[ -z "${ddpjob_status_dir:-}" ] || rm -rf "$ddpjob_status_dir"
ddpjob_exit "$ddpjob_status"
{{/hold}}

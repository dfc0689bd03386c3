{{! `ddpjob dev`: the job holds its nodes. Needs ddpjob_hosts, ddpjob_record, ddpjob_deadline
    (may be empty), ddpjob_node_setup, ddpjob_requeue, and ddpjob_node_exec: how a command starts
    on one node of the job (%h its host), for `ddpjob shell`. Leaves the holder's status in
    ddpjob_status: 75 when trials are left for the job's next link. }}
{{#hold}}
# `ddpjob dev`: this job holds its nodes until it has been idle {{hold_idle_s}} s (0: until its
# walltime) or is cancelled{{#hold_pack}}, or once the packed sweep's trials asked of it have run{{/hold_pack}}. Each `ddpjob run --in`{{#hold_pack}} (each trial){{/hold_pack}} is a job
# script of its own, which the holder runs from here on the nodes it asks, with its own record:
# its agents start as this job's would, a step of this allocation (dev_record.h).
[ -n "$ddpjob_record" ] || ddpjob_fail "a held allocation needs its record (DDPJOB_RECORD)"
# What a shell on a held node runs first (`ddpjob shell`): this shell's environment and the node
# setup, in the record, the user's alone (env: may hold secrets).
(
    umask 077
    {
        for ddpjob_var in $(compgen -e); do
            case $ddpjob_var in
            PBS_* | SLURM_* | DDPJOB_* | TMPDIR | HOSTNAME | PWD | OLDPWD | SHLVL | _ | BASHOPTS | SHELLOPTS | BASH_* | UID | EUID | PPID) continue ;;
            esac
            printf 'export %s=%q\n' "$ddpjob_var" "${!ddpjob_var}"
        done
        [ -z "${ddpjob_workdir+set}" ] || declare -p ddpjob_workdir
        declare -f ddpjob_node_setup
    } >"$ddpjob_record/node-env"
{{#image_exec_args}}
    # ... and, after the setup, its program inside the job's image, as the agent runs a worker.
    printf '%s\0' {{agent}}{{image_exec_args}} --container-exec -- >"$ddpjob_record/container-exec"
{{/image_exec_args}}
) || ddpjob_fail "cannot write the record's node-env"
ddpjob_hold_args=()
{{#hold_pack}}
{{#requeue}}
# Trials left at the walltime go on in this job's next link (the holder exits 75, and the job is
# requeued as any checkpointed job is): none starts once its checkpoint would be due.
[ "$ddpjob_requeue" -ge {{requeue}} ] || ddpjob_hold_args=(--continue-before {{checkpoint_before_s}})
{{/requeue}}
{{/hold_pack}}
{{ddpjob}} dev-hold --record "$ddpjob_record" --idle {{hold_idle_s}}{{#hold_pack}} --parallel {{hold_parallel}} --until-done{{/hold_pack}} "${ddpjob_hold_args[@]}" ${ddpjob_deadline:+--deadline "$ddpjob_deadline"} --node-exec "$ddpjob_node_exec" -- "${ddpjob_hosts[@]}" &
ddpjob_wait $!
{{/hold}}

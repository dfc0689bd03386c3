{{! The batch shell's options, how it gives up (a message on stderr and exit 1), and how it
    reaches the folders of the job's own in a workdir others may write. }}
set -eo pipefail

ddpjob_fail() {
    echo "ddpjob: $*" >&2
    exit 1
}

# However this shell ends (its own exit, set -e, ddpjob_fail, a signal), what the template and its
# partials asked for runs: each ddpjob_on_exit CMD in turn, then ddpjob_exit_last.
ddpjob_exit_cmds=()
ddpjob_on_exit() { ddpjob_exit_cmds+=("$1"); }
ddpjob_exit_last=:
# shellcheck disable=SC2317 # run by the trap
ddpjob_at_exit() {
    ddpjob_exit_status=$?
    local cmd
    for cmd in "${ddpjob_exit_cmds[@]}"; do eval "$cmd" || :; done
    eval "$ddpjob_exit_last" || :
    exit "$ddpjob_exit_status"
}
trap ddpjob_at_exit EXIT

# ddpjob_hold_dir VAR DIR: DIR held open and VAR set to a path through that hold (/dev/fd/N, for
# this shell and what it starts here), once DIR is a folder of this user's that group and others
# cannot write. In a team's workdir another member may rename .ddpjob and plant their own under
# the name: what the job runs, sources or writes there is reached through the hold, never by the
# name again.
{{hold_dir_function}}
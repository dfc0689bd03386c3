{{! The batch shell's options, how it gives up (a message on stderr and exit 1), and how it
    reaches the folders of the job's own in a workdir others may write. }}
set -eo pipefail

ddpjob_fail() {
    echo "ddpjob: $*" >&2
    exit 1
}

# ddpjob_hold_dir VAR DIR: DIR held open and VAR set to a path through that hold (/dev/fd/N, for
# this shell and what it starts here), once DIR is a folder of this user's that group and others
# cannot write. In a team's workdir another member may rename .ddpjob and plant their own under
# the name: what the job runs, sources or writes there is reached through the hold, never by the
# name again.
{{hold_dir_function}}
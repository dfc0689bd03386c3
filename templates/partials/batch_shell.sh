{{! The batch shell's options and how it gives up: a message on stderr and exit 1. }}
set -eo pipefail

ddpjob_fail() {
    echo "ddpjob: $*" >&2
    exit 1
}

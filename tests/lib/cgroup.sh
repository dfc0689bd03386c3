# shellcheck shell=bash
# Real cgroups for the suites: a group with a memory limit or a CPU quota (cgroup v1's
# controllers, as this kind of machine has them, else cgroup v2's), commands started inside it,
# and its removal.

# mem_cgroup_make NAME LIMIT: a new memory cgroup NAME limited to LIMIT (e.g. 64M), swap
# included: its folder in CGROUP; 1 when this machine has no memory controller to make one in
# (CGROUP_WHY says so).
mem_cgroup_make() {
    local v1=/sys/fs/cgroup/memory v2=/sys/fs/cgroup
    if [ -f "$v1/memory.limit_in_bytes" ]; then
        CGROUP=$v1/$1
        mkdir -p "$CGROUP" && echo "$2" >"$CGROUP/memory.limit_in_bytes" || return 1
        # Swap would let the group page out instead of reaching its limit.
        [ ! -f "$CGROUP/memory.memsw.limit_in_bytes" ] || echo "$2" >"$CGROUP/memory.memsw.limit_in_bytes"
    elif grep -qw memory "$v2/cgroup.subtree_control" 2>/dev/null; then
        CGROUP=$v2/$1
        mkdir -p "$CGROUP" && echo "$2" >"$CGROUP/memory.max" || return 1
        [ ! -f "$CGROUP/memory.swap.max" ] || echo 0 >"$CGROUP/memory.swap.max"
    else
        CGROUP_WHY="no cgroup memory controller: neither $v1 nor $v2/cgroup.subtree_control has one"
        return 1
    fi
}

# in_cgroup_script PATH: writes a wrapper that runs `PATH DIR COMMAND...` as COMMAND inside the
# cgroup DIR (and so do its children).
in_cgroup_script() {
    printf '%s\n' '#!/bin/sh' 'echo $$ >"$1/cgroup.procs" || exit 125' 'shift' 'exec "$@"' >"$1"
    chmod +x "$1"
}

# cgroup_remove DIR: removes the group once its last process has gone (at most 10 s).
cgroup_remove() {
    local i
    for i in $(seq 100); do
        [ -s "$1/cgroup.procs" ] || break
        sleep 0.1
    done
    rmdir "$1" 2>/dev/null
}

# cpu_cgroup_make NAME PERCENT [first]: a new cgroup NAME (PARENT/CHILD nests it in a group made
# before) whose processes get at most PERCENT of one CPU (a CFS quota): its folder in CGROUP; 1
# with CGROUP_WHY when there is no cpu controller. With `first`, the group also gets the highest
# weight, so that within its quota its processes run before those of other suites.
cpu_cgroup_make() {
    local v1=/sys/fs/cgroup/cpu v2=/sys/fs/cgroup
    if [ -f "$v1/cpu.cfs_quota_us" ]; then
        CGROUP=$v1/$1
        mkdir -p "$CGROUP" && echo 100000 >"$CGROUP/cpu.cfs_period_us" &&
            echo $(($2 * 1000)) >"$CGROUP/cpu.cfs_quota_us" || return 1
        [ "${3:-}" != first ] || echo 262144 >"$CGROUP/cpu.shares"
    elif grep -qw cpu "$v2/cgroup.subtree_control" 2>/dev/null; then
        CGROUP=$v2/$1
        # cgroup v2 hands a controller down only where the parent enables it for its children.
        [ "${1%/*}" = "$1" ] || echo +cpu >"$v2/${1%/*}/cgroup.subtree_control" || return 1
        mkdir -p "$CGROUP" && echo "$(($2 * 1000)) 100000" >"$CGROUP/cpu.max" || return 1
        [ "${3:-}" != first ] || echo 10000 >"$CGROUP/cpu.weight"
    else
        CGROUP_WHY="no cgroup cpu controller: neither $v1 nor $v2/cgroup.subtree_control has one"
        return 1
    fi
}

# shellcheck shell=bash
# The soak's Slurm (bench/soak.sh): tests/cluster/slurm.sh's three nodes, jobs submitted as root
# from the head node with the soak's own index (bench/soak.sh names what a backend defines).
# shellcheck source=../../tests/cluster/slurm.sh
. "$SRCDIR/tests/cluster/slurm.sh"

soak_slurm_kinds() { echo worker_signal worker_exit agent_killed link_cut node_frozen oom stall slow cancel walltime; }

soak_slurm_up() {
    at_exit cluster_down
    # SlurmdTimeout: a node cut off or frozen is found not responding within a job's time.
    SLURM_EXTRA_CONF="SlurmdTimeout=10" cluster_up 3 >"$T/slurm-cluster.log" 2>&1 ||
        { echo "the 3-node Slurm cluster did not start: $(tail -n 3 "$T/slurm-cluster.log")"; return 1; }
    SOAK_SLURM_DIR=$T/slurm
    mkdir -p "$SOAK_SLURM_DIR"
}

soak_slurm_dir() { echo "$SOAK_SLURM_DIR"; }
soak_slurm_header() { echo "scheduler: slurm"; }
soak_slurm_workload() { echo "$SRCDIR/tests/agent/py/soak_loop.py"; }

sj() { run cluster_ddpjob "$SOAK_SLURM_DIR" "$@"; }

soak_slurm_submit() { # SPEC_FILE: JOB, or PROBLEM
    DDPJ_TESTMARK=$MARK sj submit "$1"
    JOB=$(grep -o '[0-9][0-9]*' <<<"$OUT" | tail -n 1)
    [ -n "$JOB" ] || PROBLEM="submit: $OUT $ERR"
}

soak_slurm_namespaces() { local n; for n in head n1 n2 n3; do cluster_ns "$n"; done; }
soak_slurm_node_ns() { cluster_ns "$1"; }
soak_slurm_head_ns() { cluster_ns head; }
soak_slurm_cancel() { sj cancel "soak-$i"; }
soak_slurm_ended() { [ -z "$(cluster_in head squeue -h -j "$JOB" 2>/dev/null)" ]; }

soak_slurm_finish() { # STATE and SAID: the job's state and its status, from ddpjob
    sj wait "soak-$i" --timeout 240
    sj status "soak-$i" --json
    STATE=$(sed -n 's/.*"state": "\([a-z ]*\)".*/\1/p' <<<"$OUT" | head -n 1)
    sj status "soak-$i"
    SAID=$OUT
    LOGS=$(cat "$SOAK_SLURM_DIR"/soak-"$i"-"$JOB".out 2>/dev/null)
}

# What is left: processes that carry the job's mark, and cgroups of the job that hold a process
# (Slurm 22.05 itself leaves a cancelled job's empty step_batch folder on cgroup v1).
soak_slurm_left() {
    local pids cg
    pids=$(marked_pids)
    cg=$(find /sys/fs/cgroup/*/slurm_n[123]/uid_*/job_"$JOB" -name cgroup.procs 2>/dev/null |
        while read -r f; do [ -z "$(cat "$f" 2>/dev/null)" ] || dirname "$f"; done)
    [ -z "$pids" ] || echo "processes: $pids"
    [ -z "$cg" ] || echo "cgroups holding processes: $cg"
}

# n2 back in service: its link up, its processes running, the node resumed in Slurm.
soak_slurm_restore() {
    ip -n "$(cluster_ns head)" link set v2 up
    local deadline=$((SECONDS + 60))
    while [ "$(cluster_in head sinfo -h -n n2 -o '%t' 2>/dev/null)" != idle ] && [ "$SECONDS" -lt "$deadline" ]; do
        cluster_in head scontrol update nodename=n2 state=resume >/dev/null 2>&1
        sleep 1
    done
}

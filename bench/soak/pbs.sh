# shellcheck shell=bash
# The soak's OpenPBS (bench/soak.sh): tests/cluster/pbs.sh's server and three MoMs, jobs submitted
# by the soak's own unprivileged user from a folder in its home, with copies of the built
# programs it can read. No OOM case: this PBS runs no cgroup hook, so a job's memory is no cgroup.
# shellcheck source=../../tests/cluster/pbs.sh
PBS_USER=ddpjsoak
. "$SRCDIR/tests/cluster/pbs.sh"

soak_pbs_kinds() { echo worker_signal worker_exit agent_killed link_cut node_frozen stall slow cancel walltime; }

soak_pbs_up() {
    at_exit pbs_cluster_down
    local why
    why=$(pbs_cluster_unavailable)
    [ -z "$why" ] || { echo "$why"; return 1; }
    pbs_cluster_up 3 2 0 >"$T/pbs-cluster.log" 2>&1 ||
        { echo "the 3-node OpenPBS cluster did not start: $(grep -v '^\*\*\*' "$T/pbs-cluster.log" | tail -n 3)"; return 1; }
    SOAK_PBS_BIN=$PBS_CLUSTER/bin
    SOAK_PBS_DIR=$PBS_CLUSTER/home/$PBS_USER/soak
    mkdir -p "$SOAK_PBS_BIN" "$SOAK_PBS_DIR"
    cp "$DDPJOB" "$AGENT" "$TRAIN" "$SOAK_PBS_BIN/"
    cp -r "$BUILDDIR/templates" "$PBS_CLUSTER/templates"
    cp "$SRCDIR/tests/agent/py/soak_loop.py" "$SOAK_PBS_DIR/"
    chown -R "$PBS_USER:" "$PBS_CLUSTER/home/$PBS_USER"
}

soak_pbs_dir() { echo "$SOAK_PBS_DIR"; }
soak_pbs_header() { echo "scheduler: pbs"; }
soak_pbs_workload() { echo "$SOAK_PBS_DIR/soak_loop.py"; }

pj() { # ddpjob ARGS... as the user, from the soak's folder: RC, OUT, ERR
    local back=$PWD
    cd "$SOAK_PBS_DIR" && run pbs_as_user env DDPJOB_TEMPLATE_DIR="$PBS_CLUSTER/templates" "$SOAK_PBS_BIN/ddpjob" "$@"
    cd "$back" || return
}

soak_pbs_submit() { # SPEC_FILE: JOB, or PROBLEM
    chown "$PBS_USER:" "$1"
    pj submit "$1" --bindir "$SOAK_PBS_BIN"
    JOB=$(tail -n 1 <<<"$OUT")
    [[ $JOB =~ ^[0-9]+\.pbshead$ ]] || { PROBLEM="submit: $OUT $ERR"; JOB=; }
}

soak_pbs_namespaces() { local n; for n in pbshead n1 n2 n3; do pbs_ns "$n"; done; }
soak_pbs_node_ns() { pbs_ns "$1"; }
soak_pbs_head_ns() { pbs_ns pbshead; }
soak_pbs_cancel() { pj cancel "soak-$i"; }

# Ended once the batch script on n1 has: PBS does not finish a job while a frozen sister's MoM
# cannot answer (qstat itself may wait on it).
soak_pbs_ended() {
    ! ip netns pids "$(pbs_ns n1)" | xargs -r ps -o user= -p 2>/dev/null | grep -q "^$PBS_USER"
}

soak_pbs_finish() {
    pj wait "soak-$i" --timeout 240
    pj status "soak-$i" --json
    STATE=$(sed -n 's/.*"state": "\([a-z ]*\)".*/\1/p' <<<"$OUT" | head -n 1)
    pj status "soak-$i"
    SAID=$OUT
    # The MoM copies the output back as the job ends.
    local out=$SOAK_PBS_DIR/soak-$i.o${JOB%%.*}
    for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
    LOGS=$(cat "$out" 2>/dev/null)
}

# The user's processes, but for the daemon OpenPBS's qsub leaves to serve the user's next qsub
# (PBS_QSUB_DAEMON): it is PBS's client, not the job's.
soak_pbs_left() {
    local pids
    pids=$(pgrep -u "$PBS_USER" | while read -r pid; do [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = qsub ] || echo "$pid"; done | tr '\n' ' ')
    [ -z "$pids" ] || echo "processes of $PBS_USER: $pids"
}

# n2 back: its link up, its MoM answering, the node free.
soak_pbs_restore() {
    ip -n "$(pbs_ns pbshead)" link set v2 up
    local deadline=$((SECONDS + 90))
    until [ "$(pbs_in pbshead "$PBS_EXEC/bin/pbsnodes" -a 2>/dev/null | grep -c 'state = free')" = 3 ] || [ "$SECONDS" -ge "$deadline" ]; do
        sleep 0.5
    done
}

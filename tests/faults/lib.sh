# shellcheck shell=bash
# The fault matrix's two-node job, shared by tests/faults/faults.sh and bench/faults.sh: node 0
# in namespace n1 (FAULT_NET.11), node 1 in n2 (FAULT_NET.12), joined through a bridge in a head
# namespace so that a link can be cut; one real PyTorch gloo worker per node
# (tests/faults/py/loop.py) under ddpjob-agent, or under torchrun (LAUNCHER=torchrun) for the
# bench's side-by-side. Each case function injects one fault and leaves RC0/RC1 (each node's
# launcher's exit status), ERR0/ERR1, OUT0/OUT1 and TOOK_MS (fault to nothing of the job left
# running; -1 when something was still running FAULT_CAP seconds after the fault and had to be
# killed).
# shellcheck source=../lib/agents.sh
. "$SRCDIR/tests/lib/agents.sh"
# shellcheck source=../cluster/netns.sh
. "$SRCDIR/tests/cluster/netns.sh"
LAUNCHER=${LAUNCHER:-agent}
FAULT_CAP=${FAULT_CAP:-60}
FAULT_NET=10.79.0
FAULT_ID=$$
FAULT_PY=$SRCDIR/tests/faults/py
export DDPJOB_TOKEN=fault-token-$$
fault_ns() { echo "ddpjf$FAULT_ID-$1"; }
NODE_NS=("$(fault_ns n1)" "$(fault_ns n2)")
MASTER=$FAULT_NET.11

fault_net_up() { mkdir -p "$T/etc" && netns_make "$T" fault_ns "$FAULT_NET" head 2; }
fault_net_down() { netns_remove "$T" fault_ns head 2; }

# in_node RANK COMMAND...: runs COMMAND in node RANK's namespace.
in_node() {
    local ns=${NODE_NS[$1]}
    shift
    ip netns exec "$ns" "$@"
}

# start_node NAME RANK [ENV=VALUE...] [-- LAUNCHER_ARGS...]: node RANK's launcher of the job on
# PORT, running loop.py (or TRAIN_ARGS, when set, under ddp-train) with one worker; RDZV_TIMEOUT
# seconds for the nodes to meet (default 30); under `prlimit --nofile=$NOFILE` when NOFILE is set.
start_node() {
    local name=$1 rank=$2 envs=() extra=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ $# -gt 0 ] && { shift; extra=("$@"); }
    # Both launchers run a .py PROGRAM under python.
    local program=("$FAULT_PY/loop.py")
    if [ -n "${TRAIN_ARGS:-}" ]; then
        read -ra program <<<"$TRAIN_ARGS"
        program=("$TRAIN" "${program[@]}")
    fi
    local launch rdzv_timeout=${RDZV_TIMEOUT:-30}
    if [ "$LAUNCHER" = torchrun ]; then
        launch=("$PY" -m torch.distributed.run --nnodes 2 --node_rank "$rank" --nproc_per_node 1
                --master_addr "$MASTER" --master_port "$PORT" --rdzv_conf "timeout=$rdzv_timeout"
                --redirects 1 --tee 1)
        [ -n "${TRAIN_ARGS:-}" ] && launch+=(--no_python)
    else
        launch=("$AGENT" --python "$PY" --nnodes 2 --node-rank "$rank" --nproc-per-node 1 --master-addr "$MASTER"
                --master-port "$PORT" --heartbeat 0.5 --grace 3 --rdzv-timeout "$rdzv_timeout")
    fi
    [ -n "${NOFILE:-}" ] && launch=(prlimit --nofile="$NOFILE" "${launch[@]}")
    AGENT_KILL_AFTER=$((FAULT_CAP + 120)) AGENT=ip start_agent "$name" GLOO_SOCKET_IFNAME=eth0 \
        FAULT_DIR="$T/fault" OMP_NUM_THREADS=1 "${envs[@]}" -- \
        netns exec "${NODE_NS[$rank]}" "${launch[@]}" "${extra[@]}" "${program[@]}"
}

# The port of the launchers' rendezvous store: torchrun's is at the master port, the agents' on
# the next one.
rdzv_port() { if [ "$LAUNCHER" = torchrun ]; then echo "$PORT"; else echo "$STORE_PORT"; fi; }

# new_job: a port and an empty ready directory for the next case.
new_job() {
    next_port
    rm -rf "$T/fault"
    mkdir -p "$T/fault"
}

# wait_ready NAME...: until every rank has said it is ready (both ranks' pid files), or one of
# the named launchers ended; 1 if not ready within 90 s.
wait_ready() {
    local i name
    for i in $(seq 900); do
        [ -s "$T/fault/rank0" ] && [ -s "$T/fault/rank1" ] && return 0
        for name in "$@"; do kill -0 "${AGENT_PID[$name]}" 2>/dev/null || return 1; done
        sleep 0.1
    done
    return 1
}

worker_pid() { cat "$T/fault/rank$1"; }
# The launcher itself (start_agent's pid is the `timeout` wrapping it).
launcher_pid() { pgrep -P "${AGENT_PID[$1]}"; }

fault_now() { FAULT_T0=$(date +%s%N); }

# launchers_alive NAME...: the pids of the named launchers' wrappers still running.
launchers_alive() {
    local name
    for name in "$@"; do
        kill -0 "${AGENT_PID[$name]}" 2>/dev/null && echo "${AGENT_PID[$name]}"
    done
    return 0
}

# finish NAME...: waits for the named launchers and everything of the job to end (TOOK_MS from
# the fault), killing what is left at FAULT_CAP seconds (TOOK_MS -1, LEFT: their command lines);
# then RC<i>, ERR<i>, OUT<i> for the i-th launcher.
finish() {
    local cap=$((FAULT_T0 + FAULT_CAP * 1000000000)) left i=0 name
    # The launchers' `timeout` wrappers carry the mark too: none left means every launcher ended.
    # (marked_pids's own status is its last pid's check, not whether it found any.) A launcher
    # just started may not carry it yet (its shell has not run `env`): its own pid counts too.
    while left=$(marked_pids; launchers_alive "$@"); [ -n "$left" ] && [ "$(date +%s%N)" -lt "$cap" ]; do
        sleep 0.05
    done
    if [ -n "$left" ]; then
        TOOK_MS=-1
        # State and age too: what outlives the cap is what needs explaining.
        LEFT=$(ps -o pid=,stat=,etime=,args= -p "${left//$'\n'/,}" 2>/dev/null)
        kill -9 $left 2>/dev/null
    else
        TOOK_MS=$((($(date +%s%N) - FAULT_T0) / 1000000))
        LEFT=
    fi
    for name in "$@"; do
        wait_agent "$name"
        printf -v "RC$i" %s "$RC"
        printf -v "ERR$i" %s "$ERR"
        printf -v "OUT$i" %s "$OUT"
        i=$((i + 1))
    done
}

# A two-node job with FAULT on rank FAULT_RANK (see loop.py), both ranks ready.
start_job() { # [ENV=VALUE...] [-- LAUNCHER_ARGS...]
    new_job
    start_node n0 0 "$@"
    start_node n1 1 "$@"
    wait_ready n0 n1
}

# The line that names the cause: node 0's first "job failed", else node 1's, else node 0's last
# agent line (else node 1's); without its time stamp.
failure_line() {
    local line
    line=$(grep -m1 'job failed' <<<"$ERR0") || line=$(grep -m1 'job failed' <<<"$ERR1") ||
        line=$(printf '%s\n%s\n' "$ERR1" "$ERR0" | grep 'ddpjob-agent:' | tail -n 1)
    printf '%s' "${line#ddpjob-agent: }" | sed 's/ at 20[0-9-]*T[0-9:]*Z//' | cut -c1-120
}

# --- the cases ---------------------------------------------------------------------------------

case_worker_exit() {
    start_job FAULT=exit FAULT_RANK=1
    fault_now
    finish n0 n1
}

case_worker_exit_late() {
    start_job FAULT=exit_late FAULT_RANK=1
    fault_now
    finish n0 n1
}

case_worker_kill() {
    start_job
    fault_now
    kill -9 "$(worker_pid 1)"
    finish n0 n1
}

hang_args() { [ "$LAUNCHER" != agent ] || printf '%s\n' -- --hang-timeout 3; }

case_worker_stop() {
    # shellcheck disable=SC2046
    start_job $(hang_args)
    fault_now
    kill -STOP "$(worker_pid 1)"
    finish n0 n1
}

case_collective_hang() {
    # shellcheck disable=SC2046
    start_job FAULT=deadlock $(hang_args)
    fault_now
    finish n0 n1
}

case_agent1_kill() {
    start_job
    fault_now
    kill -9 "$(launcher_pid n1)"
    finish n0 n1
}

case_agent0_kill() {
    start_job
    fault_now
    kill -9 "$(launcher_pid n0)"
    finish n0 n1
}

# The cable of node 1 pulled: its port on the bridge goes down, packets are dropped silently.
case_link_cut() {
    start_job
    fault_now
    ip -n "$(fault_ns head)" link set v2 down
    finish n0 n1
    ip -n "$(fault_ns head)" link set v2 up
}

# Node 1 frozen (its launcher stopped) until node 0 has ended, then let go: FROZEN_MS is how long
# node 0 took to end the job without it.
case_node_frozen() {
    start_job
    fault_now
    local frozen
    frozen=$(launcher_pid n1)
    kill -STOP "$frozen"
    wait_agent n0
    local rc0=$RC err0=$ERR out0=$OUT
    FROZEN_MS=$((($(date +%s%N) - FAULT_T0) / 1000000))
    kill -CONT "$frozen"
    finish n1
    RC1=$RC0 ERR1=$ERR0 OUT1=$OUT0
    RC0=$rc0 ERR0=$err0 OUT0=$out0
}

# A foreign service holds the store's port on node 0 (accepts, never speaks).
case_port_taken() {
    new_job
    in_node 0 "$PY" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(64); open(sys.argv[2], "w").close()
held = []
while True: held.append(s.accept())' "$(rdzv_port)" "$T/fault/listening" &
    local squatter=$!
    for _ in $(seq 100); do [ -e "$T/fault/listening" ] && break; sleep 0.05; done
    fault_now
    RDZV_TIMEOUT=4 start_node n0 0
    RDZV_TIMEOUT=4 start_node n1 1
    finish n0 n1
    kill "$squatter"
}

case_node_never_starts() {
    new_job
    fault_now
    RDZV_TIMEOUT=4 start_node n0 0
    finish n0
}

case_wrong_token() {
    new_job
    fault_now
    RDZV_TIMEOUT=4 start_node n0 0
    RDZV_TIMEOUT=4 start_node n1 1 DDPJOB_TOKEN=not-this-job
    finish n0 n1
}

# Node 1's launcher writes into a pipe nobody reads while its rank floods stdout; the job is
# otherwise healthy and ends after STEPS.
case_stdout_stall() {
    new_job
    mkfifo "$T/fault/stall"
    sleep 600 <"$T/fault/stall" &
    local reader=$!
    start_node n0 0 FAULT=flood FAULT_RANK=1 STEPS=60
    AGENT_STDOUT="$T/fault/stall" start_node n1 1 FAULT=flood FAULT_RANK=1 STEPS=60
    wait_ready n0 n1
    fault_now
    finish n0 n1
    kill "$reader"
}

# Rank 1 writes FLOOD_LINES lines of 100 bytes at once; the job is otherwise healthy. Two busy
# loops at the agents' own priority run beside it throughout, so that the agents' copier threads
# are scheduled late, as on a busy node.
case_output_flood() {
    local hogs=()
    for _ in 1 2; do
        bash -c 'while :; do :; done' &
        hogs+=($!)
    done
    start_job FAULT=flood FAULT_RANK=1 STEPS=60 FLOOD_LINES="$FLOOD_LINES"
    fault_now
    finish n0 n1
    kill "${hogs[@]}"
}

# Job B (another token) is started on the port of a running job A: B's node 0 cannot have the
# port, B's node 1 reaches A's store. A must run to its end; B must fail at once.
case_two_jobs_one_port() {
    start_job STEPS=400
    fault_now
    RDZV_TIMEOUT=10 start_node b0 0 DDPJOB_TOKEN=job-b-$$
    RDZV_TIMEOUT=10 start_node b1 1 DDPJOB_TOKEN=job-b-$$
    wait_agent b0
    RCB0=$RC ERRB0=$ERR
    wait_agent b1
    RCB1=$RC ERRB1=$ERR
    B_MS=$((($(date +%s%N) - FAULT_T0) / 1000000))
    finish n0 n1
}

# held_connections SCRIPT NOFILE: CONNECTIONS connections to node 0's store, held by SCRIPT (an
# unmarked process on node 1's host) from before node 1 joins until the job ends; node 0's agent
# starts under `prlimit --nofile=NOFILE`.
held_connections() {
    new_job
    NOFILE=$2 start_node n0 0 STEPS=60
    for _ in $(seq 100); do in_node 0 ss -ltn | grep -q ":$(rdzv_port) " && break; sleep 0.05; done
    in_node 1 "$PY" "$FAULT_PY/$1" "$MASTER" "$(rdzv_port)" "$CONNECTIONS" "$T/fault/held" &
    local holder=$!
    for _ in $(seq 600); do [ -s "$T/fault/held" ] && break; sleep 0.05; done
    HELD=$(cat "$T/fault/held" 2>/dev/null)
    fault_now
    start_node n1 1 STEPS=60
    finish n0 n1
    kill "$holder"
}

# Idle connections (never a byte) at a soft descriptor limit of 1024.
case_idle_connections() { held_connections hold_connections.py 1024:4096; }

# A sustained flood: each connection one byte into a handshake it never finishes, a closed one
# opened again, at a hard limit of 1024 that the workers share.
case_flood_connections() { held_connections flood_connections.py 1024:1024; }

# The scheduler's walltime stop: SIGTERM to both launchers during ddp-train's second epoch (each
# step at least 30 ms: an epoch lasts 1 s or more on a machine of any speed), then the job again
# with --resume; CKPT_DIFF compares its end with an uninterrupted run's.
case_walltime() {
    local args="train --synthetic --synthetic-size 2048,256 --epochs 4 --batch-size 32 --seed 7 --min-step-ms 30"
    rm -rf "$T/whole" "$T/chain"
    new_job
    TRAIN_ARGS="$args --checkpoint-dir $T/whole" start_node n0 0
    TRAIN_ARGS="$args --checkpoint-dir $T/whole" start_node n1 1
    finish n0 n1
    WHOLE_RC="$RC0/$RC1"
    new_job
    TRAIN_ARGS="$args --checkpoint-dir $T/chain" start_node n0 0
    TRAIN_ARGS="$args --checkpoint-dir $T/chain" start_node n1 1
    for _ in $(seq 600); do grep -q "^\[rank 0\] epoch 1/" "$T/n0.out" && break; sleep 0.05; done
    fault_now
    kill -TERM "$(launcher_pid n0)" "$(launcher_pid n1)"
    finish n0 n1
    new_job
    TRAIN_ARGS="$args --checkpoint-dir $T/chain --resume" start_node n0 0
    TRAIN_ARGS="$args --checkpoint-dir $T/chain --resume" start_node n1 1
    wait_agent n0
    RESUME_RC=$RC RESUME_OUT=$OUT
    wait_agent n1
    RESUME_RC="$RESUME_RC/$RC"
    CKPT_DIFF=$("$TRAIN" diff "$T/whole/checkpoint.ddpt" "$T/chain/checkpoint.ddpt" --tolerance 0 2>&1) &&
        CKPT_SAME=1 || CKPT_SAME=0
}

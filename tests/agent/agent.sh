#!/bin/bash
# ddpjob-agent end to end on this machine: real agents on 127.0.0.1 as several nodes, bash
# workers, every failure the issue names, and no process left behind after each case.
. "$SRCDIR/tests/lib/agents.sh"

export DDPJOB_TOKEN=test-token-$$
worker env.sh 'printf "%s\n" "rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE lws=$LOCAL_WORLD_SIZE group=$GROUP_RANK/$GROUP_WORLD_SIZE role=$ROLE_RANK/$ROLE_WORLD_SIZE/$ROLE_NAME master=$MASTER_ADDR:$MASTER_PORT restart=$TORCHELASTIC_RESTART_COUNT/$TORCHELASTIC_MAX_RESTARTS run=$TORCHELASTIC_RUN_ID store=$TORCHELASTIC_USE_AGENT_STORE nccl=$NCCL_ASYNC_ERROR_HANDLING/$TORCH_NCCL_ASYNC_ERROR_HANDLING omp=${OMP_NUM_THREADS-unset} token=${DDPJOB_TOKEN-unset} wtoken=${DDPJOB_WORKER_TOKEN-unset} user=$USER_VAR errfile=${TORCHELASTIC_ERROR_FILE:+set}"'

# --- environment, ranks, heterogeneous worker counts -------------------------------------
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --run-id job42)
start_agent n1 USER_VAR=kept -- "${common[@]}" --node-rank 1 --nproc-per-node 1 "$T/env.sh"
start_agent n0 USER_VAR=kept -- "${common[@]}" --node-rank 0 --nproc-per-node 3 "$T/env.sh"
wait_agent n0
out0=$OUT rc0=$RC
wait_agent n1
expect_eq "$rc0/$RC" 0/0 "both agents exit 0 when every worker does"
all=$(printf '%s\n%s\n' "$out0" "$OUT" | sort)
expect_eq "$(grep -c '^\[rank ' <<<"$all")" 4 "4 workers ran (3 on node 0, 1 on node 1)"
expect_eq "$(grep -o 'rank=[0-9]*' <<<"$all" | sort -u | tr '\n' ' ')" "rank=0 rank=1 rank=2 rank=3 " \
    "global ranks are unique and cover 0..3"
expect_contains "$out0" "[rank 1] rank=1 local=1 world=4 lws=3 group=0/2 role=1/4/default" \
    "node 0's second worker: local rank 1 of 3, node rank 0 of 2"
expect_contains "$OUT" "[rank 3] rank=3 local=0 world=4 lws=1 group=1/2 role=3/4/default" \
    "node 1's worker comes after node 0's, node-major"
expect_eq "$(grep -o 'master=[^ ]*' <<<"$all" | sort -u | wc -l)" 1 "every worker gets the same MASTER_ADDR:MASTER_PORT"
expect_contains "$all" "master=127.0.0.1:" "MASTER_ADDR is the master's address"
expect_contains "$all" "restart=0/0 run=job42 store=False nccl=/1" "TORCHELASTIC_* and NCCL defaults as torchrun sets them (not the deprecated NCCL_ASYNC_ERROR_HANDLING)"
expect_contains "$out0" "lws=3 group=0/2 role=0/4/default master" "node 0 ran 3 workers"
expect_contains "$out0" "omp=1 " "OMP_NUM_THREADS=1 with several workers per node"
expect_contains "$OUT" "omp=unset " "OMP_NUM_THREADS untouched with one worker per node"
expect_contains "$all" "token=unset wtoken=" "the job token is not passed on"
expect_contains "$all" "user=kept errfile=set" "the user's environment is"
wtokens=$(grep -o 'wtoken=[^ ]*' <<<"$all" | sort -u)
if [ "$(wc -l <<<"$wtokens")" = 1 ] && grep -Eq '^wtoken=[0-9a-f]{64}$' <<<"$wtokens"; then
    pass "every worker on both nodes gets the same derived DDPJOB_WORKER_TOKEN"
else
    fail "every worker on both nodes gets the same derived DDPJOB_WORKER_TOKEN" "$wtokens"
fi
expect_no_leftovers "nothing left after a clean run"

# --- the job token ---------------------------------------------------------------------------
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 2 --nproc-per-node 1)
start_agent n0 -- "${common[@]}" --node-rank 0 "$T/env.sh"
start_agent n1 DDPJOB_TOKEN=not-the-token -- "${common[@]}" --node-rank 1 "$T/env.sh"
wait_agent n1
expect_eq "$RC" 1 "an agent with the wrong token exits 1"
expect_contains "$ERR" "refused this job's token" "and says its token was refused"
expect_eq "$(grep -c '^\[rank' <<<"$OUT")" 0 "and started no worker"
wait_agent n0
expect_contains "$ERR" "refused connection from 127.0.0.1" "the store logs the refused peer"
expect_contains "$ERR" "node rank(s) 1 never arrived" "node 0 then times out naming the node that never joined"
expect_eq "$RC" 1 "and exits 1"

# --- the store's queue of connections not yet accepted ----------------------------------------
# A network namespace of the suite's own, where net.core.somaxconn (Linux's cap on that queue,
# 4,096 by default) is raised: node 0's store for 10,000 agents queues all of them (a listener's
# Send-Q in ss), so agents starting at once are queued, not dropped.
next_port
# shellcheck disable=SC2016 # expanded by that shell
queue=$(DDPJOB_TOKEN=t timeout 60 unshare -n sh -c '
    ip link set lo up && echo 65535 >/proc/sys/net/core/somaxconn || exit 1
    "$0" --nnodes 10000 --node-rank 0 --master-addr 127.0.0.1 --master-port "$1" --rdzv-timeout 30 true 2>/dev/null &
    for _ in $(seq 300); do
        q=$(ss -ltnH "sport = :$2" | awk "{print \$3}")
        [ -n "$q" ] && break
        sleep 0.1
    done
    kill $! && wait
    echo "$q"' "$AGENT" "$PORT" "$STORE_PORT" 2>&1)
expect_eq "$queue" 10000 "node 0's store queues a whole job of 10,000 agents' connections (where somaxconn allows)"

# (A rendezvous on another host: agents on this one share a token by themselves, torchrun.sh.)
run env -u DDPJOB_TOKEN "$AGENT" --nnodes 2 --node-rank 0 --master-addr 10.255.255.1 --master-port 1 true
expect_eq "$RC" 2 "a multi-node agent without a token refuses to start"
expect_contains "$ERR" "needs its token" "and says how to give one"
expect_contains "$ERR" "DDPJOB_TOKEN" "(DDPJOB_TOKEN or --token-file)"
printf 'secret\n' >"$T/token"
chmod 644 "$T/token"
run env -u DDPJOB_TOKEN "$AGENT" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port 1 --token-file "$T/token" true
expect_contains "$ERR" "--token-file $T/token: others can read it (mode 0644): not trusted; chmod 600" "a token file others can read is refused"
# In a folder others can write, the token file may be another user's, or a link to one.
chmod 600 "$T/token"
chown nobody "$T/token"
run env -u DDPJOB_TOKEN "$AGENT" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port 1 --token-file "$T/token" true
expect_contains "$ERR" "--token-file $T/token: owned by uid $(id -u nobody), not by this user" "a token file another user owns is refused"
chown root "$T/token"
ln -s "$T/token" "$T/token-link"
run env -u DDPJOB_TOKEN "$AGENT" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port 1 --token-file "$T/token-link" true
expect_contains "$ERR" "--token-file $T/token-link: a symbolic link" "and so is a symbolic link to a token file"

# --- a node that never comes -----------------------------------------------------------------
next_port
common=(--nnodes 3 --master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 2 --nproc-per-node 1)
two_agents -- "${common[@]}" "$T/env.sh"
expect_eq "$RC0" 1 "node 0 exits 1 when node 2 never joins"
expect_contains "$ERR0" "rendezvous timed out: node rank(s) 2 never arrived" "naming the missing node rank"
expect_eq "$RC1" 1 "so does node 1"
expect_contains "$ERR1" "node rank(s) 2 never arrived" "with the same reason"
expect_no_leftovers "nothing left after a failed rendezvous"

# Waiting is reported, and agents given different node counts are refused at once.
next_port
common=(--master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 6 --nproc-per-node 1)
run env DDPJ_TESTMARK="$MARK" "$AGENT" --nnodes 2 --node-rank 0 "${common[@]}" "$T/env.sh"
expect_contains "$ERR" "node 0: waiting for node rank(s) 1 to join: 5 s of 6" "the join says every 5 s whom it waits for"
# The other agents say they wait, without reading the store (node 0 reads every record).
next_port
common=(--nnodes 3 --master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 6 --nproc-per-node 1)
two_agents -- "${common[@]}" "$T/env.sh"
expect_contains "$ERR1" "node 1: waiting for the job's 3 nodes to join and node 0 to assign ranks: 5 s of 8" "node 1 says it waits"
expect_contains "$ERR0" "node 0: waiting for node rank(s) 2 to join: 5 s of 6" "node 0 names the one"
# refused_at_once WHAT BOTH WHY ARGS0 -- ARGS1: node 0 joins with ARGS0, node 1 half a second
# later with ARGS1; both must fail at once (not at the 30 s timeout), each saying WHY.
refused_at_once() {
    local what=$1 both=$2 why=$3 first=() start err1 rc1 took
    shift 3
    while [ "$1" != -- ]; do first+=("$1"); shift; done
    shift
    next_port
    local common=(--master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 30 --nproc-per-node 1)
    start=$(date +%s)
    start_agent n0 -- "${common[@]}" --node-rank 0 "${first[@]}" "$T/env.sh"
    # Node 0 joins its own store moments after it listens: it joined first.
    wait_listening && sleep 0.5
    start_agent n1 -- "${common[@]}" --node-rank 1 "$@" "$T/env.sh"
    wait_agent n1
    err1=$ERR rc1=$RC
    wait_agent n0
    took=$(($(date +%s) - start))
    expect_eq "$RC/$rc1" 1/1 "agents given different $what both fail"
    expect_contains "$err1" "$why" "the late one names both $both"
    expect_contains "$ERR" "$why" "and so does the one that joined first"
    if [ "$took" -lt 10 ]; then pass "at once, not at the timeout (${took} s of 30)"; else fail "took ${took} s"; fi
}
refused_at_once --nnodes counts \
    "node rank 1 ($(hostname)) was started with --nnodes 3, but node rank 0 ($(hostname)) joined first with --nnodes 2" \
    --nnodes 2 -- --nnodes 3
expect_no_leftovers "nothing left after a node-count mismatch"

# Two agents that hold the token but were given different run ids (two jobs' agents on one
# port), and two given the same node rank: refused at once, both sides saying which value differs.
refused_at_once "run ids" "run ids" \
    "node rank 1 ($(hostname)) was started with run id job-b, but node rank 0 ($(hostname)) joined first with run id job-a" \
    --nnodes 2 --run-id job-a -- --nnodes 2 --run-id job-b
next_port
common=(--master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 30 --nproc-per-node 1 --nnodes 3)
start_agent n0 -- "${common[@]}" --node-rank 0 "$T/env.sh"
wait_listening && sleep 0.5
start_agent n1 -- "${common[@]}" --node-rank 1 "$T/env.sh"
# Node 1 joins moments after it connects to the store.
for _ in $(seq 300); do ss -tnp "dport = :$STORE_PORT" | grep -q "pid=$(agent_pid n1)," && break; sleep 0.1; done
sleep 0.5
start_agent n2 -- "${common[@]}" --node-rank 1 "$T/env.sh"
wait_agent n2
err2=$ERR rc2=$RC
wait_agent n1
err1=$ERR
wait_agent n0
expect_eq "$rc2/$RC" 1/1 "a second agent with a taken node rank fails, and so does the job"
why="node rank 1 ($(hostname)) is taken: node rank 1 has already joined from host $(hostname)"
expect_contains "$err2" "$why" "the second one says its node rank is taken"
expect_contains "$ERR$err1" "$why" "and the agents waiting for it are told the same"
expect_no_leftovers "nothing left after run-id and node-rank clashes"

# More agents than node 0 may keep descriptors open for (a store connection each): its store
# forks relay processes to hold them, and every agent joins. 70 agents and their workers start
# in seconds here, in minutes on a machine busy with other suites: deadlines for the latter.
next_port
RELAY_NODES=70
common=(--nnodes "$RELAY_NODES" --master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 300 --nproc-per-node 1)
AGENT_KILL_AFTER=600 AGENT=bash start_agent n0 -- -c 'ulimit -n 130 && exec "$@"' limit "$AGENT" "${common[@]}" --node-rank 0 "$T/env.sh"
for i in $(seq 1 $((RELAY_NODES - 1))); do AGENT_KILL_AFTER=600 start_agent "n$i" -- "${common[@]}" --node-rank "$i" "$T/env.sh"; done
rcs=
for i in $(seq 0 $((RELAY_NODES - 1))); do wait_agent "n$i"; rcs+=$RC; [ "$i" = 0 ] && err0=$ERR; done
expect_eq "$rcs" "$(printf '0%.0s' $(seq $RELAY_NODES))" "$RELAY_NODES agents join node 0 under a hard descriptor limit of 130, and all end well"
expect_contains "$err0" "relay processes hold the connections of its $RELAY_NODES clients (a process here may hold 130 descriptors)" \
    "node 0 says its store's relays hold them"
expect_no_leftovers "nothing left after a job larger than node 0's descriptor limit"

# So many that even relays cannot hold them: said at once, naming the limit, instead of a
# rendezvous that never lets the last ones in.
next_port
start=$SECONDS
run env DDPJ_TESTMARK="$MARK" bash -c 'ulimit -n 400 && exec "$@"' limit "$AGENT" --nnodes 100000 \
    --node-rank 0 --master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 30 "$T/env.sh"
expect_eq "$RC" 1 "node 0 of 100000 agents under a hard descriptor limit of 400 fails"
expect_contains "$ERR" "cannot serve the rendezvous store" "saying its store cannot serve"
expect_contains "$ERR" "keeps a descriptor for each of its 100000 clients, and one process here may hold 400 (the hard RLIMIT_NOFILE, \`ulimit -Hn\`): that takes more than 64 relay processes" \
    "naming the limit and the job's agents"
if [ $((SECONDS - start)) -lt 20 ]; then pass "at once, not at the rendezvous timeout"; else fail "took $((SECONDS - start)) s"; fi
expect_no_leftovers "nothing left after the descriptor limit"

# --- node 0 stalls during the join ------------------------------------------------------------
# Node 1's handshake waits on a node 0 that is stopped for 1.5 s: it tries again until
# --rdzv-timeout instead of failing at its first unanswered try.
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --rdzv-timeout 30 --nproc-per-node 1)
start_agent n0 -- "${common[@]}" --node-rank 0 "$T/env.sh"
wait_listening
kill -STOP "$(agent_pid n0)"
start_agent n1 -- "${common[@]}" --node-rank 1 "$T/env.sh"
sleep 1.5
kill -CONT "$(agent_pid n0)"
wait_agent n1
expect_eq "$RC" 0 "node 1 joins a node 0 that stalled for 1.5 s during its handshake"
wait_agent n0
expect_eq "$RC" 0 "and node 0 runs the job"
expect_no_leftovers "nothing left after a stalled join"

# A foreign service holds the port (accepts, never speaks): node 1 keeps trying until
# --rdzv-timeout, then says what it found there.
next_port
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); held = []
while True: held.append(s.accept())' "$STORE_PORT" &
foreign=$!
wait_listening
run env DDPJ_TESTMARK="$MARK" "$AGENT" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$PORT" \
    --rdzv-timeout 3 "$T/env.sh"
kill "$foreign"
expect_eq "$RC" 1 "node 1 gives up on a port a foreign service holds, at --rdzv-timeout"
expect_contains "$ERR" "no store greeting (receive: timed out): node 0 is busy or stopped, or another service holds this port" \
    "saying what it found there"

# --- a worker that crashes -------------------------------------------------------------------
# Rank 2 ends its stderr as PyTorch's NCCL watchdog does: the error, then a C++ backtrace, which
# the summary's excerpt leaves out.
worker crash.sh 'if [ "$RANK" = 2 ]; then sleep 0.5; echo "about to die" >&2
    printf "\nException raised from run at pg.cpp:2125 (most recent call first):\n" >&2
    for i in $(seq 0 9); do echo "frame #$i: <unknown function> + 0x$i (in libc.so.6)" >&2; done
    echo >&2; kill -9 $$; fi
trap "echo rank $RANK stopping >&2; exit 143" TERM
sleep 60 & wait'
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 2 --grace 5)
start_agent n0 -- "${common[@]}" --node-rank 0 --error-file "$T/error0.json" "$T/crash.sh"
start_agent n1 -- "${common[@]}" --node-rank 1 --error-file "$T/error1.json" "$T/crash.sh"
wait_agent n1
err1=$ERR rc1=$RC
wait_agent n0
expect_eq "$RC/$rc1" 137/137 "both agents exit 128+9 when a worker is killed by SIGKILL"
expect_contains "$ERR" "job failed (exit 137): rank 2 (node 1, host $(hostname), local rank 0) killed by SIGKILL" \
    "node 0's summary names the failed rank, node, host and signal"
expect_lacks "$err1" "out-of-memory" "a SIGKILL by hand is not called an OOM kill"
expect_contains "$ERR" "rank 0 (node 0, host $(hostname), local rank 0) stopped by the agent" \
    "and its own workers as stopped by the agent"
expect_contains "$OUT$ERR" "[rank 0] rank 0 stopping" "node 0's workers got SIGTERM first"
expect_contains "$err1" "| about to die" "node 1's summary shows the last lines of the failed rank's stderr"
expect_lacks "$err1" "| frame #" "the summary leaves a C++ backtrace out of the excerpt"
json=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["failed_ranks"][0]; print(d["exit_code"], d["first_failure"]["rank"], f["rank"], f["what"], f["stderr_tail"][-1])' "$T/error1.json" 2>&1)
expect_eq "$json" "137 2 2 killed by SIGKILL about to die" "--error-file writes the same facts as JSON"
json=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["first_failure"]["host"], d["first_failure"]["node"], len(d["failed_ranks"]))' "$T/error0.json" 2>&1)
expect_eq "$json" "$(hostname) 1 0" "node 0's error file names the first failure elsewhere"
expect_no_leftovers "no worker (or its children) left after a crash"

# --- out of memory, in a real memory cgroup ---------------------------------------------------
# The agent (and so its workers) in a group limited to 64 MiB: rank 1 allocates 256 MiB and the
# kernel's OOM killer ends it; the same group's rank 1 SIGKILLed by hand is no OOM kill.
# shellcheck source=../lib/cgroup.sh
. "$SRCDIR/tests/lib/cgroup.sh"
in_cgroup_script "$T/in_cgroup"
if mem_cgroup_make "ddpjob-test-$$" 64M; then
    at_exit "cgroup_remove $CGROUP"
    worker hog.sh 'echo $$ >"$T_DIR/rank$RANK.pid"
    if [ "$RANK" = 1 ] && [ "$HOG" = 1 ]; then exec /usr/bin/python3 -c "bytearray(256 << 20)"; fi
    sleep 60 & wait'
    run env DDPJ_TESTMARK="$MARK" T_DIR="$T" HOG=1 "$T/in_cgroup" "$CGROUP" "$AGENT" --standalone \
        --nproc-per-node 2 --error-file "$T/oom.json" "$T/hog.sh"
    expect_eq "$RC" 137 "a worker killed by the OOM killer: the job exits 128+9"
    expect_contains "$ERR" "job failed (exit 137): rank 1 (node 0, host $(hostname), local rank 1) killed by the out-of-memory killer: its memory cgroup's limit 64 MiB was reached (/ddpjob-test-$$, peak" \
        "the summary names the OOM kill, the rank, the group and its limit"
    json=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["failed_ranks"][0]; print(d["first_failure"]["cause"], f["rank"], f["cause"], f["memory_limit_bytes"], f["memory_peak_bytes"] > 0)' "$T/oom.json" 2>&1)
    expect_eq "$json" "out_of_memory 1 out_of_memory 67108864 True" "--error-file carries the OOM kill as data (cause, limit, peak)"
    expect_no_leftovers "nothing left after an OOM kill"

    rm -f "$T"/rank*.pid
    env DDPJ_TESTMARK="$MARK" T_DIR="$T" HOG=0 "$T/in_cgroup" "$CGROUP" "$AGENT" --standalone \
        --nproc-per-node 2 "$T/hog.sh" >"$T/oom.out" 2>"$T/oom.err" &
    AGENT_PID[oom]=$!
    for _ in $(seq 100); do [ -s "$T/rank1.pid" ] && break; sleep 0.1; done
    kill -9 "$(cat "$T/rank1.pid")"
    wait_agent oom
    expect_contains "$ERR" "rank 1 (node 0, host $(hostname), local rank 1) killed by SIGKILL" \
        "a plain SIGKILL in the same limited group is named as the signal"
    expect_lacks "$ERR" "out-of-memory" "and not as an OOM kill"
    expect_no_leftovers "nothing left after the SIGKILL"
else
    fail "a memory cgroup to run an agent in" "$CGROUP_WHY"
fi

# --- a GPU out of memory, in PyTorch's words -----------------------------------------------------
# What PyTorch prints is the agent's only evidence (tests/gpu/gpu.sh has real PyTorch run out on a
# real GPU); here its words, with the GPUs CUDA_VISIBLE_DEVICES shows the workers.
worker gpu_oom.sh 'if [ "$RANK" = 1 ]; then
    echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 GiB. GPU 0 has a total capacity of 79.19 GiB" >&2
    echo "[rank1]: Connection reset by peer" >&2; exit 1; fi
sleep 60 & wait'
run env DDPJ_TESTMARK="$MARK" CUDA_VISIBLE_DEVICES=3,5 "$AGENT" --standalone --nproc-per-node 2 \
    --error-file "$T/gpu_oom.json" "$T/gpu_oom.sh"
expect_contains "$ERR" "job failed (exit 1): rank 1 (node 0, host $(hostname), local rank 1) ran out of GPU memory on GPU 5 (exited with code 1)" \
    "a GPU out of memory is named as such, with the GPU the rank worked on"
expect_contains "$ERR" 'its stderr says "CUDA out of memory. Tried to allocate 200.00 GiB. GPU 0 has a total capacity of 79.19 GiB" (the GPU'"'"'s memory, not the node'"'"'s: no OOM kill)' \
    "the summary quotes the allocator's words, before any about a peer"
json=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["failed_ranks"][0]; print(d["first_failure"]["cause"], f["cause"], f["gpu"])' "$T/gpu_oom.json" 2>&1)
expect_eq "$json" "gpu_out_of_memory gpu_out_of_memory 5" "--error-file carries it as gpu_out_of_memory with the GPU"
expect_no_leftovers "nothing left after a GPU out of memory"

# A worker's TORCHELASTIC_ERROR_FILE reaches --error-file's report as text (its directory is the
# agent's temporary one, gone at exit).
worker writes_error.sh 'printf "{\"message\": \"boom at step 7\"}" >"$TORCHELASTIC_ERROR_FILE"; exit 4'
run env DDPJ_TESTMARK="$MARK" "$AGENT" --standalone --nproc-per-node 1 --error-file "$T/report.json" \
    "$T/writes_error.sh"
expect_eq "$RC" 4 "a worker that wrote an error file fails the job with its code"
json=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["failed_ranks"][0]["error"])' \
    "$T/report.json" 2>&1)
expect_eq "$json" '{"message": "boom at step 7"}' "--error-file's report embeds the worker's error file"

# A stopped worker gets SIGCONT with its SIGTERM, so the teardown does not wait out the grace.
worker stops.sh 'if [ "$RANK" = 1 ]; then kill -STOP $$; sleep 60; fi; sleep 1; exit 3'
start=$(date +%s)
run env DDPJ_TESTMARK="$MARK" timeout -s KILL 60 "$AGENT" --standalone --nproc-per-node 2 --grace 20 "$T/stops.sh"
took=$(($(date +%s) - start))
expect_eq "$RC" 3 "a job with a stopped worker fails with the other's code"
if [ "$took" -lt 10 ]; then pass "and the stopped worker ends without waiting out the grace (${took} s, grace 20 s)"; else
    fail "the stopped worker was held until the grace ran out (${took} s, grace 20 s)" "$ERR"; fi
expect_no_leftovers "nothing left after stopping a stopped worker"

# --hang-timeout: a worker that writes nothing and uses no CPU (here: stopped, so after half the
# timeout) is named as hung, while one that keeps writing is not.
worker hangs.sh 'if [ "$RANK" = 1 ]; then kill -STOP $$; fi; while :; do echo tick; sleep 0.2; done'
start=$(date +%s)
run env DDPJ_TESTMARK="$MARK" timeout -s KILL 60 "$AGENT" --standalone --nproc-per-node 2 --hang-timeout 1.5 \
    --grace 2 "$T/hangs.sh"
took=$(($(date +%s) - start))
expect_eq "$RC" 1 "a hung worker fails the job (--hang-timeout)"
expect_contains "$ERR" "job failed (exit 1): rank 1 (node 0, host $(hostname), local rank 1) hung: stopped by a signal, silent for" \
    "naming the hung rank"
if [ "$took" -lt 10 ]; then pass "soon after the timeout (${took} s)"; else fail "the hang took ${took} s to end the job" "$ERR"; fi
expect_no_leftovers "nothing left after a hung worker"

# More workers than descriptors: a clean error that says what to do, exit 1 (not 127, which
# means a missing program).
run env DDPJ_TESTMARK="$MARK" bash -c 'ulimit -n 64 && exec "$0" --standalone --nproc-per-node 40 true' "$AGENT"
expect_eq "$RC" 1 "too many workers for the descriptor limit fail the job with 1"
expect_contains "$ERR" "raise \`ulimit -n\` or start fewer workers" "saying what to do"
expect_no_leftovers "nothing left after running out of descriptors"

# --- an agent that is killed -----------------------------------------------------------------
worker sleepy.sh 'echo started; sleep 60 & wait'
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 2 --heartbeat 0.5 --grace 1)
start_agent n0 -- "${common[@]}" --node-rank 0 "$T/sleepy.sh"
start_agent n1 -- "${common[@]}" --node-rank 1 "$T/sleepy.sh"
for _ in $(seq 100); do [ "$(grep -c started "$T/n1.out")" = 2 ] && break; sleep 0.1; done
start=$(date +%s%N)
kill -9 "$(agent_pid n1)"
wait_agent n0
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "$RC" 1 "node 0 exits 1 when node 1's agent is killed"
expect_contains "$ERR" "node 1 (host $(hostname)): agent lost: its connection to node 0's store closed" \
    "naming the lost node and why"
if [ "$took" -lt 6000 ]; then pass "within a bounded time (${took} ms, heartbeat 0.5 s)"; else fail "lost agent noticed too late: $took ms"; fi
wait_agent n1
expect_no_leftovers "the killed agent's workers died with it (PR_SET_PDEATHSIG)"

# Node 1's agent killed while node 0's worker depends on node 1's (it fails when its peer
# vanishes): the cause named is the lost node, not the worker that failed because of it, and
# node 0 does not wait for a goodbye from the dead node.
worker peer.sh 'echo $$ >"$PEER_DIR/rank$RANK"; echo started
if [ "$RANK" = 0 ]; then
    until [ -s "$PEER_DIR/rank1" ]; do sleep 0.05; done
    while kill -0 "$(cat "$PEER_DIR/rank1")" 2>/dev/null; do sleep 0.05; done
    echo "rank 0: Connection reset by peer" >&2; exit 1
fi
sleep 60 & wait'
mkdir -p "$T/peers"
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 1 --heartbeat 1 --grace 2)
start_agent n0 PEER_DIR="$T/peers" -- "${common[@]}" --node-rank 0 "$T/peer.sh"
start_agent n1 PEER_DIR="$T/peers" -- "${common[@]}" --node-rank 1 "$T/peer.sh"
wait_for started "$T/n1.out" "$T/n0.out"
start=$(date +%s%N)
kill -9 "$(agent_pid n1)"
wait_agent n0
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "$RC" 1 "node 0 exits 1 when node 1's agent is killed under a worker that needs it"
expect_contains "$ERR" "job failed (exit 1): node 1 (host $(hostname)): agent lost" "the lost node is named as the cause"
expect_contains "$ERR" "  rank 0 (node 0, host $(hostname), local rank 0) " "and node 0's worker is listed"
if [ "$took" -lt 3000 ]; then pass "node 0 ends without waiting for the dead node's goodbye (${took} ms)"; else
    fail "node 0 took ${took} ms to end after node 1 was killed" "$ERR"; fi
wait_agent n1
expect_no_leftovers "nothing left after the agent under a dependent worker was killed"

next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 1 --grace 1)
start_agent n0 -- "${common[@]}" --node-rank 0 "$T/sleepy.sh"
start_agent n1 -- "${common[@]}" --node-rank 1 "$T/sleepy.sh"
wait_for started "$T/n1.out" "$T/n0.out"
kill -9 "$(agent_pid n0)"
wait_agent n1
expect_eq "$RC" 1 "node 1 exits 1 when node 0 (the store) is killed"
expect_contains "$ERR" "lost the rendezvous store of node 0" "and says it lost the store"
expect_no_leftovers "nothing left after node 0's agent was killed"

# --- the agent's output and its reader -------------------------------------------------------
# Two ranks each write LINES numbered lines of 100 bytes at once, then (with TAIL) more after a
# pause. count_lines FILE RANK: "N lines, N torn, N out of order" for that rank's lines in FILE.
worker numbered.sh "$(cat <<'WORKER'
awk -v n="$LINES" 'BEGIN { x = sprintf("%91s", ""); gsub(/ /, "x", x)
    for (i = 0; i < n; i++) printf "%07d %s\n", i, x }'
if [ -n "${TAIL:-}" ]; then sleep "$TAIL"; echo "rank $RANK after the pause"; fi
echo "rank $RANK wrote $LINES lines" >&2
WORKER
)"
count_lines() {
    grep "^\[rank $2\] [0-9]\{7\} " "$1" | awk -v x="$(printf 'x%.0s' $(seq 91))" \
        'NF != 4 || $4 != x { torn++ } $3 + 0 != NR - 1 { order++ }
         END { printf "%d lines, %d torn, %d out of order", NR, torn, order }'
}
# reader_fifo NAME PAUSE: a FIFO at $T/NAME.fifo whose reader waits PAUSE seconds before it
# copies everything to $T/NAME.read (PAUSE "never": it never reads).
reader_fifo() {
    rm -f "$T/$1.fifo"
    mkfifo "$T/$1.fifo"
    if [ "$2" = never ]; then
        sleep 120 <"$T/$1.fifo" &
    else
        { sleep "$2"; cat; } <"$T/$1.fifo" >"$T/$1.read" &
    fi
    READER=$!
}

# A reader that pauses for 3 s, shorter than the stall deadline (10 s by default), while 2 ranks
# write 150,000 lines each, far more than the agent's pipe holds: nothing is lost, the workers
# wait in their writes.
reader_fifo pause 3
start=$(date +%s%N)
AGENT_STDOUT=$T/pause.fifo start_agent pause LINES=150000 -- --standalone --nproc-per-node 2 "$T/numbered.sh"
wait_agent pause
wait "$READER"
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "$RC" 0 "a reader that pauses shorter than the stall deadline: the job succeeds"
for r in 0 1; do
    expect_eq "$(count_lines "$T/pause.read" "$r")" "150000 lines, 0 torn, 0 out of order" \
        "... and every line of rank $r arrives whole, once, in order"
done
if [ "$took" -ge 3000 ]; then pass "... the workers waited for the reader (${took} ms)"; else
    fail "the workers waited for the reader" "the job took ${took} ms with a reader paused for 3 s"; fi
expect_lacks "$ERR" "dropped" "... nothing is dropped"

# A reader that stalls for 6 s, past a stall deadline of 1.5 s, and then reads again while the
# job still runs: lines are dropped only after the deadline, the agent says how many of which
# rank, and that count is exactly what never arrived.
reader_fifo stall 6
AGENT_STDOUT=$T/stall.fifo start_agent stall LINES=150000 TAIL=8 -- --standalone --nproc-per-node 2 \
    --output-stall-timeout 1.5 "$T/numbered.sh"
wait_agent stall
wait "$READER"
expect_eq "$RC" 0 "a reader that stalls past the stall deadline: the job still succeeds"
message=$(grep "line(s) of stdout dropped" <<<"$ERR")
expect_contains "$message" "the reader of this agent's stdout had taken nothing for" \
    "... and the agent says that lines were dropped while the reader had stalled"
for r in 0 1; do
    got=$(count_lines "$T/stall.read" "$r")
    said=$(sed -n "s/.*rank $r: \([0-9]*\).*/\1/p" <<<"$message")
    expect_eq "$((${got%% lines*} + ${said:-0}))/${got#* lines, }" "150000/0 torn, 0 out of order" \
        "... rank $r: the lines that arrived (${got%% lines*}) and the dropped count (${said:-none}) make all 150000, none torn"
    expect_contains "$(cat "$T/stall.read")" "[rank $r] rank $r after the pause" "... and rank $r's later lines arrive again"
done
stalled=$(sed -n "s/.*had taken nothing for \([0-9.]*\) s.*/\1/p" <<<"$message")
if awk -v s="${stalled:-0}" 'BEGIN { exit !(s >= 1.5) }'; then pass "... after the deadline (stalled ${stalled} s)"; else
    fail "lines are dropped only after the stall deadline" "$message"; fi

# A reader that never reads (a FIFO, like a pipe into a stopped process): the job still ends,
# with its status, within a bounded time, and the agent says what it dropped.
reader_fifo never never
start=$(date +%s%N)
AGENT_STDOUT=$T/never.fifo start_agent never LINES=200000 -- --standalone --nproc-per-node 1 \
    --output-stall-timeout 2 "$T/numbered.sh"
wait_agent never
took=$((($(date +%s%N) - start) / 1000000))
kill "$READER"
expect_eq "$RC" 0 "a job whose agent's stdout nobody reads still ends, with its status"
if [ "$took" -lt 20000 ]; then pass "within a bounded time (${took} ms)"; else fail "it took ${took} ms"; fi
expect_contains "$ERR" "line(s) of stdout dropped (rank 0: " "and the agent says that it dropped output, and whose"
expect_no_leftovers "nothing left after a stalled reader"

# --- torchrun's habits ---------------------------------------------------------------------
# A PROGRAM ending in .py runs under python3 (it need not be executable), -m runs a module,
# --no-python runs it as given, --local-rank-arg passes --local_rank=N.
printf '%s\n' 'import os, sys' \
    'print("python", os.path.basename(sys.executable).startswith("python"), sys.argv[1:], os.environ["LOCAL_RANK"])' \
    >"$T/hello.py"
mkdir -p "$T/mods" && cp "$T/hello.py" "$T/mods/hellomod.py"
run env DDPJ_TESTMARK="$MARK" "$AGENT" --standalone --nproc-per-node 2 "$T/hello.py" a b
expect_contains "$OUT" "[rank 1] python True ['a', 'b'] 1" "a .py program runs under python3, with its arguments"
run env DDPJ_TESTMARK="$MARK" PYTHONPATH="$T/mods" "$AGENT" --standalone --nproc-per-node 1 -m hellomod x
expect_contains "$OUT" "[rank 0] python True ['x'] 0" "-m runs a module"
printf '#!/bin/sh\necho "as given: $1"\n' >"$T/shell.py" && chmod +x "$T/shell.py"
run env DDPJ_TESTMARK="$MARK" "$AGENT" --standalone --nproc-per-node 1 --no-python "$T/shell.py" y
expect_contains "$OUT" "[rank 0] as given: y" "--no-python runs the program as given"
printf '%s\n' 'import argparse' 'p = argparse.ArgumentParser()' \
    'p.add_argument("--local_rank", type=int, required=True)' \
    'print("local_rank", p.parse_args().local_rank)' >"$T/launch.py"
run env DDPJ_TESTMARK="$MARK" "$AGENT" --standalone --nproc-per-node 2 --local-rank-arg "$T/launch.py"
expect_contains "$OUT" "[rank 1] local_rank 1" "--local-rank-arg passes --local_rank=N as torch.distributed.launch does"
run "$AGENT" --standalone -m --no-python x
expect_eq "$RC" 2 "-m with --no-python is a usage error"
# torchrun's rendezvous spellings map onto ours; what cannot be honoured is refused.
next_port
run env DDPJ_TESTMARK="$MARK" "$AGENT" --nnodes 1:1 --node_rank 0 --rdzv_backend c10d \
    --rdzv_endpoint "127.0.0.1:$PORT" --rdzv_id tr-42 --nproc_per_node 1 "$T/env.sh"
expect_contains "$OUT" "master=127.0.0.1:" "--rdzv-endpoint HOST:PORT names the master"
expect_contains "$OUT" "run=tr-42" "--rdzv-id is the run id"
run "$AGENT" --nnodes 3:2 --node-rank 0 --master-addr 127.0.0.1 --master-port 1 true
expect_contains "$ERR" '--nnodes: invalid value "3:2"' "a range whose least is above its most is refused"
run "$AGENT" --nnodes 1:2 --spares 1 --node-rank 0 --master-addr 127.0.0.1 --master-port 1 true
expect_contains "$ERR" "--spares 1 with --nnodes 1:2: spares stand by for a job of one node count" \
    "spares with an elastic range are refused, saying why"
run "$AGENT" --nnodes 2 --spares 1 --preflight strict --node-rank 0 --master-addr 127.0.0.1 --master-port 1 true
expect_contains "$ERR" "--preflight strict and only need every node at the start" "so is a strict preflight with spares"
run "$AGENT" --standalone --rdzv-backend etcd true
expect_contains "$ERR" "--rdzv-backend etcd: not supported" "and so is a rendezvous backend we do not have"
expect_no_leftovers "nothing left after the torchrun habits"

# --- restart ---------------------------------------------------------------------------------
worker flaky.sh 'echo "attempt $TORCHELASTIC_RESTART_COUNT of rank $RANK"
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "$RANK" = 1 ]; then exit 3; fi
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then sleep 30; fi'
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 1 --max-restarts 2 --grace 1)
two_agents -- "${common[@]}" "$T/flaky.sh"
expect_eq "$RC1" 0 "a job whose worker fails once succeeds after a restart"
expect_contains "$OUT1" "[rank 1] attempt 1 of rank 1" "the restarted worker sees TORCHELASTIC_RESTART_COUNT=1"
expect_contains "$ERR1" "attempt 0 failed: rank 1 (node 1, host $(hostname), local rank 0) exited with code 3" \
    "the agent says which attempt failed and why"
expect_contains "$ERR1" "; restarting every worker (restart 1 of 2)" "and that it restarts"
expect_lacks "$ERR1" "job failed" "no 'job failed' for a job that then succeeded"
expect_contains "$ERR1" "job succeeded after 1 restart(s)" "the last line says the job succeeded after the restart"
expect_eq "$RC0" 0 "every agent exits 0 after the successful restart"
expect_contains "$OUT0" "[rank 0] attempt 1 of rank 0" "the healthy node's workers were restarted too"

worker always.sh 'exit 5'
start_agent n0 -- --standalone --nproc-per-node 2 --max-restarts 1 "$T/always.sh"
wait_agent n0
expect_eq "$RC" 5 "out of restarts, the agent exits with the worker's code"
expect_eq "$(grep -c 'node 0 of 1' <<<"$ERR")" 2 "after two attempts (one restart)"
expect_eq "$(grep -c 'job failed' <<<"$ERR")" 1 "with one summary, for the last attempt"

# --- signals ---------------------------------------------------------------------------------
worker trapper.sh 'trap "echo got USR2; exit 0" USR2
trap "echo got TERM; exit 0" TERM
echo ready
sleep 60 & wait'
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 2)
start_agent n0 -- "${common[@]}" --node-rank 0 "$T/trapper.sh"
start_agent n1 -- "${common[@]}" --node-rank 1 "$T/trapper.sh"
for _ in $(seq 100); do [ "$(grep -c ready "$T/n0.out" "$T/n1.out" | awk -F: '{s+=$2} END {print s}')" = 4 ] && break; sleep 0.1; done
kill -USR2 "$(agent_pid n0)" "$(agent_pid n1)"
wait_agent n0
expect_contains "$OUT" "[rank 1] got USR2" "SIGUSR2 to the agent reaches its workers"
expect_contains "$ERR" "forwarded SIGUSR2 to 2 worker(s)" "and the agent says so"
expect_eq "$RC" 0 "workers that checkpoint and exit 0 on USR2 end the job with 0"
wait_agent n1
expect_eq "$RC" 0 "on every node"

next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 1 --grace 2)
start_agent n0 -- "${common[@]}" --node-rank 0 "$T/trapper.sh"
start_agent n1 -- "${common[@]}" --node-rank 1 "$T/sleepy.sh"
wait_for ready "$T/n0.out" && wait_for started "$T/n1.out"
kill -TERM "$(agent_pid n0)"
wait_agent n0
expect_eq "$RC" 143 "an agent told SIGTERM exits 128+15"
expect_contains "$OUT" "[rank 0] got TERM" "after forwarding SIGTERM to its worker"
wait_agent n1
expect_eq "$RC" 143 "the other agents stop too"
expect_contains "$ERR" "the agent received SIGTERM" "naming why"
expect_no_leftovers "nothing left after SIGTERM"

# --- a straggler after the others finished ---------------------------------------------------
worker straggler.sh 'if [ "$GROUP_RANK" = 1 ]; then echo started; sleep 60 & wait; fi'
next_port
common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 1 --exit-timeout 1 --grace 1)
start_agent n0 -- "${common[@]}" --node-rank 0 "$T/straggler.sh"
start_agent n1 -- "${common[@]}" --node-rank 1 "$T/straggler.sh"
start=$(date +%s%N)
wait_agent n0
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "$RC" 1 "a node whose workers finished fails the job when another node is still running after --exit-timeout"
expect_contains "$ERR" "node 0 finished, but other nodes were still running 1 s later (--exit-timeout)" \
    "naming the straggler rule"
if [ "$took" -lt 8000 ]; then pass "the job does not hang at the end (${took} ms)"; else fail "straggler noticed too late: $took ms"; fi
wait_agent n1
expect_eq "$RC" 1 "the straggling node's agent stops its worker and exits 1 too"
expect_contains "$OUT" "[rank 1] started" "(its worker had started)"
expect_no_leftovers "the straggling worker is gone"

# --- the workload refuses its arguments -------------------------------------------------------
# argparse's way: a usage line on stderr and exit 2 at once. The summary says whose error it is.
worker usage.py 'import argparse
argparse.ArgumentParser(prog="train.py").add_argument("--data", required=True)
argparse.ArgumentParser(prog="train.py").parse_args(["--epochs", "3"])'
run env DDPJ_TESTMARK="$MARK" "$AGENT" --standalone --nproc-per-node 1 --python /usr/bin/python3 "$T/usage.py"
expect_eq "$RC" 2 "a workload that refuses its arguments fails the job with its exit 2"
expect_contains "$ERR" "exit 2 within 10 s of its start: the workload's own usage error, not the job's" \
    "and the summary says it is the workload's usage error"
expect_contains "$ERR" "| train.py: error: unrecognized arguments: --epochs 3" "with the workload's own message"

# --- node identity from mpirun (one agent per node) -----------------------------------------
next_port
run env DDPJ_TESTMARK="$MARK" MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" USER_VAR=kept \
    timeout -s KILL 60 mpirun -np 2 --allow-run-as-root --oversubscribe \
    -x DDPJ_TESTMARK -x MASTER_ADDR -x MASTER_PORT -x DDPJOB_TOKEN -x USER_VAR \
    "$AGENT" --nproc-per-node 2 "$T/env.sh"
expect_eq "$RC" 0 "mpirun -np 2 starts two agents that form one job"
expect_eq "$(grep -o '^\[rank [0-9]\] rank=[0-9] local=[0-9] world=[0-9] lws=[0-9] group=[0-9]/[0-9]' <<<"$OUT" | sort | tr '\n' ' ')" \
    "[rank 0] rank=0 local=0 world=4 lws=2 group=0/2 [rank 1] rank=1 local=1 world=4 lws=2 group=0/2 [rank 2] rank=2 local=0 world=4 lws=2 group=1/2 [rank 3] rank=3 local=1 world=4 lws=2 group=1/2 " \
    "node ranks come from OMPI_COMM_WORLD_RANK/SIZE, the master from MASTER_ADDR"
expect_no_leftovers "nothing left after the mpirun job"

# --- logs, standalone, two jobs at once ------------------------------------------------------
worker chatty.sh 'echo "out of $RANK"; echo "err of $RANK" >&2; printf "no newline $RANK"'
start_agent s -- --standalone --nproc-per-node 2 --log-dir "$T/logs" --run-id r1 "$T/chatty.sh"
wait_agent s
expect_eq "$RC" 0 "--standalone runs a one-node job"
expect_eq "$(cat "$T/logs/r1/attempt_0/rank_1/stdout.log")" "out of 1
no newline 1" "--log-dir keeps each rank's full stdout"
expect_eq "$(cat "$T/logs/r1/attempt_0/rank_0/stderr.log")" "err of 0" "and stderr"
expect_contains "$OUT" "[rank 0] no newline 0" "a last line without newline is relayed whole"

# A shared log folder (sticky, open to all): another user (nobody) made this run's folder first,
# open to all, with links where the ranks' logs go, to our file. A one-node run takes a fresh
# folder; a multi-node run, whose nodes share the run's folder, refuses it. Our file is untouched.
shared_logs=$(mktemp -d /tmp/ddpjob-shared-logs.XXXXXX)
chmod 1777 "$shared_logs"
at_exit 'rm -rf "$shared_logs"'
echo "keep me" >"$T/important.txt"
runuser -u nobody -- bash -c 'umask 0 && mkdir -p "$1/r2/attempt_0/rank_0" "$1/r3/attempt_0/rank_0" &&
    ln -s "$2" "$1/r2/attempt_0/rank_0/stdout.log" && ln -s "$2" "$1/r3/attempt_0/rank_0/stdout.log"' \
    plant "$shared_logs" "$T/important.txt"
expect_eq "$(stat -c %U "$shared_logs/r3/attempt_0/rank_0/stdout.log")" nobody "nobody planted the run folders and links"
start_agent s -- --standalone --nproc-per-node 1 --log-dir "$shared_logs" --run-id r2 "$T/chatty.sh"
wait_agent s
expect_eq "$RC:$(cat "$shared_logs/r2.1/attempt_0/rank_0/stdout.log" 2>&1)" "0:out of 0
no newline 0" "a one-node run whose folder another user planted logs to a fresh one (r2.1)"
next_port
two_agents -- --nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 1 \
    --log-dir "$shared_logs" --run-id r3 "$T/chatty.sh"
expect_eq "$RC0" 1 "a 2-node job whose run folder another user made refuses to start"
expect_contains "$ERR0" "--log-dir: refusing $shared_logs/r3: not a private folder of this user's (owner nobody (uid $(id -u nobody)), mode 0777)" \
    "naming the folder and its owner"
expect_eq "$(cat "$T/important.txt")" "keep me" "the file the planted links point to is untouched"
expect_no_leftovers "nothing left after the refused job"

next_port
port_a=$PORT
next_port
port_b=$PORT
for job in a b; do
    p=port_$job
    for n in 0 1; do
        start_agent "$job$n" DDPJOB_TOKEN="token-$job" -- --nnodes 2 --node-rank "$n" --nproc-per-node 1 \
            --master-addr 127.0.0.1 --master-port "${!p}" --run-id "job-$job" "$T/env.sh"
    done
done
results=
for name in a0 a1 b0 b1; do
    wait_agent "$name"
    results+="$name:$RC:$(grep -o 'world=[0-9]* .*run=[^ ]*' <<<"$OUT" | sed 's/ lws.*run=/ /') "
done
expect_eq "$results" "a0:0:world=2 job-a a1:0:world=2 job-a b0:0:world=2 job-b b1:0:world=2 job-b " \
    "two jobs on one machine at once each see only their own world"

start_agent busy -- --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$port_a" --rdzv-timeout 3 "$T/sleepy.sh"
sleep 0.3
run "$AGENT" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$port_a" true
expect_eq "$RC" 1 "a second node 0 on a port in use fails"
expect_contains "$ERR" "port is in use" "and says the port is in use"
wait_agent busy

# --- usage -----------------------------------------------------------------------------------
run "$AGENT" --nproc-per-node 2
expect_eq "$RC" 2 "no program is a usage error"
expect_contains "$ERR" "no program to run" "that says so"
run "$AGENT" --bogus true
expect_contains "$ERR" "unknown option --bogus" "an unknown option is named"
run "$AGENT" --nnodes 0 true
expect_contains "$ERR" "ddpjob-agent: --nnodes: invalid value \"0\"" "a bad value names its option"
run "$AGENT" --grace=-1 true
expect_contains "$ERR" "ddpjob-agent: --grace: invalid value \"-1\"" "also when given as --option=value"
run env CUDA_VISIBLE_DEVICES= "$AGENT" --standalone --nproc-per-node gpu true
expect_contains "$ERR" "no GPU is visible" "--nproc-per-node gpu without a GPU is refused"
run env -u SLURM_JOB_NODELIST -u PBS_NODEFILE "$AGENT" --nnodes 2 --master-addr h --master-port 5 true
expect_contains "$ERR" "this node's rank is unknown" "a multi-node agent never guesses its rank"
run "$AGENT" --standalone --nproc_per_node 2 --max_restarts 0 "$T/env.sh"
expect_eq "$(grep -c '^\[rank' <<<"$OUT")/$RC" "2/0" "torchrun's underscore spellings are accepted"
run "$AGENT" --standalone /nonexistent/program
expect_eq "$RC" 127 "a program that cannot run gives 127"
expect_contains "$ERR" "cannot run /nonexistent/program" "and says why"
expect_no_leftovers "nothing left at the end of the suite"

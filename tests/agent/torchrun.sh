#!/bin/bash
# ddpjob-agent as a drop-in for torchrun, case by case as PyTorch's own launcher tests run it
# (test/distributed/launcher/test_run.py): real PyTorch workers (gloo) on one node and as two
# nodes on this machine; --nproc-per-node's forms, --run-path, the workers' MASTER_PORT being the
# user's --master-port (init_method=tcp://...), PET_* defaults, unbuffered python output,
# PYTHON_EXEC, c10d rendezvous with and without node ranks, --redirects, --tee,
# --local-ranks-filter and the line prefix template, options that change nothing here, and the
# seeds' torch.distributed.launch line with ddpjob-agent in its place.
. "$SRCDIR/tests/lib/agents.sh"
CASE=$SRCDIR/tests/agent/py/torchrun_case.py
require_torch
# The workers' python, as a user of Debian's torch sets it (the python3 first on PATH may lack it).
export PYTHON_EXEC=$PY
cpus=$(getconf _NPROCESSORS_ONLN)

# one NAME [ENV=VALUE...] -- AGENT_ARGS...: a one-node job; RC, OUT, ERR.
one() {
    local name=$1
    shift
    start_agent "$name" "$@"
    wait_agent "$name"
}
worlds() { grep -o 'world=[0-9]*' <<<"$1" | sort -u | tr '\n' ' '; }

# --- --nproc-per-node ------------------------------------------------------------------------
one default -- --standalone "$CASE"
expect_eq "$RC/$(worlds "$OUT")" "0/world=1 " "no --nproc-per-node: one worker, as torchrun"
worker rank.sh 'echo "rank=$RANK of $WORLD_SIZE"'
for form in cpu auto; do
    one "$form" CUDA_VISIBLE_DEVICES= -- --standalone --nproc-per-node "$form" "$T/rank.sh"
    expect_eq "$RC/$(grep -c '^\[rank [0-9]*\] rank=' <<<"$OUT")" "0/$cpus" \
        "--nproc-per-node $form without a GPU: one worker per CPU ($cpus)"
done
one gpu CUDA_VISIBLE_DEVICES= -- --standalone --nproc-per-node gpu "$T/rank.sh"
expect_eq "$RC" 2 "--nproc-per-node gpu without a GPU is a usage error"
expect_contains "$ERR" "--nproc-per-node gpu: no GPU is visible on this node" "... saying so"

# --- how the program runs ----------------------------------------------------------------------
one runpath -- --standalone --run-path "$CASE" first --second
expect_contains "$OUT" "name=__main__ argv=first --second" "--run-path runs the script through runpy, as __main__ with its arguments"
expect_eq "$RC" 0 "... and the job succeeds"
worker py-exec "export TR_EXEC_MARKER=wrapped; exec $PY \"\$@\""
one pyexec PYTHON_EXEC="$T/py-exec" -- --standalone "$CASE"
expect_contains "$OUT" "marker=wrapped" "PYTHON_EXEC chooses the workers' interpreter"
one python_flag PYTHON_EXEC="$T/py-exec" -- --standalone --python "$PY" "$CASE"
expect_contains "$OUT" "marker=-" "... and --python overrides it"

# print() without flush reaches the console while the worker runs (python -u), and is not lost
# when the job is stopped.
start_agent unbuffered TR_PRINT_THEN_SLEEP=60 -- --standalone "$CASE"
for _ in $(seq 600); do grep -q "printed without flush" "$T/unbuffered.out" && break; sleep 0.1; done
expect_contains "$(cat "$T/unbuffered.out")" "[rank 0] printed without flush" \
    "print() without flush appears while the worker runs"
kill -TERM "$(agent_pid unbuffered)"
wait_agent unbuffered
expect_eq "$RC" 143 "... and stopping the job with SIGTERM ends it with 128+15"
expect_contains "$OUT" "[rank 0] printed without flush" "... keeping the line"

# --- the workers' MASTER_PORT is --master-port ---------------------------------------------------
next_port
one tcp TR_INIT=tcp -- --standalone --nproc-per-node 2 --master-port "$PORT" "$CASE"
expect_eq "$RC" 0 "init_method=tcp://MASTER_ADDR:MASTER_PORT with the --master-port given: the job succeeds"
expect_eq "$(grep -o 'master_port=[0-9]* sum=[0-9]* expected=[0-9]*' <<<"$OUT" | sort -u)" \
    "master_port=$PORT sum=1 expected=1" "... the workers' MASTER_PORT is exactly --master-port, and the all_reduce is right"
# A taken MASTER_PORT is named by the agent, not left to rank 0's "Address already in use". (A
# port of its own: the last case's may still have connections in TIME_WAIT.)
next_port
"$PY" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); time.sleep(60)' "$PORT" &
squatter=$!
for _ in $(seq 600); do ss -ltn "sport = :$PORT" | grep -q LISTEN && break; sleep 0.1; done
one taken -- --standalone --nproc-per-node 2 --master-port "$PORT" "$CASE"
kill "$squatter"
expect_eq "$RC" 1 "a --master-port that another process holds fails the job"
expect_contains "$ERR" "node 0: the workers' MASTER_PORT (--master-port): cannot listen on *:$PORT: the port is in use" \
    "... naming the port and what it is for"

# --- torchrun's options that change nothing here ---------------------------------------------
one ignored -- --standalone --monitor-interval 0.1 --start-method spawn "$CASE"
expect_eq "$RC" 0 "--monitor-interval and --start-method are accepted"
expect_contains "$ERR" "--monitor-interval changes nothing here: the agent hears a worker's exit at once" "... with a note on each"
expect_contains "$ERR" "--start-method changes nothing here" "... (both)"

# --- PET_* ----------------------------------------------------------------------------------------
one pet PET_STANDALONE=1 PET_NPROC_PER_NODE=2 -- "$CASE"
expect_eq "$RC/$(worlds "$OUT")" "0/world=2 " "PET_STANDALONE=1 PET_NPROC_PER_NODE=2 set what the flags would"
one pet_flag PET_NPROC_PER_NODE=3 -- --standalone --nproc-per-node 2 "$T/rank.sh"
expect_eq "$(grep -c 'rank=' <<<"$OUT")" 2 "a flag wins over its PET_ variable"
one pet_bad PET_MODULE=1 PET_NO_PYTHON=1 -- --standalone "$CASE"
expect_eq "$RC" 2 "PET_MODULE=1 with PET_NO_PYTHON=1 is refused"
expect_contains "$ERR" "PET_MODULE and PET_NO_PYTHON exclude each other" "... naming both variables"
one pet_value PET_NNODES=two -- --standalone "$CASE"
expect_contains "$RC/$ERR" "2/ddpjob-agent: PET_NNODES: invalid value \"two\"" "a bad PET_ value is a usage error naming the variable"

# --- the console and the log files -------------------------------------------------------------
one redirects -- --standalone --nproc-per-node 2 --redirects 3 --log-dir "$T/logs" --run-id red "$CASE"
expect_lacks "$OUT$ERR" "[rank " "--redirects 3: no worker line on the console"
expect_contains "$(cat "$T/logs/red/attempt_0/rank_1/stdout.log")" "rank=1 world=2" "... they are in the log files"
one redirect_err -- --standalone --nproc-per-node 2 -r 0:2,1:0 "$CASE"
expect_eq "$(grep -c '^\[rank 0\] stderr of rank 0' <<<"$ERR")/$(grep -c '^\[rank 1\] stderr of rank 1' <<<"$ERR")/$(grep -c '^\[rank 0\] rank=0' <<<"$OUT")" \
    0/1/1 "-r 0:2,1:0: local rank 0's stderr only to its file, its stdout and rank 1's both streams on the console"
one tee -- --standalone --nproc-per-node 2 --tee 3 "$CASE"
dir=$(sed -n "s|.*the workers' log files: \\(.*\\)/attempt_N/.*|\\1|p" <<<"$ERR")
expect_contains "$OUT" "[rank 1] rank=1 world=2" "--tee 3: the lines are on the console"
expect_contains "$(cat "${dir:-/nonexistent}/attempt_0/rank_1/stdout.log" 2>&1)" "rank=1 world=2" \
    "... and, without --log-dir, in a kept temporary folder the agent names"
rm -rf "$dir"
one redirect_tee -- --standalone --nproc-per-node 2 --redirects 3 --tee 3 --log-dir "$T/logs" --run-id both "$CASE"
expect_contains "$OUT" "[rank 1] rank=1 world=2" "--redirects 3 --tee 3: tee wins, as torchrun's: the lines are on the console"
expect_contains "$(cat "$T/logs/both/attempt_0/rank_1/stdout.log")" "rank=1 world=2" "... and in the log files"
one filter -- --standalone --nproc-per-node 2 --local-ranks-filter 1 "$CASE"
expect_eq "$(grep -c '^\[rank 0\]' <<<"$OUT$ERR")/$(grep -c '^\[rank 1\]' <<<"$OUT")" 0/1 \
    "--local-ranks-filter 1: only local rank 1 on the console"
one template 'TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE=[${role_name}${local_rank}]:' -- --standalone --nproc-per-node 2 "$CASE"
expect_contains "$OUT" "[default1]:rank=1 world=2" "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE makes each line's prefix"
one no_prefix -- --standalone --log-line-prefix '' "$CASE"
expect_eq "$(grep -c '^rank=0 world=1' <<<"$OUT")" 1 "--log-line-prefix '': no prefix"

# --- two nodes ----------------------------------------------------------------------------------
# two [ENV=VALUE...] -- ARGS...: the same ARGS on both nodes, each node's own arguments in
# NODE0_ARGS/NODE1_ARGS (two_agents); RC "rc0/rc1", OUT both nodes' output, stderr too.
two() {
    two_agents "$@"
    RC=$RC0/$RC1 OUT=$OUT0$ERR0$'\n'$OUT1$ERR1
}
sums() { grep -o 'sum=[0-9]* expected=[0-9]*' <<<"$1" | sort | uniq -c | awk '{print $1, $2, $3}'; }

# torchrun's elastic line on one host, `--nnodes 1:2 --rdzv-backend c10d --rdzv-endpoint
# localhost:PORT`, with no token given: this user's agents on this host share one through a file
# only the user can read. A rendezvous on another host's address still needs one, at once.
next_port
mkdir -m 700 "$T/xdg"
NODE0_ARGS=() NODE1_ARGS=()
two XDG_RUNTIME_DIR="$T/xdg" -- --nnodes 1:2 --nproc-per-node 2 --rdzv-backend c10d \
    --rdzv-endpoint "localhost:$PORT" --rdzv-id elastic1 "$CASE"
expect_eq "$RC/$(sums "$OUT")" "0/0/4 sum=6 expected=6" \
    "--nnodes 1:2 with c10d on localhost and no token: both agents meet, 4 ranks"
token_files=$(find "$T/xdg/ddpjob" -name 'token.elastic1.*' -perm 600 -user "$(id -u)" | wc -l)
expect_eq "$token_files" 1 "... through one token file of this user's, mode 0600, in XDG_RUNTIME_DIR/ddpjob"
one far -- --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint "10.255.255.1:$PORT" "$CASE"
expect_eq "$RC" 2 "a rendezvous on another host without a token fails at once (a usage error)"
expect_contains "$ERR" "export DDPJOB_TOKEN=" "... naming the command that sets one"
export DDPJOB_TOKEN=torchrun-test-$$

next_port
NODE0_ARGS=(--node-rank 0) NODE1_ARGS=(--node-rank 1)
two -- --nnodes 2 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$PORT" "$CASE"
expect_eq "$RC/$(sums "$OUT")" "0/0/4 sum=6 expected=6" "two nodes, static rendezvous with node ranks: 4 ranks, one all_reduce"

next_port
NODE0_ARGS=() NODE1_ARGS=()
two -- --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$PORT" --rdzv-id job7 "$CASE"
expect_eq "$RC/$(sums "$OUT")" "0/0/4 sum=6 expected=6" "two nodes, the same c10d command on each (no --node-rank): 4 ranks"
expect_eq "$(grep -o 'node rank [01], handed out by the c10d rendezvous' <<<"$OUT" | sort | tr '\n' ' ')" \
    "node rank 0, handed out by the c10d rendezvous node rank 1, handed out by the c10d rendezvous " \
    "... the rendezvous handed out node ranks 0 and 1"
expect_eq "$(grep -o 'group=[01] master_port=[0-9]*' <<<"$OUT" | sort -u | tr '\n' ' ')" \
    "group=0 master_port=$PORT group=1 master_port=$PORT " "... and the workers' MASTER_PORT is the endpoint's port"

next_port
NODE0_ARGS=(--node-rank 0) NODE1_ARGS=(--node-rank 1)
two -- --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$PORT" --rdzv-id job8 "$CASE"
expect_eq "$RC/$(sums "$OUT")" "0/0/4 sum=6 expected=6" "two nodes, c10d with node ranks: 4 ranks"

next_port
NODE0_ARGS=() NODE1_ARGS=()
start_agent pet1 PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_NODE_RANK=1 PET_MASTER_ADDR=127.0.0.1 \
    PET_MASTER_PORT="$PORT" PET_RDZV_ID=pet-job -- "$CASE"
start_agent pet0 PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_NODE_RANK=0 PET_MASTER_ADDR=127.0.0.1 \
    PET_MASTER_PORT="$PORT" PET_RDZV_ID=pet-job -- "$CASE"
wait_agent pet0
rc0=$RC out0=$OUT
wait_agent pet1
expect_eq "$rc0/$RC/$(sums "$out0$OUT")" "0/0/4 sum=6 expected=6" "two nodes from PET_* variables alone: 4 ranks"

# The seeds' line, `python3 -m torch.distributed.launch --nproc_per_node=2 --nnodes=2
# --node_rank=R --master_addr=... --master_port=1234 main.py --backend=gloo`, with ddpjob-agent in
# the launcher's place (and with --local-rank-arg, which passes --local_rank as it does).
for extra in "" --local-rank-arg; do
    next_port
    NODE0_ARGS=(--node_rank=0) NODE1_ARGS=(--node_rank=1)
    two -- $extra --nproc_per_node=2 --nnodes=2 --master_addr=127.0.0.1 --master_port="$PORT" \
        "$SRCDIR/tests/agent/py/launch_main.py" --backend=gloo
    expect_eq "$RC/$(grep -c 'of 4: sum 10' <<<"$OUT")" 0/0/4 "the seeds' torch.distributed.launch line under ddpjob-agent${extra:+ $extra}: 4 ranks, right sums"
    expect_eq "$(grep -o 'rank [0-9] local_rank [0-9]' <<<"$OUT" | sort | tr '\n' ' ')" \
        "rank 0 local_rank 0 rank 1 local_rank 1 rank 2 local_rank 0 rank 3 local_rank 1 " "... each with its local rank"
done
expect_no_leftovers "nothing left at the end of the suite"

#!/bin/bash
# The process group (libddp) and ddp-train's demos, with real processes as ranks: every
# operation, type and reduction for world sizes 1, 2, 3, 4, 5 and 8 (environment set by hand),
# on one host (shared memory), over TCP alone, and over two hosts (network namespaces: shared
# memory within each, the hierarchical all_reduce); a peer killed mid-all_reduce on shared memory
# and on TCP; and `ddp-train hello` / `collectives` under ddpjob-agent, under mpirun and by hand.
. "$SRCDIR/tests/lib/agents.sh"
# shellcheck source=../cluster/netns.sh
. "$SRCDIR/tests/cluster/netns.sh"
: "${PG_CHECK:?run through meson test}" "${TRAIN:?run through meson test}"

# Two hosts: namespaces n1 (PG_NET.11) and n2 (PG_NET.12), made before the first two-host world.
PG_NET=10.81.0
pg_ns() { echo "ddpjpg$$-$1"; }
at_exit 'netns_remove "$T" pg_ns head 2'

# world N NAME CMD...: N ranks of CMD with the environment set by hand; $T/NAME.<rank>.out/.err
# hold their output, RCS their exit statuses ("0 0 1 ...") and PIDS their (timeout's) pids.
# WORLD_ENV (VAR=VALUE words) goes into every rank's environment; with WORLD_HOSTS set (one
# namespace per rank), each rank runs in its namespace and rank 0's host is the master.
world() {
    world_start "$@"
    world_wait
}

world_start() {
    local n=$1 name=$2 r master=127.0.0.1
    shift 2
    next_port
    PIDS=()
    [ -n "${WORLD_HOSTS[*]:-}" ] && master=$PG_NET.$((10 + ${WORLD_HOSTS[0]#n}))
    for ((r = 0; r < n; r++)); do
        local in_host=()
        [ -n "${WORLD_HOSTS[*]:-}" ] && in_host=(ip netns exec "$(pg_ns "${WORLD_HOSTS[$r]}")")
        "${in_host[@]}" env DDPJ_TESTMARK="$MARK" RANK=$r WORLD_SIZE="$n" LOCAL_RANK=$r \
            MASTER_ADDR="$master" MASTER_PORT="$PORT" DDP_PG_TIMEOUT=60 "${WORLD_ENV[@]}" \
            timeout -s KILL 240 "$@" >"$T/$name.$r.out" 2>"$T/$name.$r.err" &
        PIDS+=($!)
    done
}

# The running world's ranks themselves (PIDS are the timeouts that run them).
rank_pids() {
    local p
    for p in "${PIDS[@]}"; do pgrep -P "$p"; done
}

world_wait() {
    local r pids=("${PIDS[@]}")
    RCS=
    for r in "${pids[@]}"; do
        if wait "$r"; then RCS+="0 "; else RCS+="$? "; fi
    done
    RCS=${RCS% }
}

zeros() { printf '0 %.0s' $(seq "$1") | sed 's/ $//'; }

# A world's results: every rank exited 0, printed no "wrong" line, and every result that must be
# the same everywhere hashed the same on every rank.
expect_world_right() { # N NAME DESCRIPTION
    local n=$1 name=$2 what=$3
    local wrongs hashes_differ
    wrongs=$(cat "$T/$name".*.out | grep '^wrong' | head -n 5)
    hashes_differ=$(cat "$T/$name".*.out | grep '^hash' | sort | uniq -c | awk -v n="$n" '$1 != n' | head -n 3)
    if [ "$RCS" = "$(zeros "$n")" ] && [ -z "$wrongs" ] && [ -z "$hashes_differ" ]; then
        pass "$what ($(cat "$T/$name".0.out | grep -c '^hash') results identical on all $n ranks)"
    else
        fail "$what" "exit statuses: $RCS" "$wrongs" "results that differ between ranks: $hashes_differ" \
            "$(cat "$T/$name".*.err | head -n 5)"
    fi
}

# The segments ranks of one host share (memfds: never in /dev/shm), as each rank maps them.
segments_of() { # PID...: how many of these processes map the group's segment
    local pid n=0
    for pid in "$@"; do grep -q '/memfd:ddp-pg' "/proc/$pid/maps" 2>/dev/null && n=$((n + 1)); done
    echo "$n"
}
# Other suites' programs (PBS's PostgreSQL, Open MPI) come and go in /dev/shm beside this one.
ours_in_shm() { ls -A /dev/shm | grep -i '^ddp' | sort; }
shm_before=$(ours_in_shm)

# Every operation, type and reduction over shared memory (every rank here) and over TCP alone.
WORLD_ENV=()
for n in 1 2 3 4 5 8; do
    world "$n" "sweep$n" "$PG_CHECK" sweep 0 1 7 n5+1 1000 20011
    expect_world_right "$n" "sweep$n" "world of $n on one host (shared memory): every operation, type and reduction, counts 0, 1, 7, $((5 * n + 1)), 1000, 20011"
done
WORLD_ENV=(DDP_PG_SHM=0)
for n in 2 3 4 5 8; do
    world "$n" "tcpsweep$n" "$PG_CHECK" sweep 0 1 7 n5+1 1000 20011
    expect_world_right "$n" "tcpsweep$n" "world of $n over TCP alone (DDP_PG_SHM=0): every operation, type and reduction"
done
# 4 Mi floats (16 MiB) per rank, plus one so that no world size divides it.
for n in 1 2 3 5 8; do
    for transport in shm tcp; do
        WORLD_ENV=()
        [ $transport = tcp ] && WORLD_ENV=(DDP_PG_SHM=0)
        world "$n" "large$transport$n" "$PG_CHECK" large 4194305
        expect_world_right "$n" "large$transport$n" "world of $n ($transport): every operation on 16 MiB of float32"
    done
done
# Buffers from pg_alloc: the all_reduce reduces in place out of every rank's heap (zero copy);
# with rank 0's own memory among them, every rank takes the copy path instead.
for n in 2 3 4; do
    WORLD_ENV=(PG_CHECK_BUFFERS=pg)
    world "$n" "pgsweep$n" "$PG_CHECK" sweep 0 1 7 n5+1 1000 20011 n4096+3
    expect_world_right "$n" "pgsweep$n" "world of $n, buffers from pg_alloc (zero-copy all_reduce): every operation, type and reduction"
    WORLD_ENV=(PG_CHECK_BUFFERS=mixed)
    world "$n" "mixsweep$n" "$PG_CHECK" sweep 1000 20011 n4096+3
    expect_world_right "$n" "mixsweep$n" "world of $n, pg_alloc on all ranks but rank 0 (copy path): every operation, type and reduction"
done
for n in 2 3 5; do
    WORLD_ENV=(PG_CHECK_BUFFERS=pg)
    world "$n" "pglarge$n" "$PG_CHECK" large 4194305
    expect_world_right "$n" "pglarge$n" "world of $n, buffers from pg_alloc: every operation on 16 MiB of float32"
done
WORLD_ENV=()
expect_no_leftovers "no rank left running after the sweeps"

# --- two hosts: shared memory within each, the hierarchical all_reduce between them ----------
mkdir -p "$T/etc"
netns_make "$T" pg_ns "$PG_NET" head 2 || fail "cannot make the two hosts' namespaces"
for layout in "n1 n2" "n1 n1 n2" "n1 n1 n2 n2" "n1 n2 n1 n2" "n1 n1 n1 n2 n2" "n2 n1 n2 n1 n2 n1 n2 n1"; do
    read -ra WORLD_HOSTS <<<"$layout"
    n=${#WORLD_HOSTS[@]}
    world "$n" "hosts$n" "$PG_CHECK" sweep 0 1 7 n5+1 1000 20011
    expect_world_right "$n" "hosts$n" "world of $n on two hosts ($layout): every operation, type and reduction"
done
WORLD_HOSTS=(n1 n2 n2 n1 n1)
world 5 hostslarge "$PG_CHECK" large 4194305
expect_world_right 5 hostslarge "world of 5 on two hosts (n1 n2 n2 n1 n1): every operation on 16 MiB of float32"
# The hierarchical path is taken: every rank maps its host's segment while the world runs.
world_start 4 hostsloop "$PG_CHECK" loop 1048576
for _ in $(seq 200); do grep -q looping "$T/hostsloop.3.out" && break; sleep 0.05; done
ranks=($(rank_pids))
mapped=$(segments_of "${ranks[@]}")
kill -9 "${ranks[@]}" 2>/dev/null
world_wait
expect_eq "$mapped" 4 "on two hosts, every rank maps its host's shared segment"
WORLD_HOSTS=()

# --- a peer killed mid-all_reduce, on shared memory and on TCP ----------------------------------
for transport in shm zerocopy tcp; do
    WORLD_ENV=(DDP_PG_TIMEOUT=30)
    [ $transport = tcp ] && WORLD_ENV+=(DDP_PG_SHM=0)
    [ $transport = zerocopy ] && WORLD_ENV+=(PG_CHECK_BUFFERS=pg)
    world_start 4 "kill$transport" "$PG_CHECK" loop 4194304
    for _ in $(seq 200); do grep -q looping "$T/kill$transport.2.out" && break; sleep 0.05; done
    ranks=($(rank_pids))
    mapped=$(segments_of "${ranks[@]}")
    start=$(date +%s%N)
    kill -9 "${ranks[2]}"
    world_wait
    took=$((($(date +%s%N) - start) / 1000000))
    named=0
    for r in 0 1 3; do
        grep -qE "ranks? ([0-9]+, )*2[ ,:]" "$T/kill$transport.$r.err" && named=$((named + 1))
    done
    if [ $transport != tcp ]; then
        expect_eq "$mapped" 4 "$transport: the 4 ranks of one host map the shared segment"
    else
        expect_eq "$mapped" 0 "tcp: with DDP_PG_SHM=0 no rank maps a segment"
    fi
    expect_eq "$RCS" "2 2 137 2" "$transport: when rank 2 is killed mid-all_reduce, ranks 0, 1 and 3 fail (exit 2)"
    expect_eq "$named" 3 "$transport: each of them names rank 2"
    expect_contains "$(cat "$T/kill$transport.3.err")" "closed" "$transport: and says what happened to it"
    if [ "$took" -lt 30000 ]; then pass "$transport: within the deadline (${took} ms, deadline 30 s)"; else fail "$transport: took ${took} ms"; fi
    expect_no_leftovers "$transport: nothing left after the killed peer"
done
WORLD_ENV=()
expect_eq "$(ours_in_shm)" "$shm_before" "no segment left in /dev/shm after every world above"

# --- a rank that never comes: the deadline names who is missing -------------------------------
next_port
pids=()
for r in 0 1; do
    env DDPJ_TESTMARK="$MARK" RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" \
        timeout -s KILL 30 "$TRAIN" hello --timeout 2 >"$T/missing.$r.out" 2>"$T/missing.$r.err" &
    pids+=($!)
done
wait "${pids[0]}"
rc0=$?
wait "${pids[1]}"
expect_eq "$rc0/$?" "1/1" "a world of 3 with rank 2 missing fails on its deadline"
expect_contains "$(cat "$T/missing.0.err")" "not every rank joined the group within 2 s" "saying not every rank joined"

# --- ddp-train hello and collectives, by hand ------------------------------------------------
world 4 hello "$TRAIN" hello
expect_eq "$RCS" "0 0 0 0" "ddp-train hello: 4 ranks (environment set by hand) exit 0"
expect_eq "$(cat "$T/hello.0.out")" "Rank 0 sent data to Rank 1
Rank 0 sent data to Rank 2
Rank 0 sent data to Rank 3" "rank 0 sends to every other rank"
for r in 1 2 3; do
    expect_eq "$(cat "$T/hello.$r.out")" "Rank $r has received data from rank 0" "rank $r received its tensor"
done
world 3 coll "$TRAIN" collectives
expect_eq "$RCS" "0 0 0" "ddp-train collectives: 3 ranks exit 0"
expect_contains "$(cat "$T/coll.1.out")" "Rank 1: all_reduce(sum)     [2, 4] -> [6, 12] ok" "and print each result (all_reduce on rank 1)"
expect_contains "$(cat "$T/coll.2.out")" "Rank 2: reduce_scatter(sum) [2, 3, 4] -> [9] ok" "(reduce_scatter on rank 2)"
expect_contains "$(cat "$T/coll.0.out")" "Rank 0: barrier ok; 9 of 9 operations correct" "rank 0: all 9 operations correct"

# --- under mpirun ------------------------------------------------------------------------------
next_port
run env DDPJ_TESTMARK="$MARK" MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" timeout -s KILL 60 \
    mpirun -np 3 --allow-run-as-root --oversubscribe -x DDPJ_TESTMARK -x MASTER_ADDR -x MASTER_PORT \
    "$TRAIN" hello
expect_eq "$RC" 0 "ddp-train hello under mpirun -np 3 exits 0"
expect_eq "$(sort <<<"$OUT" | tr '\n' '|')" "Rank 0 sent data to Rank 1|Rank 0 sent data to Rank 2|Rank 1 has received data from rank 0|Rank 2 has received data from rank 0|" \
    "ranks come from OMPI_COMM_WORLD_RANK/SIZE"
next_port
run env DDPJ_TESTMARK="$MARK" MASTER_ADDR=127.0.0.1 MASTER_PORT="$PORT" timeout -s KILL 60 \
    mpirun -np 3 --allow-run-as-root --oversubscribe -x DDPJ_TESTMARK -x MASTER_ADDR -x MASTER_PORT \
    "$TRAIN" collectives
expect_eq "$RC/$(grep -c '9 of 9 operations correct' <<<"$OUT")" "0/3" "ddp-train collectives under mpirun -np 3: every rank correct"

# --- under ddpjob-agent: two agents as two nodes, two workers each -------------------------------
export DDPJOB_TOKEN=pg-test-$$
for cmd in hello collectives; do
    next_port
    common=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 2)
    start_agent n1 -- "${common[@]}" --node-rank 1 "$TRAIN" "$cmd"
    start_agent n0 -- "${common[@]}" --node-rank 0 "$TRAIN" "$cmd"
    wait_agent n0
    out0=$OUT rc0=$RC err0=$ERR
    wait_agent n1
    if [ "$rc0/$RC" = 0/0 ]; then pass "ddp-train $cmd under two ddpjob-agents (2 nodes x 2 workers) exits 0"; else
        fail "ddp-train $cmd under two ddpjob-agents (2 nodes x 2 workers) exits 0" "exit $rc0/$RC" \
            "node 0: $err0" "node 1: $ERR"; fi
    case $cmd in
    hello) expect_contains "$OUT" "[rank 3] Rank 3 has received data from rank 0" "rank 3 on node 1 received rank 0's tensor" ;;
    collectives) expect_eq "$(printf '%s\n%s\n' "$out0" "$OUT" | grep -c '9 of 9 operations correct')" 4 "all 4 ranks report every operation correct" ;;
    esac
done
start_agent s -- --standalone --nproc-per-node 2 "$TRAIN" bench --op all --min-bytes 1K --max-bytes 64K --step-factor 8 --iters 2 --warmup 1 --check
wait_agent s
expect_eq "$RC" 0 "ddp-train bench --op all --check under a standalone agent exits 0"
expect_contains "$OUT" "# Out of bounds values : 0 OK" "with no wrong value"
expect_contains "$OUT" "#       size         count      type   redop    root        time    algbw    busbw  #wrong" \
    "and prints nccl-tests' columns"
expect_eq "$(grep -c '^\[rank 0\] # [a-z_]*, 2 rank(s), backend tcp' <<<"$OUT")" 7 "for each of the 7 operations"

# --- usage and the nccl backend without a GPU --------------------------------------------------
run "$TRAIN" frobnicate
expect_eq "$RC" 2 "an unknown command is a usage error"
run "$TRAIN" bench --op nonsense
expect_contains "$ERR" "unknown --op nonsense" "an unknown operation is named"
run env -u RANK -u WORLD_SIZE "$TRAIN" hello --backend nccl
if [ "$RC" = 0 ]; then
    pass "# SKIP --backend nccl works here: there is a GPU (tests/gpu/ covers it)"
else
    expect_contains "$ERR" "nccl backend:" "--backend nccl without a GPU (or a GPU build) says why it cannot run"
fi
run env -u MASTER_ADDR -u MASTER_PORT RANK=0 WORLD_SIZE=2 "$TRAIN" hello
expect_contains "$ERR" "needs MASTER_ADDR and MASTER_PORT" "a world of 2 without MASTER_ADDR/MASTER_PORT is refused with the reason"
expect_no_leftovers "nothing left at the end of the suite"

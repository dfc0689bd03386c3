#!/bin/bash
# bench/soak.sh [--jobs N] [--seed S] [--on slurm,pbs,ssh] [--kinds K,K...] [BUILD_DIR]: a chaos
# soak (as root) on the suites' real clusters, three nodes each in network namespaces: Slurm
# (tests/cluster/slurm.sh), OpenPBS (tests/cluster/pbs.sh) and sshd hosts that `ddpjob launch`
# reaches (tests/cluster/sshd.sh); one backend each in bench/soak/. N jobs of 2 nodes x 2 PyTorch
# gloo workers (tests/agent/py/soak_loop.py), each on a backend and with one fault drawn at random
# by S: a worker killed by SIGKILL, a worker exiting 3, node 1's agent killed, its link cut, the
# whole node frozen (these three with a spare, which must save the job), a worker allocating past
# the job's memory (the OOM killer in the step's memory cgroup), a stall (--hang-timeout), a rank
# 150 ms late to every step (named slow, completes), a cancel mid-run, a walltime signal (ddp-train
# checkpoints and the job requeues until it completes). For each: the outcome and the cause ddpjob
# names are the injected ones, and nothing is left: no process of the job, no listening port in
# any namespace of the cluster, no /dev/shm entry, no mount on any node, no cgroup holding a
# process. Its last line:
#   soak: N jobs, F faults (by kind ...; by backend ...), W wrong outcomes, L leftovers, T s
# Exit status 0 only with no wrong outcome and no leftover. --parallel runs the backends at once
# (bench/soak/parallel.sh), the same jobs with the same faults.
#
# A backend B (bench/soak/B.sh) defines soak_B_: kinds (its faults), up (its cluster, stopped at
# exit; prints why not), dir (where specs go), header (the spec's scheduler line), workload (the
# path its user reads soak_loop.py at), env (optional: more of the spec's env), submit SPEC (JOB,
# or PROBLEM), namespaces, node_ns N, head_ns (the bridge's), cancel, ended (the job is over, for
# thawing a frozen node), finish (waits: STATE, SAID and LOGS), left (its leftover processes) and
# restore (node n2 back in service).
set -u
jobs=10 seed=$RANDOM only= backends=slurm,pbs,ssh parallel= alone=
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --on) backends=$2; shift 2 ;;
    --kinds) only=$2; shift 2 ;;
    --parallel) parallel=1; shift ;;
    --alone) alone=$2; shift 2 ;; # (--parallel's own) the jobs drawn for this backend only
    *) break ;;
    esac
done
if [ -n "$parallel" ] && [[ $backends == *,* ]]; then
    # shellcheck source=soak/parallel.sh
    . "$(dirname "$0")/soak/parallel.sh"
    soak_in_parallel "$@"
    exit
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) || exit 2
export SRCDIR=$root BUILDDIR=$build DDPJOB=$build/cli/ddpjob AGENT=$build/agent/ddpjob-agent TRAIN=$build/runtime/train/ddp-train
. "$root/tests/lib/agents.sh"
summary=""
# The suites' exit hook, without its TAP plan: the summary is the last line.
soak_end() {
    local command
    for command in "${TAP_AT_EXIT[@]}"; do eval "$command"; done
    rm -rf "$T"
    [ -z "$summary" ] || echo "$summary"
}
trap soak_end EXIT
cd "$T" || exit 2
started=$SECONDS
read -ra backends <<<"${backends//,/ }"
declare -A kinds_of count by_backend baseline
for b in "${backends[@]}"; do
    [ -z "$alone" ] || [ "$b" = "$alone" ] || continue
    [ -f "$root/bench/soak/$b.sh" ] || { echo "soak: no backend $b (bench/soak/: slurm, pbs, ssh)" >&2; exit 2; }
    . "$root/bench/soak/$b.sh"
    if ! "soak_${b}_up" >"$T/up-$b"; then
        echo "soak: $b: $(cat "$T/up-$b")" >&2
        exit 2
    fi
    kinds=""
    for k in $("soak_${b}_kinds"); do
        [ -z "$only" ] || [[ ,$only, == *,$k,* ]] && kinds+=" $k"
    done
    kinds_of[$b]=$kinds
done

# What is left of every job on backend B: listening sockets in its namespaces, the mounts each
# node's processes see, and the shared memory a PyTorch or ddp job makes (/dev/shm's torch_* and
# ddp*: the rest of it is other suites', which run beside this one).
world() { # B
    local ns pid
    for ns in $("soak_$1_namespaces"); do
        ip netns exec "$ns" ss -Hltn 2>/dev/null | awk -v ns="$ns" '{print ns, "listens", $4}'
        pid=$(ip netns pids "$ns" | head -n 1)
        # Less the namespaces' own handles, which come and go with the clusters beside this one.
        [ -z "$pid" ] || awk -v ns="$ns" '$5 !~ "^/run/netns/" {print ns, "mount", $5}' "/proc/$pid/mountinfo" 2>/dev/null
    done | sort
    ls /dev/shm | grep -E '^(torch_|ddp)' | sort
}
for b in "${!kinds_of[@]}"; do baseline[$b]=$(world "$b"); done

# spec KIND: the job's spec, for backend b.
spec() {
    local steps=200 env more="" mem="" body
    [ "$1" != slow ] || steps=120
    env="{STEP_MS: \"50\", STEPS: \"$steps\", OMP_NUM_THREADS: \"1\"$(type "soak_${b}_env" >/dev/null 2>&1 && "soak_${b}_env")"
    body="command: [/usr/bin/python3, \"$("soak_${b}_workload")\"]"
    case $1 in
    worker_exit) env+=", FAULT: exit, FAULT_RANK: \"1\"" ;;
    oom) env+=", FAULT: alloc, FAULT_RANK: \"1\"" mem="mem: 1GB" ;;
    stall) env+=", FAULT: stall, FAULT_RANK: \"1\"" more="hang_timeout: 5" ;;
    slow) env+=", FAULT: wait, FAULT_RANK: \"1\"" more="slow_window: 4" ;;
    agent_killed | link_cut | node_frozen) more="spares: 1
max_restarts: 2" ;;
    walltime)
        # chain_train's workload, fewer epochs: 2 links or more, each stopped 40 s before its
        # 1-minute walltime.
        more="checkpoint: {signal: USR1, before: 40}
requeue: 10"
        body="train: $(CHAIN_EPOCHS=6 chain_train "$("soak_${b}_dir")/ckpt-$i")"
        ;;
    esac
    cat <<SPEC
name: soak-$i
$("soak_${b}_header")
nodes: 2
procs_per_node: 2
walltime: "00:$([ "$1" = walltime ] && echo 01 || echo 05):00"
$mem
$more
env: $env}
$body
SPEC
}

# The pid of a process named NAME whose environment has VAR=VALUE, in a node of backend b.
job_pid() { # NAME VAR=VALUE
    local n pid
    for n in n1 n2 n3; do
        for pid in $(ip netns pids "$("soak_${b}_node_ns" "$n")"); do
            [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = "$1" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] || continue
            grep -qsz "^$2\$" "/proc/$pid/environ" && echo "$pid" && return
        done
    done
}

# The agent of node 1 (on n2; the one with --spares), for agent_killed.
node1_agent() {
    local pid
    for pid in $(ip netns pids "$("soak_${b}_node_ns" n2)"); do
        [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = ddpjob-agent ] && grep -qa -- '--spares' "/proc/$pid/cmdline" && echo "$pid" && return
    done
}

# inject KIND: from outside, once rank 1 has reported step 10 (for a spare's case, once node 1's
# agent runs too). A frozen node is thawed once the job has ended without it.
inject() {
    local deadline=$((SECONDS + 120)) pid file step frozen
    while :; do
        pid=$(job_pid python3 RANK=1)
        file=$([ -n "$pid" ] && tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^DDPJOB_PROGRESS_FILE=//p')
        step=$(cat "$file" 2>/dev/null)
        [ "${step:-0}" -ge 10 ] 2>/dev/null && { [ "$1" = worker_signal ] || [ "$1" = cancel ] || [ -n "$(node1_agent)" ]; } && break
        [ "$SECONDS" -lt "$deadline" ] || { echo "no rank 1 at step 10 within 120 s"; return 1; }
        sleep 0.2
    done
    case $1 in
    worker_signal) kill -KILL "$pid" ;;
    agent_killed) kill -KILL "$(node1_agent)" ;;
    link_cut) ip -n "$("soak_${b}_head_ns")" link set v2 down ;;
    node_frozen)
        frozen=$(ip netns pids "$("soak_${b}_node_ns" n2)")
        # shellcheck disable=SC2086 # a list of pids
        kill -STOP $frozen
        deadline=$((SECONDS + 240))
        until "soak_${b}_ended" || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.5; done
        # shellcheck disable=SC2086
        kill -CONT $frozen
        ;;
    cancel) "soak_${b}_cancel" ;;
    esac
}

# expect KIND: the state and the words the job's status (or launch's report) must show.
expect() {
    case $1 in
    worker_signal) echo "failed|killed by SIGKILL" ;;
    worker_exit) echo "failed|exited with code 3" ;;
    agent_killed | link_cut | node_frozen)
        if [ "$b" = ssh ]; then echo "completed|n3 (slot 2) takes the place of n2 (slot 1)"; else echo "completed|took node 1's place from n2"; fi ;;
    oom) echo "out of memory|killed by the out-of-memory killer" ;;
    stall) echo "failed|stalled" ;;
    slow) echo "completed|" ;;
    cancel) echo "cancelled|" ;;
    walltime) echo "completed|" ;;
    esac
}

# verdict KIND: what is wrong with the outcome (STATE, SAID, LOGS); empty when nothing is.
verdict() {
    local want links
    want=$(expect "$1")
    if [ "$STATE" != "${want%%|*}" ] || { [ -n "${want#*|}" ] && ! grep -qF -- "${want#*|}" <<<"$SAID"; }; then
        echo "state $STATE; said: $(tr '\n' ' ' <<<"$SAID" | cut -c1-400)"
    elif [ "$1" = slow ] && ! grep -q "is slow: " <<<"$LOGS"; then
        echo "rank 1 never named slow"
    elif [ "$1" = walltime ]; then
        links=$(sed -n 's/^  link \([0-9]*\) of \([0-9]*\).*/\1 \2/p' <<<"$SAID")
        [ "${links% *}" = "${links#* }" ] && [ "${links% *}" -ge 2 ] 2>/dev/null ||
            echo "not requeued to completion (links: ${links:-none}): $(tr '\n' ' ' <<<"$SAID" | cut -c1-300)"
    fi
}

wrong=0 leftovers=0
for i in $(seq "$jobs"); do
    RANDOM=$((seed + i))
    b=${backends[RANDOM % ${#backends[@]}]}
    [ -z "$alone" ] || [ "$b" = "$alone" ] || continue
    read -ra kinds <<<"${kinds_of[$b]}"
    [ "${#kinds[@]}" -gt 0 ] || continue
    kind=${kinds[RANDOM % ${#kinds[@]}]}
    count[$kind]=$((${count[$kind]:-0} + 1))
    by_backend[$b]=$((${by_backend[$b]:-0} + 1))
    MARK=ddpjob-soak-$$-$i
    file=$("soak_${b}_dir")/soak-$i.yaml
    spec "$kind" >"$file"
    PROBLEM=""
    "soak_${b}_submit" "$file"
    problem=$PROBLEM
    case $kind in worker_signal | agent_killed | link_cut | node_frozen | cancel) [ -n "$problem" ] || problem=$(inject "$kind") ;; esac
    "soak_${b}_finish"
    "soak_${b}_restore"
    problem+=$(verdict "$kind")
    result=ok
    [ -z "$problem" ] || { result="WRONG ($problem)"; wrong=$((wrong + 1)); }
    # Leftovers, once the scheduler has had its time to clean up.
    for _ in $(seq 60); do
        left=$("soak_${b}_left")
        now=$(world "$b")
        [ -z "$left" ] && [ "$now" = "${baseline[$b]}" ] && break
        sleep 0.5
    done
    if [ -n "$left" ] || [ "$now" != "${baseline[$b]}" ]; then
        leftovers=$((leftovers + 1))
        result+=" LEFTOVER: [$left] [$(diff <(echo "${baseline[$b]}") <(echo "$now") | grep '^[<>]' | tr '\n' ' ')]"
        baseline[$b]=$now
    fi
    echo "soak: job $i ($b, $kind, job $JOB): $STATE: $result"
done
by="" on=""
for k in $(printf '%s\n' "${!count[@]}" | sort); do by+="${by:+, }$k ${count[$k]}"; done
for b in "${!kinds_of[@]}"; do on+="${on:+, }$b ${by_backend[$b]:-0}"; done
n=$((${by_backend[slurm]:-0} + ${by_backend[pbs]:-0} + ${by_backend[ssh]:-0}))
summary="soak: $n jobs, $n faults (by kind: $by; by backend: $on), $wrong wrong outcomes, $leftovers leftovers, $((SECONDS - started)) s"
[ "$wrong" -eq 0 ] && [ "$leftovers" -eq 0 ]

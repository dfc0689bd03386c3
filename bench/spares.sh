#!/bin/bash
# A node lost mid-training, and how long until training goes on without it: ddpjob-agent with a
# spare (`--nnodes 2 --spares 1`: the standby takes node 1's place) against torchrun 1.13's
# elastic re-rendezvous (`--nnodes 2:3`, c10d: the world re-forms without the lost node), on the
# same three hosts (network namespaces n1-n3 behind a bridge) and the same PyTorch gloo job
# (spares_world.py, one worker per node, no checkpoint to load). For each loss (node 1's launcher
# SIGKILLed, its link cut, the whole node frozen) the time from the fault to the first step of
# the next attempt, and the world size it runs with; capped at CAP seconds (default 90).
#   bench/spares.sh [BUILD_DIR]   (as root: it makes network namespaces)
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
AGENT=$PWD/$build/agent/ddpjob-agent
PY=/usr/bin/python3
CAP=${CAP:-90}
# shellcheck source=../tests/cluster/netns.sh
. tests/cluster/netns.sh
T=$(mktemp -d)
NET=10.83.0
bench_ns() { echo "ddpjb$$-$1"; }
mkdir -p "$T/etc"
trap 'stop_all; netns_remove "$T" bench_ns head 3; rm -rf "$T"' EXIT
netns_make "$T" bench_ns "$NET" head 3 || exit 1
export DDPJOB_TOKEN=bench-spares-$$ GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1
PIDS=()
port=20400

stop_all() {
    local i pid
    for i in 1 2 3; do
        for pid in $(ip netns pids "$(bench_ns "n$i")" 2>/dev/null); do kill -CONT "$pid"; kill -9 "$pid"; done
    done 2>/dev/null
    wait 2>/dev/null
    PIDS=()
}

# start LAUNCHER NODE (0-2): that node's launcher in the background, under its hostname.
start() {
    local launcher=$1 i=$2 cmd
    if [ "$launcher" = ddpjob-agent ]; then
        cmd=("$AGENT" --nnodes 2 --spares 1 --node-rank "$i" --master-addr "$NET.11" --master-port "$port"
             --nproc-per-node 1 --max-restarts 3 --heartbeat 0.5 --grace 3 --python "$PY")
    else
        cmd=("$PY" -m torch.distributed.run --nnodes 2:3 --nproc_per_node 1 --rdzv_backend c10d
             --rdzv_endpoint "$NET.11:$port" --rdzv_id "bench$port" --max_restarts 3 --monitor_interval 1
             --redirects 1 --tee 1)
    fi
    # Its own hostname, which the others resolve through the hosts file netns_make wrote.
    # shellcheck disable=SC2016 # expanded by that shell
    ip netns exec "$(bench_ns "n$((i + 1))")" unshare --uts --mount --propagation private \
        sh -c 'hostname "$0" && mount --bind "$1" /etc/hosts && shift && exec "$@"' "n$((i + 1))" "$T/etc/hosts" \
        env WORLD_LOG="$T/world" "${cmd[@]}" "$PWD/bench/spares_world.py" >"$T/$launcher.$i.log" 2>&1 &
    PIDS[i]=$!
}

# The first time in $T/world/resumed.A.0 for an attempt A above the one running at the fault.
resumed_after() { # ATTEMPT
    local f a
    for f in "$T"/world/resumed.*.0; do
        a=${f#"$T"/world/resumed.}
        a=${a%.0}
        [ "$a" -gt "$1" ] && echo "$a $(cat "$f")" && return
    done
    return 1
}

run_case() { # LAUNCHER LOSS
    local launcher=$1 loss=$2 i t0 line attempt=0 f
    port=$((port + 2))
    rm -rf "$T/world"
    mkdir -p "$T/world"
    for i in 0 1 2; do start "$launcher" "$i"; done
    # Running: rank 0 of the first attempt has stepped; for torchrun all three nodes took part.
    f=
    for _ in $(seq 600); do
        for f in "$T"/world/resumed.*.0; do [ -e "$f" ] && break 2; done
        f=
        sleep 0.1
    done
    if [ -z "$f" ]; then
        echo "  $launcher: the job did not start ($(tail -n 2 "$T/$launcher.0.log"))"
        FIGURE[$launcher]=0
        stop_all
        return
    fi
    attempt=${f#"$T"/world/resumed.}
    attempt=${attempt%.0}
    sleep 2
    t0=$(date +%s.%N)
    case $loss in
    "launcher killed") kill -9 "${PIDS[1]}" ;;
    "link cut") ip -n "$(bench_ns head)" link set v2 down ;;
    "node frozen") for i in $(ip netns pids "$(bench_ns n2)"); do kill -STOP "$i"; done ;;
    esac
    line=
    for _ in $(seq $((CAP * 10))); do
        line=$(resumed_after "$attempt") && break
        sleep 0.1
    done
    if [ -n "$line" ]; then
        read -r a when world <<<"$line"
        awk -v t0="$t0" -v t="$when" -v w="$world" -v a="$a" -v l="$launcher" \
            'BEGIN {printf "  %-13s %8.2f s   attempt %d, world %d\n", l, t - t0, a, w}'
        FIGURE[$launcher]=$(awk -v t0="$t0" -v t="$when" 'BEGIN {printf "%.2f", t - t0}')
    else
        printf '  %-13s    > %d s   no new attempt stepped\n' "$launcher" "$CAP"
        FIGURE[$launcher]=$CAP
    fi
    ip -n "$(bench_ns head)" link set v2 up
    stop_all
}

declare -A FIGURE
echo "== node 1 lost -> the first training step after it; ddpjob-agent --nnodes 2 --spares 1 vs torchrun --nnodes 2:3 =="
echo "   (3 hosts x 1 rank, PyTorch $("$PY" -c 'import torch; print(torch.__version__)') gloo; $(getconf _NPROCESSORS_ONLN) CPUs; $(date -u +%F))"
for loss in "launcher killed" "link cut" "node frozen"; do
    echo "$loss"
    for launcher in ddpjob-agent torchrun; do run_case "$launcher" "$loss"; done
    awk -v a="${FIGURE[ddpjob-agent]}" -v t="${FIGURE[torchrun]}" -v cap="$CAP" \
        'BEGIN {if (a > 0 && t > 0) printf "  torchrun / ddpjob-agent: %s%.1fx\n", (t >= cap ? "> " : ""), t / a}'
done

#!/bin/bash
# Starting a job on hosts reached by SSH: `ddpjob launch` against Open MPI's `mpirun -H` over ssh
# and a pdsh-style loop of OpenSSH clients, on H real sshd hosts (tests/cluster/sshd.sh: each
# Debian's sshd in its own network namespace; 32 of them stand in for 32 hosts). Each run starts
# one process per host that exits at once (/bin/true) and ends when every host is done.
#   bench/launch_ssh.sh [BUILD_DIR]   (as root; HOSTS="3 8 16 32", RUNS=5)
# The ssh loop only runs /bin/true on each host: the floor for anything over ssh. mpirun
# starts an orted per host and the processes under them; ddpjob launch starts an agent per
# host, which rendezvous (token-authenticated) and start the workers. mpirun runs with
# plm_rsh_no_tree_spawn, as launch opens every session from the head (tree spawn would need
# the hosts to ssh to each other).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
hosts_list=${HOSTS:-3 8 16 32}
runs=${RUNS:-5}
[ "$(id -u)" = 0 ] || { echo "bench/launch_ssh.sh: run as root (it makes network namespaces)" >&2; exit 1; }

# shellcheck source-path=SCRIPTDIR/..
. bench/lib.sh
. tests/cluster/sshd.sh
trap sshd_down EXIT
max=0
for h in $hosts_list; do [ "$h" -gt "$max" ] && max=$h; done
sshd_up "$max" >/dev/null
cp "$build/agent/ddpjob-agent" "$SSHD_DIR/bin/"
ssh_conf=$SSHD_DIR/bench-ssh.conf
cat >"$ssh_conf" <<CONF
Host *
    User $SSHD_USER
    IdentityFile $SSHD_DIR/client/.ssh/id_ed25519
    UserKnownHostsFile $SSHD_DIR/client/.ssh/known_hosts
    StrictHostKeyChecking yes
    BatchMode yes
CONF
cat >"$SSHD_DIR/true.yaml" <<YAML
name: launch-bench
nodes: 1
procs_per_node: 1
command: [/bin/true]
YAML

ssh_loop() { # HOSTS...
    local h pids=() status=0
    for h in "$@"; do
        ssh -F "$ssh_conf" "$h" /bin/true &
        pids+=($!)
    done
    for h in "${pids[@]}"; do wait "$h" || status=1; done
    return $status
}

# The command line of each system for H hosts.
system_cmd() { # SYSTEM H
    local names
    names=$(seq -s, -f 'n%g' "$2")
    case $1 in
    ssh) echo "ssh_loop ${names//,/ }" ;;
    mpirun) echo "mpirun --allow-run-as-root -H $names -np $2 --mca plm_rsh_agent 'ssh -F $ssh_conf'" \
        "--mca plm_rsh_no_tree_spawn 1 /bin/true" ;;
    launch) echo "$build/cli/ddpjob launch $SSHD_DIR/true.yaml --hosts $names --bindir $SSHD_DIR/bin" ;;
    esac
}

# Each run inside the login host's namespace; the median of $runs, systems interleaved.
declare -A took
for h in $hosts_list; do
    declare -A times=()
    for ((i = 0; i < runs; i++)); do
        for sys in ssh mpirun launch; do
            cmd=$(system_cmd "$sys" "$h")
            s=$(date +%s%N)
            if ! sshd_login bash -c "$(declare -f ssh_loop); ssh_conf=$ssh_conf; $cmd" >"$SSHD_DIR/out" 2>&1; then
                echo "failed ($sys, $h hosts): $cmd" >&2
                cat "$SSHD_DIR/out" >&2
                exit 1
            fi
            times[$sys]+="$(( ($(date +%s%N) - s) / 1000000 )) "
        done
    done
    for sys in ssh mpirun launch; do
        took[$sys,$h]=$(tr ' ' '\n' <<<"${times[$sys]}" | grep . | median)
    done
    unset times
done

echo "== start one process per host over ssh and have it exit (median of $runs, seconds) =="
printf '%6s %9s %9s %9s %14s %14s\n' hosts ssh-loop mpirun launch launch/mpirun launch/ssh-loop
first=${hosts_list%% *}
for h in $hosts_list; do
    awk -v h="$h" -v s="${took[ssh,$h]}" -v m="${took[mpirun,$h]}" -v l="${took[launch,$h]}" 'BEGIN {
        printf "%6d %9.3f %9.3f %9.3f %14.2f %14.2f\n", h, s / 1000, m / 1000, l / 1000, l / m, l / s }'
done
echo
echo "== growth: time per host beyond the first row's (seconds per extra host; linear growth keeps it flat) =="
printf '%6s %9s %9s %9s\n' hosts ssh-loop mpirun launch
for h in $hosts_list; do
    [ "$h" = "$first" ] && continue
    awk -v h="$h" -v f="$first" -v s="${took[ssh,$h]}" -v s0="${took[ssh,$first]}" \
        -v m="${took[mpirun,$h]}" -v m0="${took[mpirun,$first]}" -v l="${took[launch,$h]}" -v l0="${took[launch,$first]}" 'BEGIN {
        d = (h - f) * 1000
        printf "%6d %9.4f %9.4f %9.4f\n", h, (s - s0) / d, (m - m0) / d, (l - l0) / d }'
done

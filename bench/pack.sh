#!/bin/bash
# A sweep of many short trials three ways on the real Slurm the suites start (tests/cluster/slurm.sh:
# slurmctld and 2 slurmd in network namespaces), idle otherwise: packed into one held allocation
# of the 2 nodes (sweep: {pack: {nodes: 2}}), as one array job (2 tasks at once), and as lanes of
# plain jobs (a site that takes no arrays, 2 lanes). TRIALS (default 200) one-node trials of one
# second each (sleep 1): the wall time from submit to `wait`'s end, the sbatch calls and the jobs
# Slurm ran, and, from each trial's own start and end lines (date +%s.%N, with its host), the
# overhead between one trial's end and the next trial's first line on the same node (median and
# 90th percentile; target: under 50 ms at the median, packed). One run, side by side.
#   bench/pack.sh [BUILD_DIR]   (default build; as root: it makes network namespaces)
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
trials=${TRIALS:-200}
DDPJOB=$PWD/$build/cli/ddpjob
T=$(mktemp -d)
chmod 755 "$T"
export T SRCDIR=$PWD DDPJOB
# shellcheck source=../tests/cluster/slurm.sh
. tests/cluster/slurm.sh
trap 'cluster_down; rm -rf "$T"' EXIT
cluster_up 2 >"$T/cluster.log" 2>&1 || { tail -n 20 "$T/cluster.log" >&2; exit 1; }
cd "$T" || exit 1

# sbatch on the head's PATH, counted: every call leaves a line.
mkdir -p bin
printf '#!/bin/sh\necho x >>%s/sbatch.calls\nexec %s "$@"\n' "$T" "$(command -v sbatch)" >bin/sbatch
chmod +x bin/sbatch
printf 'name: noarrays\narrays: false\nqueues:\n  debug: {cores_per_node: 2}\n' >noarrays.yaml
# Each trial's start and end, with its host, into $WAY.log.
cat >bench.yaml <<SPEC
name: "bench-{k}"
scheduler: slurm
nodes: 1
procs_per_node: 1
walltime: "00:10:00"
command: [/bin/sh, -c, 'echo start \$DDPJOB_TRIAL \$(hostname) \$(date +%s.%N) >>$T/\$WAY.log; sleep 1; echo end \$DDPJOB_TRIAL \$(hostname) \$(date +%s.%N) >>$T/\$WAY.log']
sweep:
  grid: {k: [$(seq -s ', ' 0 $((trials - 1)))]}
  parallel: 2
SPEC

now() { date +%s.%N; }
# way NAME ARGS...: the sweep submitted as NAME with ARGS, waited for by its record:
# "seconds sbatch-calls".
way() {
    local name=$1 start end record
    shift
    : >sbatch.calls
    start=$(now)
    PATH="$T/bin:$PATH" cluster_ddpjob "$T" submit bench.yaml --set "env.WAY=$name" "$@" >"$name.submit" 2>&1 ||
        { cat "$name.submit" >&2; return 1; }
    record=$(sed -n 's/^ddpjob: its record: //p' "$name.submit")
    cluster_ddpjob "$T" wait "$record" --timeout 3600 >/dev/null 2>&1
    end=$(now)
    echo "$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}') $(wc -l <sbatch.calls)"
    # The nodes free again before the next way.
    while [ -n "$(cluster_in head squeue -h 2>/dev/null)" ]; do sleep 0.5; done
}
# gaps LOG: each node's gaps, in ms, between a trial's end and the next trial's start there.
gaps() {
    sort -k3,3 -k4,4n "$1" | awk '
        $3 != host { host = $3; last = "" }
        $1 == "start" && last != "" { printf "%.1f\n", ($4 - last) * 1000 }
        $1 == "end" { last = $4 }'
}
quantile() { sort -n | awk -v q="$1" '{v[NR] = $1} END {i = int(NR * q + 0.5); if (i < 1) i = 1; print (NR ? v[i] : "-")}'; }

# shellcheck disable=SC2034 # read by name in the table below
read -r packed_s packed_calls <<<"$(way packed --pack 2)"
# shellcheck disable=SC2034
read -r array_s array_calls <<<"$(way array)"
# shellcheck disable=SC2034
read -r lanes_s lanes_calls <<<"$(way lanes --site "$T/noarrays.yaml")"

printf '%s trials of 1 s, one node each, on 2 Slurm nodes (2 at once)\n' "$trials"
printf '%-8s %10s %12s %14s %16s %16s\n' way "wall s" "sbatch calls" "Slurm jobs" "gap ms median" "gap ms 90th"
for w in packed array lanes; do
    s=${w}_s c=${w}_calls
    case $w in packed) jobs=1 ;; *) jobs=$trials ;; esac
    printf '%-8s %10s %12s %14s %16s %16s\n' "$w" "${!s}" "${!c}" "$jobs" \
        "$(gaps "$w.log" | quantile 0.5)" "$(gaps "$w.log" | quantile 0.9)"
done
printf 'packed / array wall time: %s; packed / lanes: %s\n' \
    "$(awk -v a="$packed_s" -v b="$array_s" 'BEGIN {printf "%.2fx", a / b}')" \
    "$(awk -v a="$packed_s" -v b="$lanes_s" 'BEGIN {printf "%.2fx", a / b}')"
echo "gap: from a trial's last line to the next trial's first on the same node (target: packed under 50 ms at the median)"

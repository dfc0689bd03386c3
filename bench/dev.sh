#!/bin/bash
# A rerun in an allocation `ddpjob dev` holds against a fresh `ddpjob submit` of the same spec, on
# the real Slurm the suites start (tests/cluster/slurm.sh: slurmctld and 2 slurmd in network
# namespaces), idle otherwise: from the command's start to the first worker's line, seen two
# ways: in the run's record (rank 0's stdout.log, as logs and status read it) and, for run --in,
# on its own standard output (which follows the record every 0.5 s). A 2-node, 2-rank-per-node
# job whose ranks each print one line. Medians of 5. One run, side by side.
#   bench/dev.sh [BUILD_DIR]   (default build; as root: it makes network namespaces)
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
DDPJOB=$PWD/$build/cli/ddpjob
T=$(mktemp -d)
export T SRCDIR=$PWD DDPJOB
# shellcheck source=../tests/cluster/slurm.sh
. tests/cluster/slurm.sh
trap 'cluster_down; rm -rf "$T"' EXIT
cluster_up 2 >"$T/cluster.log" 2>&1 || { tail -n 20 "$T/cluster.log" >&2; exit 1; }
cd "$T" || exit 1
cat >bench.yaml <<'SPEC'
name: bench
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:10:00"
command: [/bin/sh, -c, "echo rank=$RANK"]
SPEC

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}'; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
# first_line_in RECORD_GLOB START: seconds from START until rank 0's log in the newest record
# matching RECORD_GLOB has a line (120 s at most).
first_line_in() {
    local rec=
    for _ in $(seq 12000); do
        rec=$(ls -td $1 2>/dev/null | head -n 1)
        if [ -n "$rec" ] && grep -qs rank= "$rec"/link-0/logs/*/attempt_0/rank_0/stdout.log; then
            since "$2"
            return
        fi
        sleep 0.01
    done
    echo timeout
}

: >submit.txt
for i in 1 2 3 4 5; do
    start=$(now)
    cluster_ddpjob "$T" submit bench.yaml --set name=fresh$i >/dev/null 2>&1 &
    first_line_in "$T/.ddpjob/jobs/fresh$i.*" "$start" >>submit.txt
    wait
    # The nodes free again before the next.
    while [ -n "$(cluster_in head squeue -h -t R,CG 2>/dev/null)" ]; do sleep 0.2; done
done

cluster_ddpjob "$T" dev bench.yaml --idle 10m >"$T/dev.log" 2>&1 || { cat "$T/dev.log" >&2; exit 1; }
: >rerun.txt
: >rerun_stdout.txt
for i in 1 2 3 4 5; do
    start=$(now)
    cluster_ddpjob "$T" run --in bench 2>/dev/null | {
        seen=
        while read -r line; do
            case $seen$line in rank=*) since "$start" >>rerun_stdout.txt && seen=1 ;; esac
        done
    } &
    first_line_in "$T/.ddpjob/jobs/bench-run$i.*" "$start" >>rerun.txt
    wait
done
cluster_ddpjob "$T" dev stop bench >/dev/null 2>&1

s=$(median <submit.txt) r=$(median <rerun.txt) o=$(median <rerun_stdout.txt)
printf '%-44s  %s\n' "to the first worker's line (median of 5)" seconds
printf '%-44s  %s\n' "fresh ddpjob submit (record)" "$s"
printf '%-44s  %s\n' "ddpjob run --in (record)" "$r"
printf '%-44s  %s\n' "ddpjob run --in (its standard output)" "$o"
printf 'rerun / submit: %s (target: a rerun within 1 s)\n' "$(awk -v a="$r" -v b="$s" 'BEGIN {printf "%.2fx", a / b}')"

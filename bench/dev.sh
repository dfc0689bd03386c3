#!/bin/bash
# A rerun in an allocation `ddpjob dev` holds against a fresh `ddpjob submit` of the same spec, on
# the real Slurm the suites start (tests/cluster/slurm.sh: slurmctld and 2 slurmd in network
# namespaces), idle otherwise: from the command's start to the first worker's line, seen two
# ways: in the run's record (when rank 0's stdout.log, as logs and status read it, got its one
# line) and, for run --in, on its own standard output (which reads the record every 50 ms). A
# 2-node, 2-rank-per-node job whose ranks each print one line; reruns back to back. Medians of
# 5. One run, side by side.
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
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.3f\n", b - a}'; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
# first_line RECORD_GLOB START: seconds from START to rank 0's one line in the newest record that
# RECORD_GLOB matches (its stdout.log, written once, then left: its modification time), once
# that record's run has ended (120 s at most); nothing polled while the run goes.
first_line() {
    local rec= log
    for _ in $(seq 1200); do
        rec=$(ls -td $1 2>/dev/null | head -n 1)
        [ -n "$rec" ] && [ -e "$rec/link-0/ended" ] && break
        sleep 0.1
    done
    log=$(ls "$rec"/link-0/logs/*/attempt_0/rank_0/stdout.log 2>/dev/null)
    [ -n "$log" ] || { echo timeout; return; }
    awk -v a="$2" -v b="$(stat -c %.9Y "$log")" 'BEGIN {printf "%.3f\n", b - a}'
}

: >submit.txt
for i in 1 2 3 4 5; do
    start=$(now)
    cluster_ddpjob "$T" submit bench.yaml --set name=fresh$i >/dev/null 2>&1
    first_line "$T/.ddpjob/jobs/fresh$i.*" "$start" >>submit.txt
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
            [ -z "$seen" ] && [[ $line == *rank=* ]] && since "$start" >>rerun_stdout.txt && seen=1
        done
    }
    first_line "$T/.ddpjob/jobs/bench-run$i.*" "$start" >>rerun.txt
done
cluster_ddpjob "$T" dev stop bench >/dev/null 2>&1

echo "each: submit $(tr "\n" " " <submit.txt)/ run --in $(tr "\n" " " <rerun.txt)/ its stdout $(tr "\n" " " <rerun_stdout.txt)"
s=$(median <submit.txt) r=$(median <rerun.txt) o=$(median <rerun_stdout.txt)
printf '%-44s  %s\n' "to the first worker's line (median of 5)" seconds
printf '%-44s  %s\n' "fresh ddpjob submit (record)" "$s"
printf '%-44s  %s\n' "ddpjob run --in (record)" "$r"
printf '%-44s  %s\n' "ddpjob run --in (its standard output)" "$o"
printf 'rerun / submit: %s (target: a rerun within 1 s)\n' "$(awk -v a="$r" -v b="$s" 'BEGIN {printf "%.2fx", a / b}')"

#!/bin/bash
# `ddpjob status` of 1, 100 and 1000 jobs against the per-job path (one `squeue -j ID` per job,
# what TorchX's describe and submitit's per-job state do), on the real Slurm the suites start
# (tests/cluster/slurm.sh: slurmctld and 2 slurmd in network namespaces). The jobs are real and
# held in the queue (sbatch --hold); each has a job record in an index, as `ddpjob submit` leaves
# them. Both paths run inside the head namespace; the scheduler calls are counted by wrappers on
# PATH. One run, side by side.
#   bench/status.sh [BUILD_DIR]   (default build; as root: it makes network namespaces)
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
DDPJOB=$PWD/$build/cli/ddpjob
T=$(mktemp -d)
# shellcheck source=../tests/cluster/slurm.sh
. tests/cluster/slurm.sh
trap 'cluster_down; rm -rf "$T"' EXIT
cluster_up 2 >"$T/cluster.log" 2>&1 || { tail -n 20 "$T/cluster.log" >&2; exit 1; }

# Wrappers that count each scheduler command, then run the real one.
mkdir -p "$T/bin"
for p in squeue sacct scontrol; do
    printf '#!/bin/sh\necho %s >>"$BENCH_CALLS"\nexec /usr/bin/%s "$@"\n' "$p" "$p" >"$T/bin/$p"
    chmod +x "$T/bin/$p"
done

max=1000
echo "submitting $max held jobs ..." >&2
mapfile -t ids < <(cluster_in head bash -c 'for _ in $(seq "$1"); do sbatch --parsable --hold -N 1 --wrap true; done' _ "$max")
[ "${#ids[@]}" -eq "$max" ] || { echo "only ${#ids[@]} of $max jobs submitted" >&2; exit 1; }

# index N: an index of the first N jobs' records.
make_index() {
    local n=$1 i dir
    mkdir -p "$T/state-$n/ddpjob"
    for ((i = 0; i < n; i++)); do
        dir=$T/records/r$i
        if [ ! -d "$dir" ]; then
            mkdir -p "$dir"
            printf '{\n  "version": 1,\n  "name": "bench%d",\n  "scheduler": "slurm",\n  "nodes": 1,\n  "procs_per_node": 1\n}\n' "$i" >"$dir/job.json"
            echo "0 ${ids[$i]}" >"$dir/links"
        fi
        printf '%d\t%s\tslurm\tbench%d\t%s\n' "$i" "${ids[$i]}" "$i" "$dir"
    done >"$T/state-$n/ddpjob/jobs"
}

# time_in_head CMD...: seconds CMD takes inside the head namespace; CALLS: scheduler commands.
time_in_head() {
    : >"$T/calls"
    local start end
    start=$(date +%s.%N)
    cluster_in head env PATH="$T/bin:$PATH" BENCH_CALLS="$T/calls" "$@" >"$T/out" 2>&1
    end=$(date +%s.%N)
    SECS=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}')
    CALLS=$(wc -l <"$T/calls")
}

printf '%-6s  %-28s  %-28s  %s\n' jobs "ddpjob status (s, calls)" "squeue per job (s, calls)" "time ratio"
for n in 1 100 1000; do
    make_index "$n"
    time_in_head env XDG_STATE_HOME="$T/state-$n" "$DDPJOB" status
    ours=$SECS our_calls=$CALLS
    shown=$(grep -c '): pending' "$T/out")
    [ "$shown" -eq "$n" ] || { echo "ddpjob status showed $shown of $n jobs as pending:" >&2; head -n 5 "$T/out" >&2; exit 1; }
    time_in_head bash -c 'for id; do squeue -h -j "$id" -o %T >/dev/null; done' _ "${ids[@]:0:n}"
    printf '%-6s  %-28s  %-28s  %s\n' "$n" "$ours s, $our_calls call(s)" "$SECS s, $CALLS call(s)" \
        "$(awk -v a="$ours" -v b="$SECS" 'BEGIN {printf "%.2fx", a / b}')"
done

# A sweep of 1000 trials: a real held array job (sbatch --array=0-999), a sweep record of 1000
# trial records, each with a metrics file of 100 lines; against one squeue per trial.
array=$(cluster_in head sbatch --parsable --hold --array=0-$((max - 1)) -N 1 --wrap true)
sweep=$T/sweep
mkdir -p "$sweep" "$T/state-sweep/ddpjob"
{
    printf '{"version": 1, "name": "benchsweep", "scheduler": "slurm", "how": "array", "parallel": 10, "trials": ['
    for ((k = 0; k < max; k++)); do printf '%s{"params": {"lr": 0.%d}}' "$([ "$k" -gt 0 ] && echo ,)" "$k"; done
    printf ']}\n'
} >"$sweep/sweep.json"
for ((k = 0; k < max; k++)); do
    dir=$sweep/trial-$k
    mkdir -p "$dir/link-0/logs/run/attempt_0/rank_0"
    printf '{"version": 1, "name": "benchsweep", "scheduler": "slurm", "nodes": 1, "procs_per_node": 1}\n' >"$dir/job.json"
    echo "0 ${array}_$k" >"$dir/links"
    for step in $(seq 100); do printf '{"step": %d, "loss": 0.%d, "test_acc": 0.%d}\n' "$step" "$k" "$step"; done \
        >"$dir/link-0/logs/run/attempt_0/rank_0/metrics.jsonl"
done
chmod -R go-w "$T"
printf '%d\t%s\tslurm\tbenchsweep\t%s\n' 0 "$array" "$sweep" >"$T/state-sweep/ddpjob/jobs"
time_in_head env XDG_STATE_HOME="$T/state-sweep" "$DDPJOB" status benchsweep
ours=$SECS our_calls=$CALLS
shown=$(grep -c ' pending ' "$T/out")
[ "$shown" -eq "$max" ] || { echo "ddpjob status showed $shown of $max trials as pending:" >&2; head -n 5 "$T/out" >&2; exit 1; }
tasks=()
for ((k = 0; k < max; k++)); do tasks+=("${array}_$k"); done
time_in_head bash -c 'for id; do squeue -h -j "$id" -o %T >/dev/null; done' _ "${tasks[@]}"
printf '%-6s  %-28s  %-28s  %s\n' "sweep $max" "$ours s, $our_calls call(s)" "$SECS s, $CALLS call(s)" \
    "$(awk -v a="$ours" -v b="$SECS" 'BEGIN {printf "%.2fx", a / b}')"
echo "(ratio: ddpjob's time over the per-job path's; lower is better)"

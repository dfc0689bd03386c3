#!/bin/bash
# A container's start-up cost under ddpjob beside the runtime's own: the time from a start to the
# first line of the worker inside the image, for one node of 1 worker, median of REPS runs (default
# 15, taken in turn), in images made here (tests/lib/images.sh). Rows: the runtime alone starting the image
# (`enroot start IMG sh -c 'echo up'`, `ch-run DIR -- ...`), ddpjob-agent --standalone with the
# same container (its own start, rendezvous and the worker's), the agent without any container, and
# with --container-stage (the copy to node-local storage). Target: the agent adds at most 0.2 s per
# node beyond the runtime's own start.
#   bench/container.sh [BUILD_DIR]   (default build; needs /opt/enroot and ch-run)
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
agent=$PWD/$build/agent/ddpjob-agent
reps=${REPS:-15}
# shellcheck source=lib.sh
. bench/lib.sh
# shellcheck source=../tests/lib/images.sh
. tests/lib/images.sh
export PATH=/opt/enroot/bin:$PATH USER=${USER:-root}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
image_root "$T/root"
image_sqsh "$T/root" "$T/image.sqsh"
mkdir -p "$T/stage" "$T/work"
cd "$T/work" || exit 1

# CMD...: milliseconds from its start to its first line saying "up" (it is killed then).
first_line_ms() {
    local start end line
    start=$(date +%s%N)
    while IFS= read -r line; do
        case $line in *up*) break ;; esac
    done < <("$@" 2>/dev/null)
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
}

# One start of each kind; REPS rounds of all of them in turn, so that the machine's drift falls on
# every row alike; each row's median into figure[NAME].
start_of() { # NAME
    local echo=(sh -c 'echo up') enroot
    enroot=$(command -v enroot)
    case $1 in
    bare_agent) first_line_ms "$agent" --standalone "${echo[@]}" ;;
    enroot) first_line_ms "$enroot" start "$T/image.sqsh" "${echo[@]}" ;;
    agent_enroot) first_line_ms "$agent" --standalone --container-runtime enroot \
        --container-image "$T/image.sqsh" "${echo[@]}" ;;
    agent_enroot_staged) first_line_ms env TMPDIR="$T/stage" "$agent" --standalone \
        --container-runtime enroot --container-image "$T/image.sqsh" --container-stage jobfs "${echo[@]}" ;;
    charliecloud) first_line_ms ch-run "$T/root" -- "${echo[@]}" ;;
    agent_charliecloud) first_line_ms "$agent" --standalone --container-runtime charliecloud \
        --container-image "$T/root" "${echo[@]}" ;;
    esac
}
kinds=(bare_agent enroot agent_enroot agent_enroot_staged charliecloud agent_charliecloud)
declare -A samples figure
for _ in $(seq "$reps"); do
    for kind in "${kinds[@]}"; do samples[$kind]+="$(start_of "$kind")"$'\n'; done
done
for kind in "${kinds[@]}"; do figure[$kind]=$(printf '%s' "${samples[$kind]}" | median); done

echo "== a container's start: from the start to the worker's first line, median of $reps (1 node, 1 worker) =="
echo "   ($(nproc) CPUs; image $(stat -c %s "$T/image.sqsh") bytes; enroot $(enroot version), ch-run $(ch-run --version 2>&1); $(date -u +%F))"
printf '  %-34s %8s ms\n' "ddpjob-agent, no container" "${figure[bare_agent]}"
for rt in enroot charliecloud; do
    own=${figure[$rt]} ours=${figure[agent_$rt]}
    printf '  %-34s %8s ms\n' "$rt alone" "$own" "ddpjob-agent + $rt" "$ours"
    [ "$rt" != enroot ] || printf '  %-34s %8s ms\n' "ddpjob-agent + enroot, staged" "${figure[agent_enroot_staged]}"
    awk -v own="$own" -v ours="$ours" -v rt="$rt" 'BEGIN {
        printf "  added by ddpjob beyond %s: %d ms per node (target <= 200 ms): %s; ratio %.2fx\n",
            rt, ours - own, (ours - own <= 200 ? "met" : "NOT met"), ours / own }'
done

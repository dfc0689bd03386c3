# shellcheck shell=bash
# bench/soak.sh --parallel: one soak per backend at once, each running the jobs the common draw
# (the same seed) gives its backend, so the jobs and their faults are those of a run in turn; the
# per-job lines of each, then one summary line adding them up.

# soak_in_parallel [BUILD_DIR]: from bench/soak.sh's options (jobs, seed, backends, only).
soak_in_parallel() {
    local logs b last total=0 wrong=0 leftovers=0 status=0 started=$SECONDS by="" on="" k
    logs=$(mktemp -d) || return 2
    declare -A count pid
    for b in ${backends//,/ }; do
        bash "$0" --jobs "$jobs" --seed "$seed" --on "$backends" ${only:+--kinds "$only"} --alone "$b" "$@" \
            >"$logs/$b" 2>&1 &
        pid[$b]=$!
    done
    for b in "${!pid[@]}"; do wait "${pid[$b]}" || status=1; done
    for b in ${backends//,/ }; do
        last=$(tail -n 1 "$logs/$b")
        head -n -1 "$logs/$b"
        if ! [[ $last =~ ^soak:\ ([0-9]+)\ jobs,\ [0-9]+\ faults\ \(by\ kind:\ ([^\;]*)\;\ by\ backend:\ [^\)]*\),\ ([0-9]+)\ wrong\ outcomes,\ ([0-9]+)\ leftovers ]]; then
            echo "$last"
            echo "soak: the $b soak ended without its summary" >&2
            rm -rf "$logs"
            return 2
        fi
        total=$((total + BASH_REMATCH[1])) wrong=$((wrong + BASH_REMATCH[3])) leftovers=$((leftovers + BASH_REMATCH[4]))
        on+="${on:+, }$b ${BASH_REMATCH[1]}"
        while read -r k n; do
            [ -n "$k" ] && count[$k]=$((${count[$k]:-0} + n))
        done <<<"$(tr ',' '\n' <<<"${BASH_REMATCH[2]}")"
    done
    rm -rf "$logs"
    for k in $(printf '%s\n' "${!count[@]}" | sort); do by+="${by:+, }$k ${count[$k]}"; done
    echo "soak: $total jobs, $total faults (by kind: $by; by backend: $on), $wrong wrong outcomes, $leftovers leftovers, $((SECONDS - started)) s"
    return "$status"
}

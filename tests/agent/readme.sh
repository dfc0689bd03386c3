#!/bin/bash
# README's commands, as a reader would type them: every command line README shows (indented code
# blocks, and `$ ` lines of console blocks) is found and either run here as written, with what
# README says it prints, or, where it needs a cluster, a job or hosts this machine lacks, run
# against none, where it must get past its options to the lookup (so every option README shows
# is one the command takes); the cluster suites run those for real. A command that fits neither
# fails this suite, so a new one cannot go unchecked.
. "$SRCDIR/tests/lib/agents.sh"
require_torch
BIN=$T/bin
mkdir -p "$BIN"
ln -s "$DDPJOB" "$BIN/ddpjob"
ln -s "$AGENT" "$BIN/ddpjob-agent"
ln -s "$TRAIN" "$BIN/ddp-train"
export PATH=$BIN:$PATH XDG_STATE_HOME=$T/state
cp -r "$SRCDIR/share" "$T/share"

# The command lines, one per line, each with the README line it is on: LINE<TAB>COMMAND, comments
# and `&& echo done` tails dropped; a program's own output (`ddpjob-agent: ...`) is no command.
readme_commands() {
    awk '
        /^```/ { fenced = !fenced; next }
        { line = "" }
        !fenced && /^    / { line = $0; sub(/^ +/, "", line) }
        fenced && /^\$ / { line = substr($0, 3) }
        line != "" {
            sub(/^\$ /, "", line); sub(/ +#.*$/, "", line); sub(/ && echo done$/, "", line)
            if (line ~ /^(cd [^ ]+ && )?(ddpjob|ddpjob-agent|ddp-train|bash|meson|module)( |$)/)
                print NR "\t" line
        }' "$SRCDIR/README.md"
}

# The console block after README line N, as README shows it.
console_after() {
    awk -v from="$1" 'NR > from && /^```console/ { on = 1; next } on && /^```/ { exit } on' "$SRCDIR/README.md"
}

checked=0
while IFS=$'\t' read -r line command; do
    checked=$((checked + 1))
    words=${command#cd share/examples && }
    read -ra argv <<<"$words"
    case "$command" in
    "bash scripts/test.sh")
        pass "README:$line \`$command\` is CI's command (.ci/run runs it)" ;;
    "bash scripts/quickstart.sh")
        # Its install and build are the suite's own; the rest it runs here, as it does.
        ok=0
        for spec in "$SRCDIR"/share/examples/*.yaml; do ddpjob validate "$spec" >/dev/null 2>&1 || ok=$?; done
        mkdir -p "$T/quick" && cp "$SRCDIR/share/examples/train-synthetic.yaml" "$T/quick/"
        run bash -c 'cd "$1" && ddpjob run train-synthetic.yaml' _ "$T/quick"
        expect_eq "$ok/$RC" 0/0 "README:$line \`$command\`: every example validates and the main job runs"
        expect_contains "$OUT" "trained after 5 of 5 epochs" "README:$line: and trains to its last epoch" ;;
    "meson setup build --prefix ~/.local && ninja -C build install")
        expect_contains "$(cat "$SRCDIR/tests/cli/install.sh")" "$command" \
            "README:$line \`$command\` is run as written by tests/cli/install.sh, as a user without root" ;;
    "cd share/examples && ddpjob run "* | "cd share/examples && ddpjob validate "* | "ddpjob-agent --standalone "*)
        run bash -c 'cd "$1/share/examples" && eval "$2"' _ "$T" "$words"
        expect_eq "$RC" 0 "README:$line \`$command\` runs here and exits 0" "$ERR"
        shown=$(console_after "$line" | grep -v '^\.\.\.$')
        if [ "${argv[1]}" = validate ]; then
            expect_eq "$ERR"$'\n'"$OUT" "$shown" "README:$line: and prints what README shows after it"
        elif [ "${argv[1]}" = run ]; then
            for want in "parameter checksum" "ranks 0-1 of 2"; do
                expect_contains "$OUT$ERR" "$want" "README:$line: its output has \"$want\", as README shows"
            done
        fi ;;
    ddpjob\ setup-nodes* | ddpjob\ doctor* | ddpjob\ launch*)
        # Hosts README names do not exist here: the command must fail on them, not on its options.
        run timeout 60 "${argv[@]}"
        expect_lacks "$ERR" "usage:" "README:$line \`$command\`: its options are taken (it fails on the hosts, as hosts that do not exist must)"
        expect_lacks "$ERR" "unrecognized option" "README:$line: no option of it is unknown" ;;
    ddpjob\ cluster\ add\ *)
        run env XDG_CONFIG_HOME="$T/config" "${argv[@]}"
        expect_eq "$RC:$OUT" "0:cluster ${argv[3]} added in $T/config/ddpjob/clusters.yaml" \
            "README:$line \`$command\` writes the profile" ;;
    ddpjob\ *\ --on\ * | ddpjob\ cluster\ check\ *)
        # The cluster README names is a real one: from a network namespace with no link it must be
        # tried and not reached (past the options, the profile and the spec's checks).
        run env -C "$T" XDG_CONFIG_HOME="$T/config" unshare --net timeout 60 "${argv[@]}"
        expect_lacks "$ERR" "usage:" "README:$line \`$command\`: its options are taken"
        expect_contains "$RC:$ERR" "gadi.nci.org.au" "README:$line: it tries the cluster (and cannot reach it from here)" ;;
    ddpjob\ list*)
        run "${argv[@]}"
        expect_eq "$RC" 0 "README:$line \`$command\` runs (no jobs yet)" "$ERR" ;;
    ddpjob\ submit\ share/examples/*)
        # Its workdir is a cluster's (/scratch/...): here, a folder this machine has.
        mkdir -p "$T/workdir"
        run bash -c 'cd "$1" && ddpjob submit --dry-run "$2" --set workdir="$1/workdir"' _ "$T" "${argv[2]}"
        expect_eq "$RC" 0 "README:$line \`$command\`: submit --dry-run of it (its workdir here) writes its script" "$ERR" ;;
    ddpjob\ dev\ share/examples/*)
        # Its workdir here; past its options and the spec, to the scheduler this machine lacks.
        mkdir -p "$T/workdir"
        run env -C "$T" timeout 60 "${argv[@]}" --set workdir="$T/workdir" --wait-for 5s
        expect_eq "$RC" 4 "README:$line \`$command\`: its options and spec are taken; it goes to sbatch" "$ERR" ;;
    ddpjob\ *)
        # A job's lifecycle on no job: past the options, to "no job NAME".
        run timeout 60 "${argv[@]}"
        expect_contains "$ERR" "no job \"" "README:$line \`$command\`: its options are taken; it looks the job up" ;;
    *)
        fail "README:$line \`$command\` is checked" "no rule of tests/agent/readme.sh runs it" ;;
    esac
done < <(readme_commands)
if [ "$checked" -ge 20 ]; then pass "README's $checked command lines were found and checked"; else
    fail "README's command lines are found" "only $checked"; fi
expect_no_leftovers "nothing left running"

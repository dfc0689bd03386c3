#!/bin/bash
# --help on every command and subcommand of the three programs (exit 0, the usage on stdout,
# nothing on stderr) and --version on each; an unknown subcommand is a usage error (exit 2).
# Every option a --help names is in the program's man page, and in ddpjob's bash completion for
# that command (ddpjob-agent's and ddp-train's completions read --help itself).
. "$SRCDIR/tests/lib/tap.sh"
: "${AGENT:?}" "${TRAIN:?}"

check_help() { # NAME CMD...
    local name=$1
    shift
    run "$@" --help
    if [ "$RC" = 0 ] && [ -z "$ERR" ] && [ "${OUT#usage: }" != "$OUT" ]; then
        pass "$name --help: exit 0, its usage on stdout"
    else
        fail "$name --help: exit 0, its usage on stdout" "exit $RC" "stdout: ${OUT:0:200}" "stderr: $ERR"
    fi
}

check_help ddpjob "$DDPJOB"
# Every command ddpjob's own help lists (at least the eight of the first release).
subs=$("$DDPJOB" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
if [ "$(wc -w <<<"$subs")" -ge 8 ]; then pass "ddpjob --help lists its commands"; else
    fail "ddpjob --help lists its commands" "found: $subs"; fi
for sub in $subs; do check_help "ddpjob $sub" "$DDPJOB" "$sub"; done
check_help ddpjob-agent "$AGENT"
check_help ddp-train "$TRAIN"
# Every command ddp-train's own help lists.
for sub in $("$TRAIN" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do check_help "ddp-train $sub" "$TRAIN" "$sub"; done
for prog in "$DDPJOB" "$AGENT" "$TRAIN"; do
    run "$prog" --version
    expect_eq "$RC/$OUT" "0/$(basename "$prog") 0.1.0" "$(basename "$prog") --version"
done
run "$DDPJOB" frobnicate
expect_eq "$RC" 2 "an unknown ddpjob subcommand is a usage error"
run "$TRAIN" frobnicate
expect_eq "$RC" 2 "an unknown ddp-train command is a usage error"

# options_of CMD...: the options CMD --help names: those its usage lines show and those that
# open an indented line of the list.
options_of() {
    "$@" --help | awk '
        /^usage:/ { usage = 1 }
        usage && !/^usage:/ && !/^ / { usage = 0 }
        usage { while (match($0, /--[a-z][a-z0-9-]*/)) { print substr($0, RSTART, RLENGTH); $0 = substr($0, RSTART + RLENGTH) } next }
        /^ +(-[A-Za-z], )?--[a-z]/ { sub(/^ +(-[A-Za-z], )?/, ""); sub(/[ =\[].*/, ""); print }' | sort -u
}
# in_man OPTION PAGE: whether the page names the option (troff writes - as \-).
in_man() { grep -qF -- "${1//-/\\-}" "$2"; }
man_dir=$SRCDIR/share/man
completion=$SRCDIR/share/completions/ddpjob.bash
for sub in $subs; do
    missing_man= missing_completion=
    completes=" $(sed -n "s/^    $sub) opts=\"\(.*\)\" ;;/\1/p" "$completion") "
    for opt in $(options_of "$DDPJOB" "$sub"); do
        in_man "$opt" "$man_dir/ddpjob.1" || missing_man+=" $opt"
        [ "${completes#* "$opt" }" != "$completes" ] || missing_completion+=" $opt"
    done
    expect_eq "${missing_man:-none}" none "ddpjob(1) names every option of ddpjob $sub --help"
    expect_eq "${missing_completion:-none}" none "ddpjob.bash completes every option of ddpjob $sub --help"
done
for prog in "$AGENT" "$TRAIN"; do
    missing_man=
    for opt in $(options_of "$prog"); do
        in_man "$opt" "$man_dir/$(basename "$prog").1" || missing_man+=" $opt"
    done
    expect_eq "${missing_man:-none}" none "$(basename "$prog")(1) names every option of its --help"
done

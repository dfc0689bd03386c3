#!/bin/bash
# --help on every command and subcommand of the three programs (exit 0, the usage on stdout,
# nothing on stderr) and --version on each; an unknown subcommand is a usage error (exit 2).
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

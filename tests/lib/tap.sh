# Shared by the shell tests: TAP output, assertions, a private temporary directory.
# Tests get DDPJOB (the built binary) and SRCDIR (the source tree) from meson.
set -u
: "${DDPJOB:?run through meson test}" "${SRCDIR:?run through meson test}"

TAP_N=0
TAP_FAILED=0
T=$(mktemp -d "${TMPDIR:-/tmp}/ddpjob-test.XXXXXX")
TAP_AT_EXIT=()

# at_exit COMMAND: run when the suite ends, however it ends, before its temporary directory goes
# and the plan is printed (the last one given runs first).
at_exit() { TAP_AT_EXIT=("$1" "${TAP_AT_EXIT[@]}"); }

# The one exit hook of every suite.
tap_end() {
    local command
    for command in "${TAP_AT_EXIT[@]}"; do eval "$command"; done
    rm -rf "$T"
    echo "1..$TAP_N"
    [ "$TAP_FAILED" -eq 0 ]
}
trap tap_end EXIT

pass() {
    TAP_N=$((TAP_N + 1))
    echo "ok $TAP_N - $1"
}

fail() {
    TAP_N=$((TAP_N + 1))
    TAP_FAILED=$((TAP_FAILED + 1))
    echo "not ok $TAP_N - $1"
    shift
    # Every line of every detail is a TAP comment, so multi-line output stays valid TAP.
    local detail
    for detail in "$@"; do
        printf '%s\n' "$detail" | sed 's/^/#   /'
    done
}

skip() { # DESCRIPTION REASON
    TAP_N=$((TAP_N + 1))
    echo "ok $TAP_N - $1 # SKIP $2"
}

expect_eq() { # GOT WANT DESCRIPTION [DETAIL...]: the details are said when it fails
    if [ "$1" = "$2" ]; then pass "$3"; else fail "$3" "got:  $1" "want: $2" "${@:4}"; fi
}

expect_ne() { # GOT UNWANTED DESCRIPTION [DETAIL...]
    if [ "$1" != "$2" ]; then pass "$3"; else fail "$3" "got what it must not be: $1" "${@:4}"; fi
}

expect_contains() { # HAYSTACK NEEDLE DESCRIPTION
    case "$1" in
    *"$2"*) pass "$3" ;;
    *) fail "$3" "missing: $2" "in: $1" ;;
    esac
}

expect_lacks() { # HAYSTACK NEEDLE DESCRIPTION
    case "$1" in
    *"$2"*) fail "$3" "unexpected: $2" "in: $1" ;;
    *) pass "$3" ;;
    esac
}

expect_file() { # PATH DESCRIPTION
    if [ -e "$1" ]; then pass "$2"; else fail "$2" "no such file: $1"; fi
}

expect_no_file() { # PATH DESCRIPTION
    if [ ! -e "$1" ]; then pass "$2"; else fail "$2" "file exists: $1"; fi
}

expect_within() { # SECONDS DESCRIPTION COMMAND...: passes once COMMAND succeeds (tried every 0.3 s)
    local limit=$1 what=$2 deadline=$((SECONDS + $1))
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || { fail "$what" "not so after $limit s"; return 1; }
        sleep 0.3
    done
    pass "$what"
}

# run_until SECONDS NEEDLE COMMAND...: runs COMMAND, which sets OUT (run, or a suite's wrapper of
# it), every second until OUT holds NEEDLE or SECONDS have passed.
run_until() {
    local deadline=$((SECONDS + $1)) needle=$2
    shift 2
    while "$@" && [[ $OUT != *"$needle"* ]] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 1
    done
}

# Runs a command, keeping its stdout, stderr and status in OUT, ERR and RC.
run() {
    OUT=$("$@" 2>"$T/stderr") && RC=0 || RC=$?
    ERR=$(cat "$T/stderr")
}

# A bin directory for rendered scripts: the real ddpjob, and a ddpjob-agent that records its
# argv (one argument per line, newlines escaped) and worker-relevant environment, then exits
# with $AGENT_EXIT_<node rank> (default 0). These tests check exactly what the script hands the
# agent; tests/agent/ runs the scripts with the real one.
make_bindir() { # DIR RECORD_DIR
    mkdir -p "$1" "$2"
    ln -sf "$DDPJOB" "$1/ddpjob"
    cat >"$1/ddpjob-agent" <<AGENT
#!/bin/bash
rank=\${SLURM_NODEID:-unknown}
prev=
for a in "\$@"; do [ "\$prev" = --node-rank ] && rank=\$a; prev=\$a; done
out=$2/agent.\$rank
for a in "\$@"; do printf '%s\n' "\${a//\$'\n'/\\\\n}"; done >"\$out.argv"
env >"\$out.env"
pwd >"\$out.pwd"
prev=
for a in "\$@"; do
    if [ "\$prev" = --token-file ]; then stat -c %a "\$a" >"\$out.tokenmode"; fi
    prev=\$a
done
code=AGENT_EXIT_\$rank
exit "\${!code:-0}"
AGENT
    chmod +x "$1/ddpjob-agent"
}

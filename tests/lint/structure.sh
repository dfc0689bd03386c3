#!/bin/bash
# The code's shape: no function over 80 lines (but spawn's capture and the template lexer, each
# one state machine), and no call circle between the files of a folder (a file that calls
# another's function is above it; a circle means neither can be read or changed alone). A
# function is a definition whose body opens with "{" at column 0 (clang-format's Linux braces).
. "$SRCDIR/tests/lib/tap.sh"
cd "$SRCDIR" || exit 1

# "lines file name" for each function body in the files given.
function_lengths() {
    awk '/^[A-Za-z_].*[A-Za-z_0-9]+\(/ { sig = $0 }
         /^\{/ { start = FNR }
         /^\}/ && start { name = sig; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
                          print FNR - start - 1, FILENAME, name; start = 0 }' "$@"
}

long=$(function_lengths $(git ls-files 'agent/*.c' 'cli/*.c' 'runtime/*.c' 'runtime/*.cu' \
    'bench/*.c') | awk '$1 > 80 && !($3 == "ddp_spawn_capture" || $3 == "tokenize")')
if [ -z "$long" ]; then
    pass "no function over 80 lines"
else
    fail "no function over 80 lines" "$long"
fi

# The functions a file defines for others (not static), one per line.
exported() {
    awk '/^[A-Za-z_].*[A-Za-z_0-9]+\(/ { sig = $0 }
         /^\{/ && sig !~ /^static/ { name = sig; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
                                     print name }' "$1"
}

# "caller callee" for each pair of files in folder $1 where the first calls the second; a
# *_none.c (built in place of its namesake where a library is missing) is not a caller.
file_calls() {
    local dir=$1 a b f stripped
    stripped=$(mktemp -d)
    for a in "$dir"/*.c; do
        perl -0777 -pe 's{/\*.*?\*/}{}gs' "$a" >"$stripped/$(basename "$a")"
    done
    for b in "$dir"/*.c; do
        for f in $(exported "$b"); do
            for a in "$dir"/*.c; do
                [ "$a" != "$b" ] && [[ $a != *_none.c && $b != *_none.c ]] && grep -qE "\b$f\(" "$stripped/$(basename "$a")" &&
                    echo "$(basename "$a" .c) $(basename "$b" .c)"
            done
        done
    done | sort -u
    rm -rf "$stripped"
}

# runtime/job is left out: its store server is one module in two files (store_server.c and
# store_relay.c, sharing store_server_internal.h), which call each other by design.
for dir in agent cli runtime/base runtime/pg runtime/train; do
    calls=$(file_calls "$dir")
    if [ -z "$calls" ]; then
        fail "$dir/: its files' calls are found" "no call between its files: the check is broken"
        continue
    fi
    if loop=$(echo "$calls" | tsort 2>&1 >/dev/null) && [ -z "$loop" ]; then
        pass "$dir/: no call circle between its files ($(echo "$calls" | wc -l) calls between files)"
    else
        fail "$dir/: no call circle between its files" "$loop" "calls (caller callee):" "$calls"
    fi
done

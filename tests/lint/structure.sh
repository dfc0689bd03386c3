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

mapfile -t sources < <(git ls-files 'agent/*.c' 'cli/*.c' 'runtime/*.c' 'runtime/*.cu' 'bench/*.c')
long=$(function_lengths "${sources[@]}" |
    awk '$1 > 80 && !($3 == "ddp_spawn_capture" || $3 == "tokenize")')
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

# "caller callee" for each pair of files under folder $1 where the first calls the second (paths
# from $1, without .c); a *_none.c (built in place of its namesake where a library is missing) is
# neither.
file_calls() {
    local dir=$1 f
    local files=()
    mapfile -t files < <(cd "$dir" && find . -name '*.c' ! -name '*_none.c' | sed 's|^\./||' | sort)
    {
        # "def FUNCTION FILE" for what each file defines for others...
        for f in "${files[@]}"; do
            exported "$dir/$f" | sed "s|^|def |; s|\$| ${f%.c}|"
        done
        # ... then "call FUNCTION FILE" for each name a file calls, comments left out.
        for f in "${files[@]}"; do
            perl -0777 -pe 's{/\*.*?\*/}{}gs' "$dir/$f" | grep -oE '\b[A-Za-z_][A-Za-z0-9_]*\(' |
                sort -u | sed "s|(\$||; s|^|call |; s|\$| ${f%.c}|"
        done
    } | awk '$1 == "def" { home[$2] = $3; next }
             $1 == "call" && ($2 in home) && home[$2] != $3 { print $3, home[$2] }' | sort -u
}

# Whether the "caller callee" lines on stdin ($2 of them) hold a circle; TAP line named $1.
check_circles() {
    local name=$1 calls loop
    calls=$(cat)
    if [ -z "$calls" ]; then
        fail "$name" "no call found: the check is broken"
    elif loop=$(echo "$calls" | tsort 2>&1 >/dev/null) && [ -z "$loop" ]; then
        pass "$name ($(echo "$calls" | wc -l) calls)"
    else
        fail "$name" "$loop" "calls (caller callee):" "$calls"
    fi
}

# runtime/job is left out: its store server is one module in two files (store_server.c and
# store_relay.c, sharing store_server_internal.h), which call each other by design.
for dir in agent cli runtime/base runtime/pg runtime/train; do
    calls=$(file_calls "$dir")
    check_circles "$dir/: no call circle between its files" <<<"$calls"
    # The folders are layers: a call between two files of one folder stays inside it.
    if [ "$(find "$dir" -mindepth 2 -name '*.c' | head -n 1)" ]; then
        check_circles "$dir/: its folders are layers, no call circle between them" < <(
            awk '{ a = $1; b = $2; sub(/\/[^/]*$/, "", a); sub(/\/[^/]*$/, "", b)
                   if ($1 !~ /\//) a = "."; if ($2 !~ /\//) b = "."
                   if (a != b) print a, b }' <<<"$calls" | sort -u)
    fi
done

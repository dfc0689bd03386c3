#!/bin/bash
# Every C, CUDA and header file of the project is as clang-format (the project's .clang-format:
# 100 columns) writes it; a file that is not is listed with the first lines that differ.
. "$SRCDIR/tests/lib/tap.sh"
cd "$SRCDIR" || exit 1
if ! command -v clang-format >/dev/null; then
    fail "clang-format is installed (scripts/install-test-deps.sh installs it)"
    exit 1
fi
files=$(git ls-files '*.c' '*.h' '*.cu' '*.cc' 2>/dev/null || find agent cli runtime tests bench \
    -name '*.[ch]' -o -name '*.cu' -o -name '*.cc')
count=0 unformatted=()
for f in $files; do
    count=$((count + 1))
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        unformatted+=("$f: $(clang-format "$f" | diff "$f" - | head -n 4 | tr '\n' ' ')")
    fi
done
if [ "${#unformatted[@]}" -eq 0 ]; then
    pass "all $count C, CUDA and header files are clang-format's"
else
    fail "all $count C, CUDA and header files are clang-format's" "${unformatted[@]}"
fi

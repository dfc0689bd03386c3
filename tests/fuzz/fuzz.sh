#!/bin/bash
# The fuzz targets (clang's libFuzzer with ASan and UBSan): each built from the sources it
# covers and run for FUZZ_SECONDS (default 30) from its checked-in corpus (tests/fuzz/corpus/,
# copied: new inputs stay in the run's directory). A crash, leak or sanitizer report fails the
# target and keeps the input that caused it. TAP, one line per target.
#   FUZZ_SECONDS=N SRCDIR=... BUILDDIR=... tests/fuzz/fuzz.sh [TARGET...]
set -u
: "${SRCDIR:?run through meson test}" "${BUILDDIR:?run through meson test}"
seconds=${FUZZ_SECONDS:-30}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(hostlist spec store request record)
out=$BUILDDIR/fuzz
mkdir -p "$out"
clang=$(command -v clang || true)
if [ -z "$clang" ]; then
    echo "1..1"
    echo "not ok 1 - clang is installed (scripts/install-test-deps.sh installs it)"
    exit 1
fi

rt=$SRCDIR/runtime
# The base and job libraries (runtime/base, runtime/job), here instrumented.
libddp=("$rt"/base/*.c "$rt"/job/*.c)
declare -A sources=(
    [hostlist]="${libddp[*]}"
    [spec]="${libddp[*]} $rt/train/options/train_options.c $(printf "$SRCDIR/cli/spec/%s.c " diag units shquote spec spec_set sweep pipeline yaml_pair datafile template) "$SRCDIR"/cli/sched/*.c $(printf "$SRCDIR/cli/script/%s.c " render shell_hold) $(printf "$SRCDIR/cli/jobs/%s.c " job_state job_record json_doc)"
    [store]="${libddp[*]}"
    [request]="${libddp[*]}"
    [record]="${libddp[*]} $(printf "$SRCDIR/cli/jobs/%s.c " job_record job_state json_doc)"
)
flags=(-g -O1 "-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=undefined -D_GNU_SOURCE
       -DDDPJOB_VERSION='"fuzz"' -I"$SRCDIR" -pthread)
export DDPJOB_TEMPLATE_DIR=$SRCDIR/templates
# What a target makes on disk (fuzz_record's record folder) stays in the run's directory.
export TMPDIR=$out
echo "1..${#targets[@]}"
i=0
for t in "${targets[@]}"; do
    i=$((i + 1))
    # shellcheck disable=SC2086 # the sources are words
    if ! build=$("$clang" "${flags[@]}" "$SRCDIR/tests/fuzz/fuzz_$t.c" ${sources[$t]} -lyaml -ljansson -lm \
        -o "$out/fuzz_$t" 2>&1); then
        echo "not ok $i - fuzz_$t builds"
        while IFS= read -r line; do echo "#   $line"; done <<<"$build"
        continue
    fi
    corpus=$out/corpus_$t
    rm -rf "$corpus" && mkdir -p "$corpus" && cp "$SRCDIR/tests/fuzz/corpus/$t"/* "$corpus"/
    log=$out/fuzz_$t.log
    if "$out/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/$t-" \
        "$corpus" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "ok $i - fuzz_$t: $runs inputs in ${seconds} s, no crash, leak or sanitizer report"
    else
        echo "not ok $i - fuzz_$t found a failure (input kept as $out/$t-*)"
        grep -E 'ERROR|SUMMARY|runtime error|==[0-9]+==' "$log" | head -n 20 | sed 's/^/#   /'
    fi
done

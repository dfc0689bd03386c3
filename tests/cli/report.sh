#!/bin/bash
# `ddpjob report` of made-up records (tests/cli/py/synthetic_record.py) of 8 and 1,024 ranks,
# opened in a real headless Chromium: the DOM holds the summary, both links, a line per rank (8)
# or the band with the slow rank's own line (1,024), the heat strip naming the slow rank; the
# page has no script and fetches nothing; the screenshot is not blank. (A real failed Slurm job's
# report: tests/agent/see_slurm.sh; a requeued chain on OpenPBS: tests/agent/pbs.sh.)
. "$SRCDIR/tests/lib/tap.sh"
. "$SRCDIR/tests/lib/browser.sh"
cd "$T" || exit 1
if ! command -v chromium >/dev/null; then
    fail "a real headless Chromium is here" "no chromium on PATH (scripts/install-test-deps.sh installs Debian's chromium)"
    exit 1
fi

for size in 8 1024; do
    slow=$((size * 5 / 8))
    record=$(python3 "$SRCDIR/tests/cli/py/synthetic_record.py" "$T/w$size" "syn$size" "$size" 60 "$slow")
    # No scheduler answers here: the record alone speaks for the job.
    run env PATH=/usr/bin:/bin "$DDPJOB" report "$record" -o "r$size.html"
    expect_eq "$RC:$OUT" "0:r$size.html" "report of a $size-rank record writes the page and names it"
    expect_eq "$(stat -c %a "r$size.html")" 600 "private, as the record it is drawn from"
    page=$(cat "r$size.html")
    expect_lacks "$page" "<script" "$size ranks: no script in the page"
    expect_lacks "$page" "http" "$size ranks: nothing fetched (no URL at all)"
    dom=$(browser_dom "r$size.html")
    expect_contains "$dom" 'id="summary"' "$size ranks: Chromium shows the summary"
    expect_contains "$dom" "rank $slow (node $((slow / 8)), host n$((slow / 8 + 1))) is slow" "$size ranks: which names the slow rank"
    expect_contains "$dom" 'data-link="1"' "$size ranks: the chain's first link"
    expect_contains "$dom" 'data-link="2"' "$size ranks: and its second"
    expect_contains "$dom" 'walltime_signal: SIGUSR1 sent 180 s before the walltime' "$size ranks: the walltime signal on the chain"
    expect_contains "$dom" ">rank $slow (slow)</text>" "$size ranks: the slow rank's line, named"
    expect_contains "$(grep -A1 '<ol id="busiest">' <<<"$dom")" "rank $slow: busy 3.9x the median rank per step" \
        "$size ranks: the heat strip's busiest rank is the slow one"
    expect_contains "$dom" 'id="metric-0" role="img" aria-label="loss"' "$size ranks: rank 0's metrics"
    expect_eq "$(browser_errors)" "" "$size ranks: Chromium reports no error"
    expect_screenshot "r$size.html" "r$size.png" "$size ranks: the screenshot is not blank"
done
lines=$(grep -c '<path class="rank" data-rank=' r8.html)
expect_eq "$lines" 7 "8 ranks: a line per rank (7, and the slow rank's in red)"
expect_contains "$(cat r1024.html)" '<path class="band"' "1,024 ranks: the band of every rank's step, not 1,024 lines"
expect_eq "$(grep -c '<path class="rank" data-rank=' r1024.html)" 0 "1,024 ranks: no plain rank lines"
size=$(stat -c %s r1024.html)
if [ "$size" -lt 4000000 ]; then pass "1,024 ranks: the page is $size bytes"; else fail "1,024 ranks: the page stays under 4 MB" "$size"; fi

run "$DDPJOB" report nosuchjob
expect_eq "$RC" 3 "report of an unknown job exits 3"
expect_contains "$ERR" "nosuchjob" "and names what it looked for"

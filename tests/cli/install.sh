#!/bin/bash
# `meson install` puts the binary, templates, examples, man page and completion in place, and the
# installed ddpjob renders with the installed templates.
. "$SRCDIR/tests/lib/tap.sh"
: "${BUILDDIR:?run through meson test}"

run meson install -C "$BUILDDIR" --destdir "$T/inst" --quiet
expect_eq "$RC" 0 "meson install succeeds"
prefix=$(find "$T/inst" -path '*/bin/ddpjob' -type f | head -n 1)
prefix=${prefix%/bin/ddpjob}
for f in bin/ddpjob bin/ddp-train share/ddpjob/templates/pbs.sh share/ddpjob/templates/slurm.sh \
    share/ddpjob/examples/gadi-pbs.yaml share/ddpjob/examples/slurm-2x8.yaml \
    share/ddpjob/examples/single-node.yaml share/ddpjob/examples/train-synthetic.yaml \
    share/ddpjob/examples/pbspro-select.yaml share/ddpjob/sites/gadi.yaml \
    share/man/man1/ddpjob.1 share/man/man1/ddp-train.1 share/man/man1/ddpjob-agent.1 \
    share/bash-completion/completions/ddpjob share/bash-completion/completions/ddpjob-agent \
    share/bash-completion/completions/ddp-train; do
    expect_file "$prefix/$f" "installs $f"
done
run env -u DDPJOB_TEMPLATE_DIR "$prefix/bin/ddpjob" render "$prefix/share/ddpjob/examples/gadi-pbs.yaml"
expect_eq "$RC" 0 "the installed ddpjob renders an installed example (with the installed Gadi profile)"
expect_contains "$ERR" "cost: at most 576.00 SU" "whose cost it prints"
expect_contains "$OUT" "-- $prefix/bin/ddpjob-agent \"\${ddpjob_agent_args[@]}\"" "and points the nodes at the installed agent"
for page in ddpjob ddpjob-agent ddp-train; do
    if msg=$(man -l "$prefix/share/man/man1/$page.1" 2>&1 >/dev/null | grep -v '^$'); then
        fail "the $page man page formats without warnings" "$msg"
    else
        pass "the $page man page formats without warnings"
    fi
done
run env -u DDPJOB_TEMPLATE_DIR "$prefix/bin/ddpjob" render "$prefix/share/ddpjob/examples/train-synthetic.yaml"
expect_contains "$OUT" "$prefix/bin/ddp-train train --model mlp" "a train: spec runs the installed ddp-train"

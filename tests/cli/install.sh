#!/bin/bash
# `meson install` puts the binary, templates, examples, man page and completion in place, with a
# manifest of them (share/ddpjob/SHA256SUMS), and the installed ddpjob renders with the installed
# templates.
. "$SRCDIR/tests/lib/tap.sh"
: "${BUILDDIR:?run through meson test}"

run meson install -C "$BUILDDIR" --destdir "$T/inst" --quiet
expect_eq "$RC" 0 "meson install succeeds"
prefix=$(find "$T/inst" -path '*/bin/ddpjob' ! -path '*/lib/ddpjob/cluster/*' -type f | head -n 1)
prefix=${prefix%/bin/ddpjob}
for f in bin/ddpjob bin/ddp-train share/ddpjob/templates/pbs.sh share/ddpjob/templates/slurm.sh \
    share/ddpjob/examples/gadi-pbs.yaml share/ddpjob/examples/slurm-2x8.yaml \
    share/ddpjob/examples/single-node.yaml share/ddpjob/examples/train-synthetic.yaml \
    share/ddpjob/examples/pbspro-select.yaml share/ddpjob/examples/spares.yaml \
    share/ddpjob/examples/sweep.yaml share/ddpjob/examples/checkpoint_ddp.py share/ddpjob/sites/gadi.yaml \
    share/man/man1/ddpjob.1 share/man/man1/ddp-train.1 share/man/man1/ddpjob-agent.1 \
    share/bash-completion/completions/ddpjob share/bash-completion/completions/ddpjob-agent \
    share/bash-completion/completions/ddp-train; do
    expect_file "$prefix/$f" "installs $f"
done
run sh -c 'cd "$1" && sha256sum --quiet -c share/ddpjob/SHA256SUMS && cut -c67- share/ddpjob/SHA256SUMS' _ "$prefix"
expect_eq "$RC" 0 "the install's manifest (share/ddpjob/SHA256SUMS) holds the checksums of its files" "$OUT" "$ERR"
expect_eq "$(grep -cxE 'bin/ddpjob|bin/ddpjob-agent|share/ddpjob/templates/slurm.sh|share/man/man1/ddpjob.1' <<<"$OUT")" 4 \
    "... ddpjob's programs, templates and pages among them, named from the prefix"
# The Python package: in the prefix, where /usr/bin/python3 looks for that prefix; and pip's
# from the repository (offline: its build needs setuptools and wheel alone).
pkg=$(find "$prefix/lib" -path '*/lib/python3*/*-packages/ddpjob/__init__.py' 2>/dev/null | head -n 1)
expect_file "$pkg" "installs the ddpjob Python package (${pkg#"$prefix"/})"
run env PYTHONPATH="${pkg%/ddpjob/__init__.py}" /usr/bin/python3 -c 'import ddpjob; print(ddpjob.submit.__doc__.split()[0], ddpjob.JSON_VERSION)'
expect_eq "$OUT" "Submits 1" "the installed package imports" "$ERR"
# From a copy: pip's build leaves build/ and *.egg-info beside the sources it builds.
cp -r "$SRCDIR/python" "$T/python"
run env -C "$T" /usr/bin/python3 -m pip install --quiet --no-build-isolation --no-deps --no-index --target "$T/pip" "$T/python"
expect_eq "$RC" 0 "pip installs the package from the repository" "$ERR"
run env PYTHONPATH="$T/pip" /usr/bin/python3 -c 'import ddpjob, os; print(os.path.basename(os.path.dirname(ddpjob.__file__)))'
expect_eq "$OUT" "ddpjob" "pip's install imports" "$ERR"
# The cluster build (scripts/build-static.sh), what `submit --on` sends to a cluster of this
# architecture, with its own manifest.
cluster=$prefix/lib/ddpjob/cluster/$(uname -m)
for prog in ddpjob ddpjob-agent ddp-train; do
    expect_contains "$(file "$cluster/bin/$prog" 2>&1)" "statically linked" \
        "installs the cluster build's $prog, static, in lib/ddpjob/cluster/$(uname -m)"
done
run sh -c 'cd "$1" && sha256sum --quiet -c share/ddpjob/SHA256SUMS && "$1/bin/ddpjob" --version' _ "$cluster"
expect_eq "$RC:$OUT" "0:$("$DDPJOB" --version)" "... whole by its own manifest, and the same version"
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

# The installed tree moved elsewhere, as a user unpacks it in a home: run by a user without root,
# it finds its own templates, profiles and agent, and the modulefiles it carries load it with the
# real environment-modules and the real Lmod.
moved_parent=$(mktemp -d /tmp/ddpjob-moved.XXXXXX)
at_exit "rm -rf $moved_parent"
chmod 755 "$moved_parent"
moved=$moved_parent/tools/ddpjob
mkdir -p "$moved_parent/tools"
cp -a "$prefix" "$moved"
as_user() { runuser -u nobody -- env -i PATH=/usr/bin:/bin HOME=/tmp "$@"; }
run as_user "$moved/bin/ddpjob" render "$moved/share/ddpjob/examples/gadi-pbs.yaml"
expect_eq "$RC" 0 "moved and run by a user without root, ddpjob renders its own example with its own profile"
expect_contains "$OUT" "-- $moved/bin/ddpjob-agent \"\${ddpjob_agent_args[@]}\"" "and points the nodes at the moved install's agent"
modules=$moved/share/ddpjob/modulefiles
run as_user bash -c '. /usr/share/modules/init/bash && module use "$1" && module load ddpjob &&
    echo "ddpjob=$(command -v ddpjob) root=$DDPJOB_ROOT man=$(man -w ddpjob)"' _ "$modules"
expect_eq "$OUT" "ddpjob=$moved/bin/ddpjob root=$moved man=$moved/share/man/man1/ddpjob.1" \
    "environment-modules: module load ddpjob puts the moved install on PATH and MANPATH, DDPJOB_ROOT"
lmod=/opt/lmod/usr/share/lmod/lmod/libexec/lmod
if [ -x "$lmod" ]; then
    run as_user bash -c 'export MODULEPATH=$1 && eval "$("$2" bash load ddpjob)" &&
        echo "ddpjob=$(command -v ddpjob) root=$DDPJOB_ROOT" && "$2" bash show ddpjob 2>&1 | grep -o "/[^ ]*/ddpjob/[^ ]*lua"' \
        _ "$modules" "$lmod"
    expect_contains "$OUT" "ddpjob=$moved/bin/ddpjob root=$moved" "Lmod: module load ddpjob does the same"
    expect_contains "$OUT" "$modules/ddpjob/$("$moved/bin/ddpjob" --version | cut -d' ' -f2).lua" "from the Lua modulefile"
else
    fail "Lmod unpacked in /opt/lmod (scripts/install-test-deps.sh)" "no $lmod"
fi

# README's way 2, run as written by a user without root: the committed tree in their home,
# `meson setup build --prefix ~/.local && ninja -C build install` (CPU-only: -Dcuda=disabled),
# then the installed ddpjob.
user_home=$(mktemp -d /tmp/ddpjob-user.XXXXXX)
at_exit "rm -rf $user_home"
git -C "$SRCDIR" archive --format=tar --prefix=ddpjob/ HEAD | tar -x -C "$user_home"
chmod 755 "$user_home"
chown -R nobody: "$user_home"
run runuser -u nobody -- env -i PATH=/usr/bin:/bin HOME="$user_home" bash -c \
    'cd ~/ddpjob && meson setup build --prefix ~/.local -Dcuda=disabled >/dev/null && ninja -C build install >/dev/null &&
     ~/.local/bin/ddpjob render share/examples/slurm-2x8.yaml'
expect_eq "$RC" 0 "a user without root builds and installs into ~/.local with README's command" "$ERR"
expect_contains "$OUT" "$user_home/.local/bin/ddpjob-agent" "and the installed ddpjob's scripts start that install's agent"

#!/bin/sh
# meson install's last step: PREFIX/share/ddpjob/SHA256SUMS, the checksums of the files this
# install put in PREFIX ("HASH  bin/ddpjob" lines, `sha256sum -c` from PREFIX). A prefix such as
# ~/.local holds other software too: the list says which files are ddpjob's, and is what
# `submit --on` sends to a cluster (cli/remote/remote_install.h).
set -eu
prefix=${MESON_INSTALL_DESTDIR_PREFIX:?run by meson install}
$MESONINTROSPECT --installed "$MESON_BUILD_ROOT" |
    python3 -c 'import json, sys
prefix = sys.argv[1].rstrip("/") + "/"
for path in sorted(json.load(sys.stdin).values()):
    if path.startswith(prefix):
        print(path[len(prefix):])' "$MESON_INSTALL_PREFIX" |
    (cd "$prefix" && xargs -r sha256sum) >"$prefix/share/ddpjob/SHA256SUMS.part"
mv "$prefix/share/ddpjob/SHA256SUMS.part" "$prefix/share/ddpjob/SHA256SUMS"

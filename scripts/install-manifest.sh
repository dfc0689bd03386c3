#!/bin/sh
# meson install's last step: PREFIX/share/ddpjob/SHA256SUMS, the checksums of the files this
# install put in PREFIX ("HASH  bin/ddpjob" lines, `sha256sum -c` from PREFIX). A prefix such as
# ~/.local holds other software too: the list says which files are ddpjob's (the cluster build's
# among them, which has a list of its own that `submit --on` sends: cli/laptop/remote_install.h).
set -eu
prefix=${MESON_INSTALL_DESTDIR_PREFIX:?run by meson install}
$MESONINTROSPECT --installed "$MESON_BUILD_ROOT" |
    python3 -c 'import json, os, sys
prefix = sys.argv[1].rstrip("/") + "/"
destdir_prefix = sys.argv[2]
def files(path):  # a folder installed whole (the cluster build) is its files
    there = destdir_prefix + "/" + path
    if not os.path.isdir(there):
        return [path]
    return [os.path.relpath(os.path.join(d, f), destdir_prefix)
            for d, _, names in os.walk(there) for f in names]
for path in sorted(json.load(sys.stdin).values()):
    if path.startswith(prefix):
        print("\n".join(sorted(files(path[len(prefix):]))))' "$MESON_INSTALL_PREFIX" "$prefix" |
    (cd "$prefix" && xargs -r sha256sum) >"$prefix/share/ddpjob/SHA256SUMS.part"
mv "$prefix/share/ddpjob/SHA256SUMS.part" "$prefix/share/ddpjob/SHA256SUMS"

#!/bin/bash
# Configures (once) and builds into ./build. oneDNN is required here (the install step puts
# libdnnl-dev on the machine): a build that quietly fell back to im2col would test one path twice.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || meson setup build -Donednn=enabled >/dev/null
ninja -C build >/dev/null

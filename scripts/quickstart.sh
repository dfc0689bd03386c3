#!/bin/bash
# The README's first command: install, build, install ddpjob, and show the main job: every
# bundled example spec validated and rendered to its job script (the dry run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
meson install -C build --quiet >/dev/null
for spec in share/examples/*.yaml; do
    echo "===== ddpjob render $spec ====="
    ddpjob validate "$spec"
    ddpjob render "$spec"
    echo
done

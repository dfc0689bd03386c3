#!/bin/bash
# Copies this machine's meson (Debian's Python package) and ninja into .tools/, for a GPU machine
# that has neither, with the static agent built here (musl-tools, which it lacks too): carried
# there with the working tree, tests/gpu/standalone.sh runs meson and ninja, and tests/gpu/all.sh
# hands the static agent to the GPU suite (STATIC_AGENT).
#   tests/gpu/tools.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
mesonbuild=$(/usr/bin/python3 -c 'import mesonbuild, os; print(os.path.dirname(mesonbuild.__file__))')
rm -rf .tools
mkdir -p .tools/bin
cp -r "$mesonbuild" .tools/mesonbuild
find .tools/mesonbuild -name __pycache__ -prune -exec rm -rf {} +
cp "$(command -v ninja)" .tools/bin/ninja
static=$(bash scripts/build-static-agent.sh build-static | tail -n 1)
cp "$static" .tools/bin/ddpjob-agent-static
cat >.tools/meson.py <<'PY'
import sys
from mesonbuild import mesonmain
sys.exit(mesonmain.main())
PY
echo "tools.sh: .tools/ holds meson $(/usr/bin/python3 .tools/meson.py --version) and ninja $(.tools/bin/ninja --version) ($(du -sh .tools | cut -f1))"

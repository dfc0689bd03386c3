#!/bin/bash
. "$SRCDIR/tests/lib/agents.sh"
pass placeholder

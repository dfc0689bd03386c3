# shellcheck shell=bash
# Shared by the bench scripts (sourced).

# The median of the numbers on stdin, one per line ("nan" when there are none).
median() { sort -g | awk '{v[NR] = $1} END {print (NR ? v[int((NR + 1) / 2)] : "nan")}'; }

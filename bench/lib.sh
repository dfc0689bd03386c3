# shellcheck shell=bash
# Shared by the bench scripts (sourced).

# The median of the numbers on stdin, one per line ("nan" when there are none).
median() { sort -g | awk '{v[NR] = $1} END {print (NR ? v[int((NR + 1) / 2)] : "nan")}'; }

# The median seconds of SIZE's runs in FILE (lines of `bytes seconds`).
seconds_of() { awk -v s="$2" '$1 == s {print $2}' "$1" | median; }

# The all_reduce benches' iteration rule: $budget bytes per size, 5 to 200 iterations.
iterations() { local n=$((budget / $1)); echo $((n < 5 ? 5 : n > 200 ? 200 : n)); }

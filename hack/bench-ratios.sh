#!/usr/bin/env bash
# Reads `go test -bench` output and prints Gantry-vs-raw-expr ratios from the same run
# (median of the -count runs for each benchmark).
set -euo pipefail
out=${1:-.bench.out}
median() { grep "^Benchmark$1-" "$out" | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
awk -v c="$(median RenderCached)" -v r="$(median RawExprCached)" \
    -v s="$(median RenderStepSpec20)" -v rs="$(median RawExprStepSpec20)" 'BEGIN {
  print ""; print "expression rendering (ns/op, median of runs)"
  printf "  cached expression:   gantry %8.0f  raw expr %8.0f  ratio %.2fx  (target <= 3x and < 5000 ns)\n", c, r, c / r
  printf "  20-expression spec:  gantry %8.0f  raw expr %8.0f  ratio %.2fx  (%.0f ns per expression)\n", s, rs, s / rs, s / 20
}'

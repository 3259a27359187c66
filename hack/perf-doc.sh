#!/usr/bin/env bash
# Writes docs/performance.md to stdout from the output of `make bench` (its .bench.out and
# .bench-ui.out) and the notes in hack/perf-notes.md: `make perf-doc`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cat <<'HEAD'
# Performance

[Gantry](../README.md) · [all guides](../README.md#guides)

<!-- Written by hack/perf-doc.sh (make perf-doc) from make bench's output: edit hack/perf-notes.md instead. -->

Every figure is a ratio against a baseline measured in the same run. This page holds the last
run's figures, what moves them, and the ranges seen before.

HEAD
cat "$here/perf-notes.md"
echo
echo "## The last run"
echo
files=()
for f in "$@"; do [ -s "$f" ] && files+=("$f"); done
if [ ${#files[@]} -eq 0 ]; then
  echo "No \`make bench\` output was found; run \`make bench\`, then \`make perf-doc\`."
  exit 0
fi
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
mem=$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null || true)
echo "On $(nproc) cores${cpu:+ ($cpu)}${mem:+, $mem of memory}; output of $(date -u -r "${files[0]}" '+%Y-%m-%d %H:%M UTC')."
echo "Benchmarks in the run: $(grep -h '^Benchmark' "${files[@]}" | awk '{print $1}' | sed 's/-[0-9]*$//; s/^Benchmark//' | sort -u | paste -sd, - | sed 's/,/, /g')."
echo
echo '```text'
for f in "${files[@]}"; do bash "$here/bench-ratios.sh" "$f"; done | sed '1{/^$/d}'
echo '```'

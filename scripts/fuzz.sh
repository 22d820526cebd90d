#!/usr/bin/env bash
# Longer libFuzzer run over every target in tests/fuzz: builds them with clang (ASan + UBSan +
# libFuzzer) in ./build-fuzz, then runs each for RUNS executions (default 1,000,000) or
# MAX_TIME seconds per target (default 0: no limit), whichever comes first, growing a corpus per
# target in build-fuzz/fuzz_corpus/<target> from the seeds (tests/fuzz/corpus, ../shared graphs).
# Prints per target: executions, seconds, corpus files, coverage, crashes; exits 1 on a crash
# (the input is saved as build-fuzz/fuzz_artifacts/<target>-crash-*).
# FX_MAX_LEN (default 32768) bounds the inputs of the graph targets (fuzz_fx_graph, fuzz_plan),
# GLOBAL_MAX_LEN (default 8192) those of fuzz_global_plan (the whole-graph plan).
#   RUNS=1000000 MAX_TIME=0 TARGETS="fuzz_spec fuzz_rules" bash scripts/fuzz.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${CTSHARD_FUZZ_BUILD_DIR:-$root/build-fuzz}
runs=${RUNS:-1000000}
max_time=${MAX_TIME:-0}
targets=${TARGETS:-fuzz_spec fuzz_einsum fuzz_fx_graph fuzz_plan fuzz_rules fuzz_table_args fuzz_iopddl fuzz_global_plan}
shared=${CTSHARD_SHARED_DIR:-$root/../shared}
bash "$root/scripts/setup-debian.sh" || exit 1
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCTSHARD_BUILD_FUZZERS=ON \
  -DCTSHARD_BUILD_TESTS=OFF -DCTSHARD_BUILD_BENCHMARKS=OFF -DCTSHARD_BUILD_EXAMPLES=OFF >/dev/null || exit 1
cmake --build "$build" -j "$(nproc)" --target fuzzers || exit 1
mkdir -p "$build/fuzz_artifacts"
status=0
printf '%-16s %12s %8s %8s %8s %8s %8s\n' target executions seconds exec/s corpus cov crashes
for t in $targets; do
  seeds=("$root/tests/fuzz/corpus/${t#fuzz_}")
  max_len=4096
  case $t in
    fuzz_fx_graph|fuzz_plan)
      seeds=("$root/tests/fuzz/corpus/fx_graph")
      for d in "$shared/graphs" "$shared/cases/graphs"; do [ -d "$d" ] && seeds+=("$d"); done
      max_len=${FX_MAX_LEN:-32768} ;;  # longer seeds (real graphs) are cut; 256 KiB runs ~300 exec/s
    fuzz_global_plan)
      seeds=("$root/tests/fuzz/corpus/global_plan" "$root/tests/fuzz/corpus/fx_graph")
      for d in "$shared/cases/graphs"; do [ -d "$d" ] && seeds+=("$d"); done
      max_len=${GLOBAL_MAX_LEN:-8192} ;;  # every input is a whole-graph solve under a 0.5 s deadline
  esac
  corpus="$build/fuzz_corpus/$t"
  mkdir -p "$corpus"
  log="$build/fuzz_artifacts/$t.log"
  start=$(date +%s.%N)
  "$build/tests/fuzz/$t" -runs="$runs" -max_total_time="$max_time" -max_len="$max_len" -timeout=30 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz_artifacts/$t-" "$corpus" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  execs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo "?")
  files=$(find "$corpus" -type f | wc -l)
  crashes=$(find "$build/fuzz_artifacts" -name "$t-*" ! -name '*.log' | wc -l)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
  rate=$(awk -v n="$execs" -v s="$secs" 'BEGIN { if (s > 0 && n ~ /^[0-9]+$/) printf "%.0f", n / s; else print "?" }')
  printf '%-16s %12s %8s %8s %8s %8s %8s\n' "$t" "$execs" "$secs" "$rate" "$files" "$cov" "$crashes"
  if [ $rc -ne 0 ]; then
    status=1
    echo "  $t failed (exit $rc); see $log"
  fi
done
exit $status

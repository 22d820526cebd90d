#!/usr/bin/env bash
# Checks the tree against the repository's .clang-format and .clang-tidy (clang-format /
# clang-tidy 14, Debian 12: scripts/setup-debian.sh installs both). Exits non-zero on any finding.
#   bash scripts/lint.sh [all|format|tidy]      (default all)
# format: clang-format --dry-run -Werror on every C++ file (include/, examples/, tests/,
#         benchmarks/, python/src/; .cpp, .hpp and the .cpp.in templates). A few seconds.
# tidy:   clang-tidy on every project translation unit of a clang build's compile_commands.json:
#         examples/ (tool and api_example), tests/ (static, unit, sim, cli, fuzz), python/src/
#         and one TU per public header (tests/CMakeLists.txt), so every header in include/ is
#         checked; findings in the project's headers count (HeaderFilterRegex). Configures
#         CTSHARD_LINT_BUILD (default ./build-lint) with clang++ when it has no compile_commands.json;
#         nothing is compiled. Runs up to CTSHARD_LINT_JOBS (default nproc) clang-tidy processes.
# CTSHARD_LINT_FILES="a.cpp b.hpp ..." checks only those files (paths relative to the repository
#   root or absolute): format checks each C++ file; tidy checks each translation unit, a public
#   header through its self-contained TU, and skips other headers (their includers cover them).
# CLANG_FORMAT / CLANG_TIDY name the binaries (default clang-format-14 or clang-format, ...).
# Exit status: 0 clean, 1 findings or errors, 77 the needed tool is missing (CTest: skipped).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=${1:-all}
case $mode in all | format | tidy) ;; *) echo "usage: $0 [all|format|tidy]" >&2; exit 2 ;; esac

find_tool() {  # find_tool VAR name: $VAR, else name-14, else name
  local var=$1 name=$2
  if [ -n "${!var:-}" ]; then command -v "${!var}"; return; fi
  command -v "$name-14" || command -v "$name"
}
major_version() { "$1" --version | grep -oE 'version [0-9]+' | head -1 | cut -d' ' -f2; }

# The repository's C++ files under the source folders, relative paths.
cpp_files() {
  local dirs=(include src examples tests benchmarks python/src)
  if command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # tracked and new (not ignored) files that exist
    git ls-files --cached --others --exclude-standard -- "${dirs[@]}" | grep -E '\.(cpp|hpp|cpp\.in)$' | sort -u |
      while read -r f; do [ -f "$f" ] && echo "$f"; done
  else
    find "${dirs[@]}" \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cpp.in' \) -type f | sort
  fi
}
# CTSHARD_LINT_FILES as paths relative to the root (absolute paths under the root shortened).
requested_files() {
  local f
  for f in ${CTSHARD_LINT_FILES}; do
    case $f in "$root"/*) f=${f#"$root"/} ;; esac
    echo "$f"
  done
}

rc=0

run_format() {
  local cf files
  cf=$(find_tool CLANG_FORMAT clang-format) || { echo "lint: clang-format not found (apt-get install clang-format): format check skipped"; return 77; }
  [ "$(major_version "$cf")" = 14 ] || echo "lint: note: $cf is not version 14; the tree is formatted by clang-format 14, other versions may differ"
  if [ -n "${CTSHARD_LINT_FILES:-}" ]; then
    files=$(requested_files | grep -E '\.(cpp|hpp|cpp\.in)$')
  else
    files=$(cpp_files)
  fi
  [ -n "$files" ] || { echo "lint: clang-format: no C++ files to check"; return 0; }
  local count out
  count=$(echo "$files" | wc -l)
  # shellcheck disable=SC2086
  out=$(echo "$files" | xargs "$cf" --dry-run -Werror --style="file:$root/.clang-format" 2>&1)
  if [ -n "$out" ]; then
    echo "$out"
    echo "lint: clang-format: $(echo "$out" | grep -c 'Wclang-format-violations') formatting differences in $(echo "$out" | grep 'Wclang-format-violations' | cut -d: -f1 | sort -u | wc -l) of $count files (fix: clang-format -i FILE)"
    return 1
  fi
  echo "lint: clang-format: $count files clean"
}

run_tidy() {
  local ct build jobs
  ct=$(find_tool CLANG_TIDY clang-tidy) || { echo "lint: clang-tidy not found (apt-get install clang-tidy): tidy check skipped"; return 77; }
  [ "$(major_version "$ct")" = 14 ] || echo "lint: note: $ct is not version 14; the checks are chosen for clang-tidy 14"
  build=${CTSHARD_LINT_BUILD:-$root/build-lint}
  jobs=${CTSHARD_LINT_JOBS:-$(nproc)}
  mkdir -p "$build"
  if [ ! -f "$build/compile_commands.json" ]; then
    local cxx opts=()
    cxx=${CXX:-$(command -v clang++-14 || command -v clang++)} || { echo "lint: clang++ not found (the tidy build uses clang)"; return 1; }
    # the Python extension's TU when nanobind is importable; fuzz targets need only clang to configure
    "${PYTHON:-python3}" -m nanobind --cmake_dir >/dev/null 2>&1 && opts+=(-DCTSHARD_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$(command -v "${PYTHON:-python3}")")
    echo "lint: configuring $build (clang, compile_commands.json; nothing is built)"
    cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_BUILD_TYPE=Release \
      -DCTSHARD_BUILD_BENCHMARKS=OFF -DCTSHARD_BUILD_FUZZERS=ON "${opts[@]}" >"$build/lint-configure.log" 2>&1 ||
      { cat "$build/lint-configure.log"; echo "lint: configuring $build failed"; return 1; }
  else  # configure again: new sources and headers join the globs (and the per-header TUs)
    cmake -S "$root" -B "$build" >"$build/lint-configure.log" 2>&1 || { cat "$build/lint-configure.log"; return 1; }
  fi
  # the one generated header the sources include (the library's embedded default graph)
  mkdir -p "$build/src/generated"
  cmake -DIN="$root/src/report/default_graph.fx.txt" -DOUT="$build/src/generated/default_graph.hpp" -DNAME=default_graph_text \
    -P "$root/cmake/embed_text.cmake" || return 1

  # project TUs: sources under the root (not the nanobind sources the extension compiles) and
  # the per-header TUs generated in the build tree
  local tus
  tus=$("${PYTHON:-python3}" - "$build/compile_commands.json" "$root" "$build" <<'EOF'
import json, os, sys
db, root, build = sys.argv[1], os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
headers = os.path.join(build, "tests", "headers") + os.sep
seen = set()
for e in json.load(open(db)):
    f = os.path.realpath(os.path.join(e.get("directory", ""), e["file"]))
    if (f.startswith(root + os.sep) and not f.startswith(build + os.sep)) or f.startswith(headers):
        seen.add(f)
print("\n".join(sorted(seen)))
EOF
  ) || return 1
  if [ -n "${CTSHARD_LINT_FILES:-}" ]; then
    local f want=() id
    while read -r f; do
      [ -n "$f" ] || continue
      case $f in
        include/ctshard/*.hpp)  # a public header: its self-contained TU
          id=$(echo "${f#include/}" | sed 's/[^A-Za-z0-9_]/_/g')
          want+=("$build/tests/headers/$id.cpp") ;;
        *.cpp) want+=("$(realpath -m "$f")") ;;
        *.hpp) echo "lint: clang-tidy: $f is checked through the translation units that include it" ;;
      esac
    done < <(requested_files)
    tus=$(printf '%s\n' "${want[@]}" | grep -Fx -f <(echo "$tus") || true)
    [ ${#want[@]} -eq 0 ] || [ -n "$tus" ] || echo "lint: clang-tidy: none of CTSHARD_LINT_FILES is a translation unit of $build"
  fi
  [ -n "$tus" ] || { echo "lint: clang-tidy: no translation units to check"; return 0; }

  local logs count failed findings
  logs=$(mktemp -d)
  count=$(echo "$tus" | wc -l)
  [ "$jobs" -le "$count" ] || jobs=$count
  echo "lint: clang-tidy: $count translation units, $jobs at a time"
  # one log per TU; --config-file: a generated TU under the build tree has no .clang-tidy above it
  export LINT_CT=$ct LINT_BUILD=$build LINT_ROOT=$root LINT_LOGS=$logs
  echo "$tus" | xargs -d '\n' -P "$jobs" -I{} sh -c \
    '"$LINT_CT" -p "$LINT_BUILD" --config-file="$LINT_ROOT/.clang-tidy" --quiet "$1" >"$LINT_LOGS/$(echo "$1" | tr / _).log" 2>&1 ||
     echo "$1" >>"$LINT_LOGS/failed"' sh {}
  failed=0
  [ -f "$logs/failed" ] && failed=$(wc -l <"$logs/failed")
  findings=$(cat "$logs"/*.log | grep -cE '^[^ ].*:[0-9]+:[0-9]+: (warning|error): ' | tr -d ' ')
  if [ "$failed" -gt 0 ] || [ "$findings" -gt 0 ]; then
    # a finding in a header is reported by every TU that includes it: print each block once
    cat "$logs"/*.log | awk '
      function flush() { if (key != "" && !(key in seen)) { seen[key] = 1; printf "%s", block; n++ } key = ""; block = "" }
      /^[^ ].*:[0-9]+:[0-9]+: (warning|error): / { flush(); key = $0 }
      /^[0-9]+ (warnings?|errors?)( and [0-9]+ (warnings?|errors?))? generated\.$/ || /^Suppressed [0-9]+ warnings/ || /^Use -header-filter/ ||
        /warnings? treated as errors?/ || /^Error while processing/ { next }
      { if (key != "") block = block $0 "\n"; else print }
      END { flush(); printf "lint: clang-tidy: %d distinct findings\n", n }'
    echo "lint: clang-tidy: $failed of $count translation units with findings or errors:"
    sed "s|^$root/|  |; s|^/|  /|" "$logs/failed" 2>/dev/null
    rm -rf "$logs"
    return 1
  fi
  rm -rf "$logs"
  echo "lint: clang-tidy: $count translation units clean"
}

if [ "$mode" = all ] || [ "$mode" = format ]; then
  run_format
  r=$?
  [ "$mode" = format ] && exit $r
  [ $r -eq 0 ] || [ $r -eq 77 ] || rc=1
  [ $r -eq 77 ] && rc=1  # `all` needs both tools
fi
if [ "$mode" = all ] || [ "$mode" = tidy ]; then
  run_tidy
  r=$?
  [ "$mode" = tidy ] && exit $r
  [ $r -eq 0 ] || rc=1
fi
exit $rc

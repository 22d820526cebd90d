#!/usr/bin/env bash
# Installs the Debian 12 packages ctshard builds with (root, or sudo when available).
# Skips apt entirely when everything is already installed.
set -euo pipefail
packages=(g++ cmake make libboost-dev catch2 libbenchmark-dev nlohmann-json3-dev libcli11-dev xtensor-dev zlib1g-dev python3 python3-pip
          coinor-cbc toulbar2)  # the last two: the global planner's tests compare with CBC and toulbar2
# clang (second compiler, libFuzzer targets: libclang-rt-14-dev holds libFuzzer and the sanitizer
# runtimes on Debian 12), clang-format and clang-tidy (the .clang-format / .clang-tidy configs)
packages+=(clang libclang-rt-14-dev clang-format clang-tidy)
# The Python extension needs the headers of the interpreter it is built for; Debian's python3
# gets them from python3-dev (a pyenv or venv interpreter brings its own).
py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null || ! "$py" -c "import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" 2>/dev/null; then
  packages+=(python3-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

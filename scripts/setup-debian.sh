#!/usr/bin/env bash
# Installs the Debian 12 packages ctshard builds with (root, or sudo when available).
# Skips apt entirely when everything is already installed.
set -euo pipefail
packages=(g++ cmake make libboost-dev catch2 libbenchmark-dev nlohmann-json3-dev libcli11-dev xtensor-dev python3)
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

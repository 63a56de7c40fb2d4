#!/usr/bin/env bash
# Install Debian packages for the test scripts: `apt_install.sh NAME...`.
# Needs root (or password-less sudo); the caller names what it found missing.
set -euo pipefail
[ $# -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null; then
    sudo=(sudo -n)
else
    echo "$(basename "${CALLER:-$0}"): root needed to apt-get install $*" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null

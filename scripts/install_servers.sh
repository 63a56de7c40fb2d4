#!/usr/bin/env bash
# Install what the store tests start on loopback: Debian's redis-server and, if
# the image lacks it, PostgreSQL. Does nothing when both are there; otherwise
# needs root (or password-less sudo) for apt-get. The tests start and stop the
# servers themselves (contextwindow.store.servers).
set -euo pipefail
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && ! command -v initdb >/dev/null; then
    missing+=(postgresql)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
CALLER="$0" bash "$(dirname "$0")/apt_install.sh" "${missing[@]}"

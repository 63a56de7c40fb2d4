#!/usr/bin/env bash
# Install what the report and terminal tests drive: Debian's chromium (the
# HTML report is opened headless, tests/report/test_browser.py) and tmux (the
# CLI on a real terminal, tests/test_cli_tty.py). Does nothing when both are
# there; otherwise needs root (or password-less sudo) for apt-get.
set -euo pipefail
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v tmux >/dev/null || missing+=(tmux)
[ ${#missing[@]} -eq 0 ] && exit 0
CALLER="$0" bash "$(dirname "$0")/apt_install.sh" "${missing[@]}"

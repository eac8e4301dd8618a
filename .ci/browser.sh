#!/usr/bin/env bash
# The browser one test renders `track report` in: Debian's chromium, installed when missing.
#   bash .ci/browser.sh install   installs it (apt) unless `chromium` is on PATH
set -euo pipefail
case "${1:-install}" in
  install)
    if command -v chromium >/dev/null 2>&1; then
      exit 0
    fi
    sudo=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
      sudo=sudo
    fi
    echo "browser: installing Debian's chromium (one test renders a report in it)" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium; } >/dev/null \
      || { echo "browser: could not install chromium; the report's browser test will fail" >&2; exit 1; }
    ;;
  *)
    echo "usage: bash .ci/browser.sh install" >&2
    exit 2
    ;;
esac

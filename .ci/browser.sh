#!/usr/bin/env bash
# The browser tests render `track report` and drive `track view` in: Debian's chromium and
# chromium-driver (its WebDriver server), installed when missing.
#   bash .ci/browser.sh install   installs them (apt) unless `chromium` and `chromedriver` are on PATH
set -euo pipefail
case "${1:-install}" in
  install)
    if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
      exit 0
    fi
    sudo=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
      sudo=sudo
    fi
    echo "browser: installing Debian's chromium and chromium-driver (the browser tests use them)" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver; } >/dev/null \
      || { echo "browser: could not install chromium; the browser tests will fail" >&2; exit 1; }
    ;;
  *)
    echo "usage: bash .ci/browser.sh install" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# The JUnit test validates `track export junit` against the Jenkins/Ant XSD with xmllint:
# Debian's libxml2-utils, installed when missing.
#   bash .ci/xmllint.sh install   installs it (apt) unless `xmllint` is on PATH
set -euo pipefail
case "${1:-install}" in
  install)
    if command -v xmllint >/dev/null 2>&1; then
      exit 0
    fi
    sudo=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
      sudo=sudo
    fi
    echo "xmllint: installing Debian's libxml2-utils (the JUnit test validates against an XSD with it)" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libxml2-utils; } >/dev/null \
      || { echo "xmllint: could not install libxml2-utils; the JUnit schema test will fail" >&2; exit 1; }
    ;;
  *)
    echo "usage: bash .ci/xmllint.sh install" >&2
    exit 2
    ;;
esac

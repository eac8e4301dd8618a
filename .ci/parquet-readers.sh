#!/usr/bin/env bash
# The Parquet readers and writers of the end-to-end tests, from PyPI, in a virtual environment
# of their own (nothing installed into the system Python): DuckDB and polars read `track export
# parquet`; DuckDB, pyarrow and polars write the data files, in every compression, that
# `cases: {from: …}` must read (tests/it/parquet.rs).
#
#   bash .ci/parquet-readers.sh install   creates the venv and installs them; idempotent
#   bash .ci/parquet-readers.sh python    prints the venv's python (exit 3 if not installed)
#
# The venv is target/parquet-readers/venv (target/ is ignored by git), or
# $TRACK_PARQUET_READERS_VENV. The test (tests/it/parquet.rs) finds it the same way.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly DUCKDB=duckdb==2.0.0
readonly POLARS=polars==2.1.0
readonly PYARROW=pyarrow==26.0.1
VENV=${TRACK_PARQUET_READERS_VENV:-target/parquet-readers/venv}
readonly STAMP=$VENV/.installed

log() { printf 'parquet-readers: %s\n' "$*" >&2; }

installed() {
  [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$DUCKDB $POLARS $PYARROW" ] \
    && "$VENV/bin/python" -c 'import duckdb, polars, pyarrow' >/dev/null 2>&1
}

case "${1:-install}" in
  install)
    if installed; then
      exit 0
    fi
    python=$(command -v python3 || command -v python || true)
    [ -n "$python" ] || { log "no python3 on PATH: cannot make the venv"; exit 1; }
    log "installing $DUCKDB, $POLARS and $PYARROW from PyPI into $VENV"
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$python" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$DUCKDB" "$POLARS" "$PYARROW" \
      || { log "pip could not install $DUCKDB $POLARS $PYARROW"; exit 1; }
    "$VENV/bin/python" -c 'import duckdb, polars, pyarrow' \
      || { log "the installed readers do not import"; exit 1; }
    echo "$DUCKDB $POLARS $PYARROW" >"$STAMP"
    ;;
  python)
    installed || { log "not installed: bash .ci/parquet-readers.sh install"; exit 3; }
    echo "$(cd "$VENV" && pwd)/bin/python"
    ;;
  *)
    echo "usage: bash .ci/parquet-readers.sh install|python" >&2
    exit 2
    ;;
esac

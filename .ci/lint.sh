#!/usr/bin/env bash
# CI's formatting and lint gate (.ci/run runs it first): `cargo fmt --check`, then clippy with
# warnings as errors. A toolchain without rustfmt or clippy fails, saying which and how to add
# it: CI never passes unchecked. (tests/it/ci.rs runs it against a stand-in cargo.)
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
cargo fmt --version >/dev/null 2>&1 || missing+=(rustfmt)
cargo clippy --version >/dev/null 2>&1 || missing+=(clippy)
if ((${#missing[@]})); then
    echo "ci: ${missing[*]} not installed: formatting and lints cannot be checked;" \
        "install with \`rustup component add ${missing[*]}\` (rust-toolchain.toml names them)" >&2
    exit 1
fi
cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings

#!/usr/bin/env bash
# Builds the user guide (docs/, an mdBook) into docs/book/: `bash .ci/book.sh`, then open
# docs/book/index.html. mdbook comes from crates.io, built once with cargo into target/mdbook/
# (its search, without the watch and serve features) and reused while it is the version below.
# .ci/run runs this after the lints; links and anchors are checked by a test
# (tests/it/book.rs), which needs no mdbook.
set -euo pipefail
cd "$(dirname "$0")/.."
# 0.5.4 needs Rust 1.88 or newer; track's floor is 1.95 (Cargo.toml's rust-version).
version=0.5.4
root=target/mdbook
mdbook="$root/bin/mdbook"
if [ "$("$mdbook" --version 2>/dev/null)" != "mdbook v$version" ]; then
    echo "book: installing mdbook $version from crates.io into $root/" >&2
    cargo install mdbook --locked --version "$version" --no-default-features --features search \
        --root "$root" --target-dir "$root/build" --quiet
    rm -rf "$root/build"    # the binary is all that is kept
fi
"$mdbook" build docs

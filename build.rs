//! Build-time facts the crate embeds:
//! - rebuild when a migration is added or changed (refinery embeds `migrations/` at compile
//!   time);
//! - `TRACK_VERSION`, what `track --version` prints: the package version and, when built from
//!   a git checkout of this crate, its commit (short hash, `-dirty` when the tree had changes,
//!   and the commit's date), as `0.1.0 (2106aa2 2026-11-27)`. Without git or outside a
//!   checkout (a crates.io tarball) the version alone.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let version = match checkout_commit(&manifest_dir) {
        Some(commit) => format!("{version} ({commit})"),
        None => version,
    };
    println!("cargo:rustc-env=TRACK_VERSION={version}");
}

/// `HASH[-dirty] DATE` of the checkout at `dir`, or None when `dir` is not the top of a git
/// work tree (or git is missing). Tells cargo to run this again when HEAD moves (a commit, a
/// checkout) or the sources change (which may make the tree dirty or clean).
fn checkout_commit(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    // A tarball unpacked inside some other repository is not a checkout of this crate.
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch])?);
    }
    watched.push(git(&["rev-parse", "--git-path", "packed-refs"])?);
    for path in watched {
        // Relative to `dir` (git's answer) and only if it exists: cargo reruns a build script
        // that watches a missing file every time.
        let path = dir.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    for source in ["src", "prompts", "Cargo.toml", "Cargo.lock"] {
        if dir.join(source).exists() {
            println!("cargo:rerun-if-changed={source}");
        }
    }
    let commit = git(&["log", "-1", "--format=%h %cs"])?;
    let (hash, date) = commit.split_once(' ')?;
    let dirty = !git(&["status", "--porcelain"])?.is_empty();
    Some(format!(
        "{hash}{} {date}",
        if dirty { "-dirty" } else { "" }
    ))
}

//! Rebuild when a migration is added or changed: refinery embeds `migrations/` at compile time.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}

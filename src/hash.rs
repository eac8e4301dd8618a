//! Content hashing: the sha256 that addresses blobs and keys the call cache.
//!
//! A leaf: it depends on no other module of track, so the store and the LLM layer can both use
//! it without depending on each other.

use sha2::{Digest, Sha256};

/// Lowercase hex sha256 of `bytes`, the address of a blob and the form of every cache key.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

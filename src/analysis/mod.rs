//! Analysis shared by every kind: statistics (Wilson, McNemar, bootstrap, κ, α) and the
//! pairing of two runs' items that diffs are built on. Each kind's own frames and summaries
//! are in its folder. Nothing here reads SQL or prints.

pub mod agreement;
pub mod diff;
pub mod stats;

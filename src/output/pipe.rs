//! A closed pipe (`track … | head`): success, not a failure.

/// Whether `error` is a closed pipe (`track … | head`): not a failure, the reader has what it
/// wanted.
pub fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

//! The progress bar of a run's calls, on stderr.

/// A progress bar on stderr of the calls sent (sent/to send, elapsed, a message, ETA): no
/// wider than the terminal, the bar taking what the text leaves; hidden when `show` is false,
/// and by indicatif itself when stderr is not a terminal.
pub(crate) fn progress_bar(len: usize, show: bool) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} {elapsed} {wide_bar} {pos}/{len} sent · {msg} · ETA {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}

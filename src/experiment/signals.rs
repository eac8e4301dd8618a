//! Signals during a run. The first SIGINT, SIGTERM or SIGHUP asks the run to stop sending:
//! calls in flight land and are recorded, then the run ends `interrupted`. A second signal
//! ends the process at once (after its handler has marked the run).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// A signal that stops a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP (the terminal went away).
    Hangup,
}

impl Signal {
    /// The exit status of a process ended by this signal, as shells report it (128 + n).
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => crate::exit::SIGINT,
            Self::Terminate => crate::exit::SIGTERM,
            Self::Hangup => crate::exit::SIGHUP,
        }
    }

    /// The signal's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
        }
    }

    fn code(self) -> u8 {
        match self {
            Self::Interrupt => 1,
            Self::Terminate => 2,
            Self::Hangup => 3,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::Interrupt),
            2 => Some(Self::Terminate),
            3 => Some(Self::Hangup),
            _ => None,
        }
    }
}

/// What the signal handler shares with the run: the flag the executor checks before sending,
/// and the first signal received.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU8>,
}

impl Signals {
    /// Set once a run should stop sending.
    pub(crate) fn stop_flag(&self) -> &Arc<AtomicBool> {
        &self.stop
    }

    /// The first signal received, if any.
    pub(crate) fn received(&self) -> Option<Signal> {
        Signal::from_code(self.received.load(Ordering::SeqCst))
    }

    /// Records `signal`; true when it is the first.
    fn receive(&self, signal: Signal) -> bool {
        self.stop.store(true, Ordering::SeqCst);
        self.received
            .compare_exchange(0, signal.code(), Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Listens for SIGINT, SIGTERM and SIGHUP on the current tokio runtime: the first calls
    /// `on_first`, any later one `on_second` (which is expected to end the process).
    pub(crate) fn listen(
        &self,
        on_first: impl Fn(Signal) + Send + 'static,
        on_second: impl Fn(Signal) + Send + 'static,
    ) -> std::io::Result<tokio::task::JoinHandle<()>> {
        let signals = self.clone();
        let mut stream = SignalStream::new()?;
        Ok(tokio::spawn(async move {
            loop {
                let Some(signal) = stream.next().await else {
                    return;
                };
                if signals.receive(signal) {
                    on_first(signal);
                } else {
                    on_second(signal);
                }
            }
        }))
    }
}

/// Stops a command that has no async runtime of its own (an export) at a clean point: its
/// loop checks [`Interruption::received`] between batches and returns what it has made whole.
/// A second signal ends the process at once.
#[derive(Debug, Clone, Default)]
pub struct Interruption {
    signals: Signals,
}

impl Interruption {
    /// Listens for SIGINT, SIGTERM and SIGHUP on a thread of its own from now until the process
    /// ends; `Err` when the handlers cannot be installed.
    pub(crate) fn listen() -> std::io::Result<Self> {
        let signals = Signals::default();
        let listening = signals.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("track-signals".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let second = |signal: Signal| std::process::exit(i32::from(signal.exit_code()));
                    match listening.listen(|_| {}, second) {
                        Ok(handle) => {
                            let _ = ready_tx.send(Ok(()));
                            let _ = handle.await;
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Self { signals }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(std::io::Error::other(
                "the signal thread ended before listening",
            )),
        }
    }

    /// The first signal received, if any.
    pub(crate) fn received(&self) -> Option<Signal> {
        self.signals.received()
    }
}

/// The signals that stop a run, as a stream.
struct SignalStream {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
}

impl SignalStream {
    #[cfg(unix)]
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    #[cfg(unix)]
    async fn next(&mut self) -> Option<Signal> {
        tokio::select! {
            s = self.interrupt.recv() => s.map(|()| Signal::Interrupt),
            s = self.terminate.recv() => s.map(|()| Signal::Terminate),
            s = self.hangup.recv() => s.map(|()| Signal::Hangup),
        }
    }

    #[cfg(not(unix))]
    fn new() -> std::io::Result<Self> {
        Ok(Self {})
    }

    #[cfg(not(unix))]
    async fn next(&mut self) -> Option<Signal> {
        tokio::signal::ctrl_c().await.ok()?;
        Some(Signal::Interrupt)
    }
}

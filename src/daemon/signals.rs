//! Signals as messages: the handler (`sys::signal_pipe`) writes each
//! signal's number into a pipe, and this task turns them into
//! [`Signal`]s for the owner (SIGHUP: reload; SIGTERM, SIGINT: stop).

use crate::chan::{Signal, Tx};

/// Starts the task; a pipe that cannot be made is logged (the daemon then
/// stops only by SIGKILL, which procd sends after its timeout).
pub(super) fn start(events: Tx<Signal>) {
    let fd = match crate::sys::signal_pipe() {
        Ok(fd) => fd,
        Err(e) => {
            log::error!("signals: {e}");
            return;
        }
    };
    crate::rt::spawn(async move {
        let Ok(pipe) = async_io::Async::new(std::fs::File::from(fd)) else {
            return;
        };
        let mut pipe = pipe;
        let mut b = [0u8; 16];
        loop {
            use smol::io::AsyncReadExt;
            match pipe.read(&mut b).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    for s in &b[..n] {
                        if events.send(Signal(i32::from(*s))).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    })
    .detach();
}

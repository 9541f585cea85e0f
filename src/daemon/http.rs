//! The local HTTP endpoint as the daemon runs it: started from the run
//! config, replaced by a reload that changes an `api.*` setting (but
//! `ubus_socket`), and kept on its socket when only its limits or token
//! change. A new address that cannot be bound keeps the old server with
//! its old settings, and the reload says so.

use crate::api::control::ControlHandle;
use crate::api::http::Limits;
use crate::config::run::ApiRun;
use std::net::SocketAddr;
use std::time::Duration;

/// The running HTTP API: its listener (kept so that a reload that changes
/// only the timeouts or the token serves on the same socket) and its task.
pub(super) struct Http {
    listen: SocketAddr,
    listener: smol::net::TcpListener,
    _task: smol::Task<()>,
}

/// The server's limits; 0 turns one off (`api.*_timeout`).
fn limits(api: &ApiRun) -> Limits {
    let off = |d: Option<Duration>| d.unwrap_or(Duration::ZERO);
    Limits {
        read_header_timeout: off(api.read_header_timeout),
        read_timeout: off(api.read_timeout),
        write_timeout: off(api.write_timeout),
        idle_timeout: off(api.idle_timeout),
    }
}

/// Binds `listen`; an error says why it cannot be bound (logged: the
/// endpoint is for humans and monitoring, routing goes on without it).
fn bind(listen: SocketAddr) -> Result<smol::net::TcpListener, String> {
    match crate::api::http::listen(listen) {
        Ok(l) => {
            log::info!("api: listening on http://{listen}");
            Ok(l)
        }
        Err(e) => {
            log::error!("api: cannot listen on {listen}: {e}");
            Err(format!("cannot listen ({e})"))
        }
    }
}

/// Serves the API on `l` with the limits and token of `api`.
fn serve(api: &ApiRun, listen: SocketAddr, ctl: ControlHandle, l: smol::net::TcpListener) -> Http {
    let token = api.token.as_deref().map(std::sync::Arc::from);
    if let Some(w) = l
        .local_addr()
        .ok()
        .and_then(|a| crate::api::access::exposure_warning(a, token.is_some()))
    {
        log::warn!("{w}");
    }
    let opts = crate::api::routes::Options {
        token,
        ..crate::api::routes::Options::default()
    };
    let task = crate::rt::spawn(crate::api::http::serve(
        l.clone(),
        crate::api::routes::handler_with(ctl, opts),
        limits(api),
    ));
    Http {
        listen,
        listener: l,
        _task: task,
    }
}

/// The endpoint of `api` (None: off, or the address cannot be bound).
pub(super) fn start(api: &ApiRun, ctl: ControlHandle) -> Option<Http> {
    let listen = api.listen?;
    bind(listen).ok().map(|l| serve(api, listen, ctl, l))
}

/// Where the running server listens (None: no server).
pub(super) fn listening(h: Option<&Http>) -> Option<SocketAddr> {
    h.map(|h| h.listen)
}

/// A reload that changed an `api.*` setting other than `ubus_socket`, or
/// one that finds the server not where the config puts it (an earlier new
/// address could not be bound): the server is replaced. A new address is
/// bound before the old server goes, so a failed bind keeps the old one,
/// with all its old settings (the new token or timeouts may have been
/// meant for the new address only); the same address keeps its socket.
/// Connections accepted before go on with the old settings until they close
/// (at most `idle_timeout` between requests). The second value says what
/// was not applied, and why, for the reload's record.
pub(super) fn restart(
    old: Option<Http>,
    api: &ApiRun,
    ctl: ControlHandle,
) -> (Option<Http>, Option<String>) {
    match (old, api.listen) {
        (Some(h), Some(listen)) if h.listen == listen => {
            let Http {
                listener, _task, ..
            } = h;
            drop(_task);
            (Some(serve(api, listen, ctl, listener)), None)
        }
        (Some(h), Some(listen)) => match bind(listen) {
            Ok(l) => {
                drop(h);
                (Some(serve(api, listen, ctl, l)), None)
            }
            Err(e) => {
                let stays = format!(
                    "api.listen {listen}: {e}; the API stays on http://{} with its old settings",
                    h.listen
                );
                (Some(h), Some(stays))
            }
        },
        (Some(h), None) => {
            log::info!("api: stopped listening on http://{}", h.listen);
            (None, None)
        }
        (None, Some(listen)) => match bind(listen) {
            Ok(l) => (Some(serve(api, listen, ctl, l)), None),
            Err(e) => (
                None,
                Some(format!("api.listen {listen}: {e}; the API is off")),
            ),
        },
        (None, None) => (None, None),
    }
}

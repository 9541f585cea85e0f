//! The ubus object `pathosd` as the daemon runs it: the client registered
//! on ubusd's socket and the task answering its calls; and, when
//! `api.ubus_socket` is off under procd's watchdog, a client of ubusd's
//! default socket that only pings the watchdog.

use crate::api::control::ControlHandle;
use crate::config::run::ApiRun;

/// Registers on `api.ubus_socket` (None: ubus is off) and serves the
/// methods through `ctl`.
pub(super) fn start(api: &ApiRun, ctl: ControlHandle) -> Option<crate::ubus::UbusHandle> {
    let path = api.ubus_socket.clone()?;
    let ucfg = crate::ubus::UbusConfig {
        socket_path: path,
        ..crate::ubus::UbusConfig::default()
    };
    let (client, handle, requests) = crate::ubus::UbusClient::new(ucfg);
    crate::rt::spawn(client.run()).detach();
    crate::rt::spawn(crate::api::ubus_methods::serve_ubus(requests, ctl)).detach();
    Some(handle)
}

/// A client of ubusd's default socket with no object of its own, for the
/// watchdog's pings when `api.ubus_socket` is off: procd restarts an
/// instance that arms the watchdog and never pings it.
pub(super) fn start_watchdog_only() -> crate::ubus::UbusHandle {
    let ucfg = crate::ubus::UbusConfig {
        object: String::new(),
        methods: Vec::new(),
        ..crate::ubus::UbusConfig::default()
    };
    let (client, handle, _requests) = crate::ubus::UbusClient::new(ucfg);
    crate::rt::spawn(client.run()).detach();
    handle
}

/// Starts watching procd's service events and netifd's interface events
/// when some VIP names a service or an interface and they are not watched
/// yet (`running`: what is); returns what is watched then. A VIP that
/// names none costs nothing: no connection, no task. The watch uses
/// `api.ubus_socket`, or ubusd's default socket when the API is off.
pub(super) fn watch_needs<R: Clone>(
    state: &pathosd_core::daemon::state::State<R>,
    api: &ApiRun,
    ctl: &ControlHandle,
    running: Option<(bool, bool)>,
) -> (bool, bool) {
    let vips = state.engine().vips().iter().filter_map(|s| s.full_config());
    let (mut services, mut interfaces) = (false, false);
    for v in vips {
        services |= !v.needs.services.is_empty();
        interfaces |= !v.needs.interfaces.is_empty();
    }
    let have = running.unwrap_or((false, false));
    // One watch covers both once started; a reload that names a new kind
    // starts a second one for it.
    let want = (services && !have.0, interfaces && !have.1);
    if want == (false, false) {
        return have;
    }
    let socket = api
        .ubus_socket
        .clone()
        .unwrap_or_else(|| crate::ubus::msg::UBUS_UNIX_SOCKET.into());
    let cfg = crate::ubus::watch::WatchConfig::new(socket, want.0, want.1);
    let ctl = ctl.clone();
    crate::rt::spawn(crate::ubus::watch::watch(cfg, move |ev| ctl.need(ev))).detach();
    (have.0 || want.0, have.1 || want.1)
}

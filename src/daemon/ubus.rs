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

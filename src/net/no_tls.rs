//! Stands in for `tls.rs` in a build without the `tls` feature: an h2
//! configuration cannot be made (the caller says which option needed it),
//! so none exists, and code that would use one cannot be reached.

use crate::config::target::Host;
use std::net::SocketAddr;

/// No value: there is no TLS client in this build.
#[derive(Debug, Clone)]
pub(crate) enum H2Config {}

pub(crate) fn h2_config(_ca: Option<&str>, _insecure: bool) -> Result<H2Config, String> {
    Err(crate::NEEDS_TLS.to_string())
}

pub(crate) fn connect_h2<S>(
    cfg: &H2Config,
    _server_name: &Host,
    _sock: S,
    _addr: SocketAddr,
) -> Result<S, String> {
    match *cfg {}
}

//! Stands in for `https.rs` in a build without the `tls` feature: the
//! client of an https target or an https:// proxy cannot be made (the error
//! names what needed TLS), so none exists and its methods cannot be reached.

use crate::config::target::HttpTarget;
use crate::config::{HttpCheck, HttpMethod};
use std::time::Duration;

/// No value: there is no TLS client in this build.
#[derive(Debug)]
pub(super) enum Https {}

impl Https {
    pub(super) fn new(c: &HttpCheck, t: &HttpTarget, _timeout: Duration) -> Result<Https, String> {
        match &t.proxy {
            Some(p) if !t.https => Err(format!("proxy {} {}", p.at, crate::NEEDS_TLS)),
            _ => Err(format!("https ({}) {}", c.url, crate::NEEDS_TLS)),
        }
    }

    pub(super) async fn fetch(
        &self,
        _method: HttpMethod,
        _url: &str,
        _headers: &[(String, String)],
        _want_body: bool,
    ) -> Result<(u16, Vec<u8>), String> {
        match *self {}
    }

    pub(super) fn failed(&self) {
        match *self {}
    }
}

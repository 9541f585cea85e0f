//! http (not yet implemented).
use crate::check::result::CheckResult;
use std::time::Instant;

#[derive(Debug)]
pub struct HttpProbe;

impl HttpProbe {
    pub fn new(
        c: &crate::config::HttpCheck,
        _tls: bool,
        _vip: &crate::bgp::types::Prefix,
        _t: std::time::Duration,
    ) -> Result<HttpProbe, String> {
        let _ = c;
        Err("http checks are not implemented yet".into())
    }
    pub fn what(&self) -> String {
        "http".into()
    }
    pub async fn run(&self, _deadline: Instant) -> CheckResult {
        CheckResult::fail("not implemented")
    }
}

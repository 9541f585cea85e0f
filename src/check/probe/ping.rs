//! ping (not yet implemented).
use crate::check::result::CheckResult;
use std::time::Instant;

#[derive(Debug)]
pub struct PingProbe;

impl PingProbe {
    pub fn new(
        c: &crate::config::PingCheck,
        _vip: &crate::bgp::types::Prefix,
    ) -> Result<PingProbe, String> {
        let _ = c;
        Err("ping checks are not implemented yet".into())
    }
    pub fn what(&self) -> String {
        "ping".into()
    }
    pub async fn run(&self, _deadline: Instant) -> CheckResult {
        CheckResult::fail("not implemented")
    }
}

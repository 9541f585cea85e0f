//! dns (not yet implemented).
use crate::check::result::CheckResult;
use std::time::Instant;

#[derive(Debug)]
pub struct DnsProbe;

impl DnsProbe {
    pub fn new(
        c: &crate::config::DnsCheck,
        _vip: &crate::bgp::types::Prefix,
    ) -> Result<DnsProbe, String> {
        let _ = c;
        Err("dns checks are not implemented yet".into())
    }
    pub fn what(&self) -> String {
        "dns".into()
    }
    pub async fn run(&self, _deadline: Instant) -> CheckResult {
        CheckResult::fail("not implemented")
    }
}

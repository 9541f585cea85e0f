//! grpc (not yet implemented).
use crate::check::result::CheckResult;
use std::time::Instant;

#[derive(Debug)]
pub struct GrpcProbe;

impl GrpcProbe {
    pub fn new(
        c: &crate::config::GrpcCheck,
        _vip: &crate::bgp::types::Prefix,
    ) -> Result<GrpcProbe, String> {
        let _ = c;
        Err("grpc checks are not implemented yet".into())
    }
    pub fn what(&self) -> String {
        "grpc".into()
    }
    pub async fn run(&self, _deadline: Instant) -> CheckResult {
        CheckResult::fail("not implemented")
    }
}

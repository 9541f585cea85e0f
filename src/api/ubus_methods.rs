//! The methods of the ubus object `pathosd`, answered through the same
//! [`ControlHandle`] as HTTP, and the payloads of the `pathosd.vip` /
//! `pathosd.peer` events.
//!
//! | method | arguments | reply |
//! |---|---|---|
//! | `status` | — | the `/status` document |
//! | `vip` | `name` | one VIP as in `/status` |
//! | `check` | `vip`, `check`? | the HTTP trigger's answer |
//! | `drain` | `vip`, `enable` | `{vip, drain, state}` |
//! | `reload` | — | `{reloaded: true}` |

use super::control::{ApiError, ControlHandle};
use super::routes::{bounded, trigger_serialized, DEFAULT_OWNER_TIMEOUT};
use super::status;
use crate::ubus::{UbusRequest, UbusStatus};
use serde_json::{json, Value};
use smol::channel::Receiver;
use smol::future::FutureExt;
use smol::lock::Semaphore;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// Calls answered at once; further ones stay in the client's bounded request
/// queue, whose overflow the client answers UNKNOWN_ERROR. A slow trigger
/// therefore never holds up `status`.
pub const CONCURRENT_CALLS: usize = 8;

fn ubus_error(e: &ApiError) -> UbusStatus {
    match e {
        ApiError::NotFound(_) => UbusStatus::NotFound,
        ApiError::BadRequest(_) => UbusStatus::InvalidArgument,
        ApiError::Unavailable(_) => UbusStatus::UnknownError,
    }
}

fn str_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, UbusStatus> {
    match args.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(UbusStatus::InvalidArgument),
    }
}

/// blobmsg has no real bool: `ubus call` sends INT8 (a bool here), but other
/// callers send 0/1 as a wider integer.
fn bool_arg(args: &Value, name: &str) -> Result<bool, UbusStatus> {
    match args.get(name) {
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => Err(UbusStatus::InvalidArgument),
        },
        _ => Err(UbusStatus::InvalidArgument),
    }
}

/// Answers one call.
pub async fn call(
    ctl: &ControlHandle,
    method: &str,
    args: &Value,
    limit: Duration,
) -> Result<Value, UbusStatus> {
    match method {
        "status" => bounded(limit, ctl.snapshot())
            .await
            .map(|s| status::status_json(&s))
            .map_err(|e| ubus_error(&e)),
        "vip" => {
            let name = str_arg(args, "name")?;
            let s = bounded(limit, ctl.snapshot())
                .await
                .map_err(|e| ubus_error(&e))?;
            s.vips
                .iter()
                .find(|v| v.name == name)
                .map(status::vip_json)
                .ok_or(UbusStatus::NotFound)
        }
        "check" => {
            let vip = str_arg(args, "vip")?;
            let check = match args.get("check") {
                None | Some(Value::Null) => None,
                Some(_) => Some(str_arg(args, "check")?),
            };
            log::info!(
                "ubus: check trigger for VIP {vip:?}{}",
                check.map_or(String::new(), |c| format!(" (check {c:?})"))
            );
            bounded(limit, trigger_serialized(ctl, vip, check))
                .await
                .map(|o| status::trigger_json(&o))
                .map_err(|e| ubus_error(&e))
        }
        "drain" => {
            let vip = str_arg(args, "vip")?;
            let enable = bool_arg(args, "enable")?;
            log::info!(
                "ubus: drain {} for VIP {vip:?}",
                if enable { "on" } else { "off" }
            );
            bounded(limit, ctl.drain(vip, enable))
                .await
                .map(|state| json!({"vip": vip, "drain": enable, "state": state}))
                .map_err(|e| ubus_error(&e))
        }
        "reload" => {
            let r = ctl
                .reload()
                .or(async {
                    smol::Timer::after(limit).await;
                    Err(vec!["daemon did not answer".to_string()])
                })
                .await;
            match r {
                Ok(()) => Ok(json!({"reloaded": true})),
                Err(errors) => {
                    // A ubus error status carries no data: the reasons go to the log.
                    for e in &errors {
                        log::warn!("ubus: reload failed: {e}");
                    }
                    Err(UbusStatus::InvalidArgument)
                }
            }
        }
        _ => Err(UbusStatus::MethodNotFound),
    }
}

/// Serves calls from [`crate::ubus::UbusClient`] until its request channel
/// closes, with up to [`CONCURRENT_CALLS`] in flight.
pub async fn serve_ubus(requests: Receiver<UbusRequest>, ctl: ControlHandle) {
    serve_ubus_with(requests, ctl, DEFAULT_OWNER_TIMEOUT).await
}

pub async fn serve_ubus_with(requests: Receiver<UbusRequest>, ctl: ControlHandle, limit: Duration) {
    let slots = Arc::new(Semaphore::new(CONCURRENT_CALLS));
    loop {
        let permit = slots.acquire_arc().await;
        let Ok(req) = requests.recv().await else {
            return;
        };
        let ctl = ctl.clone();
        smol::spawn(async move {
            let r = call(&ctl, &req.method, &req.args, limit).await;
            req.reply.send(r);
            drop(permit);
        })
        .detach();
    }
}

/// Payload of `pathosd.vip`, sent on every VIP state change.
pub fn vip_event(vip: &str, prefix: &str, from: &str, to: &str, reason: &str) -> Value {
    json!({"vip": vip, "prefix": prefix, "from": from, "to": to, "reason": reason})
}

/// Payload of `pathosd.peer`, sent when a BGP session changes state. `reason`
/// is the error or NOTIFICATION that ended a session, empty otherwise.
pub fn peer_event(peer: &str, address: IpAddr, from: &str, to: &str, reason: &str) -> Value {
    json!({
        "peer": peer,
        "address": address.to_string(),
        "from": from,
        "to": to,
        "reason": reason,
    })
}

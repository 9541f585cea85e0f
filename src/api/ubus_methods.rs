//! The methods of the ubus object `pathosd`, answered through the same
//! [`ControlHandle`] as HTTP, and the payloads of the `pathosd.vip` /
//! `pathosd.peer` events.
//!
//! | method | arguments | reply |
//! |---|---|---|
//! | `status` | `offset`, `limit`, `search`, `state`, `health`, `compact` (all optional) | the `/status` document with one page of the VIPs, their counts and `next_offset` |
//! | `vip` | `name` | one VIP as in `/status` |
//! | `check` | `vip`, `check` (optional) | the HTTP trigger's answer |
//! | `drain` | `vip`, `enable` | `{vip, drain, state}` |
//! | `reload` | — | `{reloaded: true}` and the reload's record (`last_reload`'s members) |
//! | `validate` | `uci` (rpcd's `uci get` values) or `config` (v1 JSON) | `{valid, errors}` |

use super::control::{ApiError, ControlHandle, Quoted};
use super::routes::DEFAULT_OWNER_TIMEOUT;
use super::status::{self, Obj, StatusQuery};
use crate::config::load::{load_str, load_uci_values, Format};
use crate::logging::utc_timestamp;
use crate::ubus::blob::{put_blobmsg, BlobMsgType, BlobValue, Open};
use crate::ubus::client::ReplyData;
use crate::ubus::msg::TableBody;
use crate::ubus::{Requests, UbusStatus};
use pathosd_core::api::model::Scope;
use pathosd_core::api::stream::{Job, What};
use serde_json::Value;
use smol::future::FutureExt;
use smol::lock::Semaphore;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Reads (`status`, `vip`) in flight at once. They have their own slots, so
/// no number of running triggers can hold them up; the owner answers them
/// from its state without waiting on any check.
pub(crate) const CONCURRENT_READS: usize = 16;

/// Other calls (`check`, `drain`, `reload`) in flight at once. A call
/// arriving when all are taken is answered UNKNOWN_ERROR at once rather than
/// queued. A call the ubus client stopped waiting for (it answered TIMEOUT,
/// or the connection dropped) gives its slot back at that moment.
pub const CONCURRENT_CALLS: usize = 8;

fn ubus_error(e: &ApiError) -> UbusStatus {
    match e {
        ApiError::NotFound(_) => UbusStatus::NotFound,
        ApiError::BadRequest(_) => UbusStatus::InvalidArgument,
        // ubus has no "busy" status; 9 is what a full request queue gets too.
        ApiError::Unavailable(_) | ApiError::Busy { .. } => UbusStatus::UnknownError,
    }
}

/// How often refused calls are reported in the log.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

fn is_read(method: &str) -> bool {
    matches!(method, "status" | "vip")
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

/// Answers one call. Caller-supplied names are logged only once the daemon
/// found the VIP, and cut to [`crate::api::control::LOGGED_NAME_CHARS`].
pub async fn call(
    ctl: &ControlHandle,
    method: &str,
    args: &Value,
    limit: Duration,
) -> Result<ReplyData, UbusStatus> {
    match method {
        "status" => {
            let q = status_query(args)?;
            status_page(ctl, q, limit).await.map(ReplyData::Encoded)
        }
        _ => answer(ctl, method, args, limit).await.map(ReplyData::Json),
    }
}

/// The methods but `status`, answered with a JSON object.
async fn answer(
    ctl: &ControlHandle,
    method: &str,
    args: &Value,
    limit: Duration,
) -> Result<Value, UbusStatus> {
    match method {
        "validate" => validate(args),
        "vip" => {
            let name = str_arg(args, "name")?;
            let s = ctl
                .snapshot(Scope::Vip(name.to_string()), limit)
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
            let r = ctl.trigger(vip, check, limit).await;
            let what = format!(
                "check trigger for VIP {}{}",
                Quoted(vip),
                check.map_or(String::new(), |c| format!(" (check {})", Quoted(c)))
            );
            match &r {
                Ok(o) => log::info!("ubus: {what}: {}", o.state),
                // Unknown names are not logged; refusals (a flood of them is
                // what the rate limit is for) only at debug level.
                Err(e @ ApiError::NotFound(_)) | Err(e @ ApiError::BadRequest(_)) => {
                    log::debug!("ubus: check trigger refused: {}", e.kind())
                }
                Err(e @ ApiError::Busy { .. }) => log::debug!("ubus: {what} not run: {}", e.kind()),
                Err(e) => log::info!("ubus: {what} not run: {}", e.kind()),
            }
            r.map(|o| status::trigger_json(&o))
                .map_err(|e| ubus_error(&e))
        }
        "drain" => {
            let vip = str_arg(args, "vip")?;
            let enable = bool_arg(args, "enable")?;
            let r = ctl.drain(vip, enable, limit).await;
            let onoff = if enable { "on" } else { "off" };
            match &r {
                Ok(state) => log::info!("ubus: drain {onoff} for VIP {}: {state}", Quoted(vip)),
                Err(e @ ApiError::NotFound(_)) => {
                    log::debug!("ubus: drain request refused: {}", e.kind())
                }
                Err(e) => log::info!("ubus: drain {onoff} for VIP {}: {}", Quoted(vip), e.kind()),
            }
            r.map(|state| pathosd_core::api::router::drain_json(vip, enable, state))
                .map_err(|e| ubus_error(&e))
        }
        "reload" => {
            // Neither "not answered" nor "stopping" is a rejected file:
            // the init script takes INVALID_ARGUMENT for "the daemon
            // rejected the file" and says so, which a start right after a
            // stop (an opkg upgrade, while the old daemon drains) must not
            // print. Not answered in time: TIMEOUT, the request stays with
            // the owner (a SIGHUP would be a second reload). Stopping:
            // UNKNOWN_ERROR, as every other request then.
            let answer = crate::net::until(Instant::now() + limit, ctl.reload()).await;
            let r = match answer {
                Some(Ok(r)) => r,
                Some(Err(e)) => {
                    log::info!("ubus: reload not taken: {e}");
                    return Err(ubus_error(&e));
                }
                None => {
                    log::warn!("ubus: reload: the daemon did not answer within {limit:?}");
                    return Err(UbusStatus::Timeout);
                }
            };
            match r {
                // The caller (the init script) learns the outcome here: a
                // valid file applied in part says what was not applied.
                Ok(record) => {
                    let mut v = status::reload_json(&record);
                    if let Value::Object(m) = &mut v {
                        m.insert("reloaded".into(), true.into());
                    }
                    Ok(v)
                }
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

/// The arguments of `status`; an unknown one or a bad value is
/// INVALID_ARGUMENT (logged at debug level: a caller's mistake).
fn status_query(args: &Value) -> Result<StatusQuery, UbusStatus> {
    let mut q = StatusQuery::default();
    if let Value::Object(m) = args {
        // rpcd and uhttpd's ubus handler add the caller's session to every
        // call they forward (LuCI's calls all have it): not an argument.
        for (k, v) in m.iter().filter(|(k, _)| *k != "ubus_rpc_session") {
            q.set(k, v).map_err(|e| {
                log::debug!("ubus: status: {e}");
                UbusStatus::InvalidArgument
            })?;
        }
    }
    Ok(q)
}

/// The most a `status` reply holds, about: a page ends early when its next
/// VIP would take it over, and `next_offset` says where the next one
/// starts. ubusd carries up to 1 MiB (about 700 VIPs with their checks),
/// but the reply is the daemon's memory while it is made and written: a
/// page of 100 VIPs with a few checks each fits, one of 1,000 is cut.
pub(crate) const STATUS_REPLY_BYTES: usize = 384 * 1024;
/// Room kept in a reply for the message header and its other attributes.
const REPLY_MARGIN: usize = 16 * 1024;
/// Views of VIPs the owner gives at a time.
const VIEWS_AT_ONCE: usize = 16;

/// `status`: the `/status` document with as many VIPs of the page as fit
/// [`STATUS_REPLY_BYTES`], encoded as blobmsg while the owner gives their
/// views a few at a time (`api::stream`), so that neither the page's views
/// nor its values are ever held together: a reply costs the reply.
async fn status_page(
    ctl: &ControlHandle,
    q: StatusQuery,
    limit: Duration,
) -> Result<TableBody, UbusStatus> {
    let job = Box::new(Job::new(What::Views(q.clone()), VIEWS_AT_ONCE));
    let mut job = ctl.render(job, limit).await.map_err(|e| ubus_error(&e))?;
    let (Some(head), Some(page)) = (job.head().cloned(), job.page().cloned()) else {
        return Err(UbusStatus::UnknownError);
    };
    // The document's members but the VIPs, as the blobmsg table encodes
    // them (serde_json's maps are key-sorted: those before `vips` go
    // first); their size is about what the page will add to the VIPs'.
    let members = |shown: usize| -> Vec<(String, BlobValue)> {
        match status::page_json(&head, &page, Value::Array(Vec::new()), shown) {
            Value::Object(m) => m
                .iter()
                .filter(|(k, _)| *k != "vips")
                .map(|(k, v)| (k.clone(), BlobValue::from_json(v)))
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut base = Vec::new();
    for (k, v) in members(0) {
        put_blobmsg(&mut base, &k, &v).map_err(|_| UbusStatus::UnknownError)?;
    }
    let room = STATUS_REPLY_BYTES.saturating_sub(REPLY_MARGIN + base.len());
    drop(base);
    let mut body = TableBody::with_capacity(STATUS_REPLY_BYTES);
    let open =
        Open::new(body.buf(), "vips", BlobMsgType::Array).map_err(|_| UbusStatus::UnknownError)?;
    let start = body.len();
    let mut shown = 0usize;
    'page: loop {
        for v in job.take_views() {
            let before = body.len();
            let j = status::page_vip_json(&v, &q);
            put_blobmsg(body.buf(), "", &BlobValue::from_json(&j))
                .map_err(|_| UbusStatus::UnknownError)?;
            // The first VIP of a page is always taken, so paging moves on.
            if shown > 0 && body.len() - start > room {
                body.truncate(before);
                break 'page;
            }
            shown += 1;
        }
        if job.done() {
            break;
        }
        job = ctl.render(job, limit).await.map_err(|e| ubus_error(&e))?;
        if job.failed().is_some() {
            return Err(UbusStatus::UnknownError);
        }
    }
    open.close(body.buf())
        .map_err(|_| UbusStatus::UnknownError)?;
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for (k, v) in members(shown) {
        let to = if k.as_str() < "vips" {
            &mut before
        } else {
            &mut after
        };
        put_blobmsg(to, &k, &v).map_err(|_| UbusStatus::UnknownError)?;
    }
    body.prepend(&before);
    body.buf().extend_from_slice(&after);
    Ok(body)
}

/// `validate`: the daemon's own loading and validation, as a reload would
/// run it, on a configuration the caller hands over instead of the file:
/// LuCI's staged sections (`uci`, as rpcd's `uci get` returns them) or a v1
/// JSON object (`config`). Either way the answer is a reply, not an error
/// status, so that the errors reach the caller.
fn validate(args: &Value) -> Result<Value, UbusStatus> {
    let lookup = &crate::config_file::env;
    let loaded = match (args.get("uci"), args.get("config")) {
        (Some(v @ Value::Object(_)), None) => load_uci_values(v, lookup),
        (None, Some(v @ Value::Object(_))) => load_str(&v.to_string(), Some(Format::Json), lookup),
        _ => return Err(UbusStatus::InvalidArgument),
    };
    let errors: Vec<Value> = match loaded {
        Ok(_) => Vec::new(),
        Err(errs) => errs.iter().map(|e| e.to_string().into()).collect(),
    };
    log::debug!("ubus: validate: {} errors", errors.len());
    Ok(Obj::default()
        .put("valid", errors.is_empty().into())
        .put("errors", errors.into())
        .done())
}

/// Serves calls from [`crate::ubus::UbusClient`] until its request channel
/// closes: up to [`CONCURRENT_READS`] reads and [`CONCURRENT_CALLS`] other
/// calls in flight, each class in its own slots. The loop never waits for a
/// slot, so a call is never queued behind another one.
pub async fn serve_ubus(requests: Requests, ctl: ControlHandle) {
    serve_ubus_with(requests, ctl, DEFAULT_OWNER_TIMEOUT).await
}

pub(crate) async fn serve_ubus_with(requests: Requests, ctl: ControlHandle, limit: Duration) {
    let reads = Arc::new(Semaphore::new(CONCURRENT_READS));
    let calls = Arc::new(Semaphore::new(CONCURRENT_CALLS));
    // Refusals are counted and logged at most once per REFUSAL_LOG_EVERY, so a
    // flood of calls cannot flood the log (logd's ring is small on a router).
    let mut refused: u32 = 0;
    let mut last_told: Option<Instant> = None;
    while let Ok(req) = requests.recv().await {
        let slots = if is_read(&req.method) { &reads } else { &calls };
        let Some(permit) = slots.try_acquire_arc() else {
            refused = refused.saturating_add(1);
            if last_told.is_none_or(|t| t.elapsed() >= REFUSAL_LOG_EVERY) {
                log::warn!("ubus: too many calls in flight: refused {refused} (answered 9)");
                refused = 0;
                last_told = Some(Instant::now());
            }
            req.reply.send(Err(UbusStatus::UnknownError));
            continue;
        };
        let ctl = ctl.clone();
        crate::rt::spawn(async move {
            let r = call(&ctl, &req.method, &req.args, limit)
                .or(async {
                    // The client answered TIMEOUT or lost the caller: stop
                    // waiting, which frees the slot (a trigger run it
                    // started still answers its other callers).
                    req.reply.abandoned().await;
                    Err(UbusStatus::Timeout)
                })
                .await;
            drop(permit);
            req.reply.answer(r);
        })
        .detach();
    }
}

/// Payload of `pathosd.vip`, sent on every VIP state change. `time` is when
/// the change happened (events queued while ubusd was away arrive later).
pub fn vip_event(
    vip: &str,
    prefix: &str,
    from: &str,
    to: &str,
    reason: &str,
    time: SystemTime,
) -> Value {
    Obj::default()
        .put("vip", vip.into())
        .put("prefix", prefix.into())
        .put("from", from.into())
        .put("to", to.into())
        .put("reason", reason.into())
        .put("time", utc_timestamp(time).into())
        .done()
}

/// Payload of `pathosd.peer`, sent when a BGP session changes state. `reason`
/// is the error or NOTIFICATION that ended a session, empty otherwise; `time`
/// as in [`vip_event`].
pub fn peer_event(
    peer: &str,
    address: IpAddr,
    from: &str,
    to: &str,
    reason: &str,
    time: SystemTime,
) -> Value {
    Obj::default()
        .put("peer", peer.into())
        .put("address", address.to_string().into())
        .put("from", from.into())
        .put("to", to.into())
        .put("reason", reason.into())
        .put("time", utc_timestamp(time).into())
        .done()
}

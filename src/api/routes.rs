//! Routing of the local HTTP endpoint onto [`ControlHandle`]:
//!
//! | method | path | answer |
//! |---|---|---|
//! | GET | `/` | HTML status page |
//! | GET | `/healthz` | 200 while the owner task answers |
//! | GET | `/readyz` | 200, or 503 naming the required peers not Established |
//! | GET | `/status` | the whole state as JSON |
//! | GET | `/metrics` | Prometheus text |
//! | GET | `/api/v1/vips/{name}` | one VIP as in `/status` |
//! | POST | `/api/v1/vips/{name}/check[?check=NAME]` | run the checks now |
//! | POST, DELETE | `/api/v1/vips/{name}/drain` | drain / undrain at runtime |
//!
//! HEAD is served wherever GET is. POST and DELETE must pass
//! [`access::check`] (Host, Origin, a non-simple request, `api.token`).
//! Every wait for the owner task is bounded,
//! so a stuck owner costs a connection slot for at most `owner_timeout`.

use super::control::{ApiError, ControlHandle, TriggerOutcome};
use super::http::{Handler, Request, Response};
use super::{access, metrics, page, status};
use serde_json::json;
use smol::future::FutureExt;
use smol::lock::Mutex as AsyncMutex;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a request waits for the owner task (including, for a trigger,
/// the wait behind earlier triggers of the same VIP and the checks' own run
/// time) before it is answered 503.
pub const DEFAULT_OWNER_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct Options {
    pub owner_timeout: Duration,
    /// `api.token`: what mutating requests must send as `Authorization:
    /// Bearer`; `None` requires none.
    pub token: Option<Arc<str>>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            owner_timeout: DEFAULT_OWNER_TIMEOUT,
            token: None,
        }
    }
}

pub fn handler(ctl: ControlHandle) -> Handler {
    handler_with(ctl, Options::default())
}

pub fn handler_with(ctl: ControlHandle, opts: Options) -> Handler {
    Arc::new(move |req: Request| {
        let ctl = ctl.clone();
        let opts = opts.clone();
        Box::pin(async move { route(&ctl, &opts, req).await })
    })
}

/// Runs `f` for at most `limit`; the owner not answering in time is 503.
pub async fn bounded<T>(
    limit: Duration,
    f: impl Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    f.or(async {
        smol::Timer::after(limit).await;
        Err(ApiError::Unavailable(format!(
            "daemon did not answer within {} s",
            limit.as_secs_f64()
        )))
    })
    .await
}

/// One async lock per VIP with a trigger in flight or waiting. Entries are
/// removed when their last user leaves, so names sent by clients (including
/// unknown ones) do not accumulate.
static TRIGGER_GATES: Mutex<BTreeMap<String, Arc<AsyncMutex<()>>>> = Mutex::new(BTreeMap::new());

struct Gate {
    vip: String,
    lock: Option<Arc<AsyncMutex<()>>>,
}

impl Gate {
    fn enter(vip: &str) -> Gate {
        let lock = TRIGGER_GATES.lock().ok().map(|mut m| {
            m.entry(vip.to_string())
                .or_insert_with(|| Arc::new(AsyncMutex::new(())))
                .clone()
        });
        Gate {
            vip: vip.to_string(),
            lock,
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.lock = None;
        if let Ok(mut m) = TRIGGER_GATES.lock() {
            // Clones are only made under this lock, so the count is exact.
            if m.get(&self.vip).is_some_and(|l| Arc::strong_count(l) == 1) {
                m.remove(&self.vip);
            }
        }
    }
}

/// Triggers the checks of `vip` with at most one trigger per VIP in flight,
/// whether it came from HTTP or ubus; later ones wait their turn.
pub async fn trigger_serialized(
    ctl: &ControlHandle,
    vip: &str,
    check: Option<&str>,
) -> Result<TriggerOutcome, ApiError> {
    let gate = Gate::enter(vip);
    let _turn = match &gate.lock {
        Some(l) => Some(l.lock().await),
        // Only a poisoned gate table (a panic elsewhere) gets here.
        None => None,
    };
    ctl.trigger(vip, check).await
}

fn api_error(e: &ApiError) -> Response {
    let code = match e {
        ApiError::NotFound(_) => 404,
        ApiError::BadRequest(_) => 400,
        ApiError::Unavailable(_) => 503,
    };
    Response::error(code, &e.to_string())
}

/// Decodes %XX escapes of a path segment or query value; None if malformed
/// or not UTF-8.
pub fn pct_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            // from_str_radix alone would take a sign ("%+1").
            if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

enum Route<'a> {
    Page,
    Healthz,
    Readyz,
    Status,
    Metrics,
    Vip(&'a str),
    Check(&'a str),
    Drain(&'a str),
}

impl Route<'_> {
    fn allow(&self) -> &'static str {
        match self {
            Route::Check(_) => "POST",
            Route::Drain(_) => "POST, DELETE",
            _ => "GET, HEAD",
        }
    }
}

fn parse(path: &str) -> Option<Route<'_>> {
    Some(match path {
        "/" => Route::Page,
        "/healthz" => Route::Healthz,
        "/readyz" => Route::Readyz,
        "/status" => Route::Status,
        "/metrics" => Route::Metrics,
        _ => {
            let rest = path.strip_prefix("/api/v1/vips/")?;
            match rest.split_once('/') {
                _ if rest.is_empty() || rest.starts_with('/') => return None,
                None => Route::Vip(rest),
                Some((name, "check")) => Route::Check(name),
                Some((name, "drain")) => Route::Drain(name),
                Some(_) => return None,
            }
        }
    })
}

static DENIED_LOG: super::http::LogLimit = super::http::LogLimit::new();

async fn route(ctl: &ControlHandle, opts: &Options, req: Request) -> Response {
    let Some(r) = parse(&req.path) else {
        return Response::error(404, "not found");
    };
    let allowed = match req.method.as_str() {
        "GET" | "HEAD" => r.allow().contains("GET"),
        m => r.allow().split(", ").any(|a| a == m),
    };
    if !allowed {
        return Response::error(405, "method not allowed").with_header("Allow", r.allow());
    }
    if matches!(r, Route::Check(_) | Route::Drain(_)) {
        if let Err(d) = access::check(&req.headers, req.local, opts.token.as_deref()) {
            if let Some(n) = DENIED_LOG.allow(Duration::from_secs(10)) {
                log::warn!(
                    "api: refused {} {} from {}: {} {}{}",
                    req.method,
                    access::quoted(&req.path),
                    req.peer,
                    d.status,
                    d.message,
                    super::http::more_since(n)
                );
            }
            let resp = Response::error(d.status, &d.message);
            return match d.challenge {
                Some(c) => resp.with_header("WWW-Authenticate", c),
                None => resp,
            };
        }
    }
    let t = opts.owner_timeout;
    let snapshot = || bounded(t, ctl.snapshot());
    match r {
        Route::Page => match snapshot().await {
            Ok(s) => Response::new(200, "text/html; charset=utf-8", page::render(&s)),
            Err(e) => api_error(&e),
        },
        // Liveness: the owner task answers, i.e. the daemon runs with a loaded
        // config. BGP peers do not matter here (that is /readyz).
        Route::Healthz => match snapshot().await {
            Ok(_) => Response::json(200, &json!({"status": "ok"})),
            Err(e) => Response::json(
                503,
                &json!({"status": "unavailable", "error": e.to_string()}),
            ),
        },
        Route::Readyz => match snapshot().await {
            Ok(s) => {
                let (ready, v) = status::ready_json(&s);
                Response::json(if ready { 200 } else { 503 }, &v)
            }
            Err(e) => api_error(&e),
        },
        Route::Status => match snapshot().await {
            Ok(s) => Response::json(200, &status::status_json(&s)),
            Err(e) => api_error(&e),
        },
        Route::Metrics => match snapshot().await {
            Ok(s) => Response::new(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                metrics::render(&s),
            ),
            Err(e) => api_error(&e),
        },
        Route::Vip(raw) => {
            let Some(name) = pct_decode(raw) else {
                return Response::error(400, "bad VIP name encoding");
            };
            match snapshot().await {
                Ok(s) => match s.vips.iter().find(|v| v.name == name) {
                    Some(v) => Response::json(200, &status::vip_json(v)),
                    None => Response::error(404, &format!("VIP not found: {name}")),
                },
                Err(e) => api_error(&e),
            }
        }
        Route::Check(raw) => {
            let Some(name) = pct_decode(raw) else {
                return Response::error(400, "bad VIP name encoding");
            };
            let check = match req.query_param("check").map(pct_decode) {
                None => None,
                Some(Some(c)) if !c.is_empty() => Some(c),
                Some(_) => return Response::error(400, "bad check name"),
            };
            log::info!(
                "api: check trigger for VIP {name:?}{} from {}",
                check
                    .as_ref()
                    .map_or(String::new(), |c| format!(" (check {c:?})")),
                req.peer
            );
            match bounded(t, trigger_serialized(ctl, &name, check.as_deref())).await {
                Ok(o) => Response::json(200, &status::trigger_json(&o)),
                Err(e) => api_error(&e),
            }
        }
        Route::Drain(raw) => {
            let Some(name) = pct_decode(raw) else {
                return Response::error(400, "bad VIP name encoding");
            };
            let enable = req.method == "POST";
            log::info!(
                "api: drain {} for VIP {name:?} from {}",
                if enable { "on" } else { "off" },
                req.peer
            );
            match bounded(t, ctl.drain(&name, enable)).await {
                Ok(state) => {
                    Response::json(200, &json!({"vip": name, "drain": enable, "state": state}))
                }
                Err(e) => api_error(&e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::control::Control;

    #[test]
    fn percent_decoding() {
        assert_eq!(pct_decode("web").as_deref(), Some("web"));
        assert_eq!(pct_decode("a%20b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(pct_decode("%C3%A9").as_deref(), Some("\u{e9}"));
        for bad in ["%", "%4", "%zz", "%FF", "a%+1"] {
            assert_eq!(pct_decode(bad), None, "{bad}");
        }
    }

    fn kind(p: &str) -> Option<String> {
        parse(p).map(|r| match r {
            Route::Page => "page".into(),
            Route::Healthz => "healthz".into(),
            Route::Readyz => "readyz".into(),
            Route::Status => "status".into(),
            Route::Metrics => "metrics".into(),
            Route::Vip(n) => format!("vip {n}"),
            Route::Check(n) => format!("check {n}"),
            Route::Drain(n) => format!("drain {n}"),
        })
    }

    #[test]
    fn routing_table() {
        assert_eq!(kind("/").as_deref(), Some("page"));
        assert_eq!(kind("/metrics").as_deref(), Some("metrics"));
        assert_eq!(kind("/api/v1/vips/web").as_deref(), Some("vip web"));
        assert_eq!(kind("/api/v1/vips/web/check").as_deref(), Some("check web"));
        assert_eq!(
            kind("/api/v1/vips/w%2Fb/drain").as_deref(),
            Some("drain w%2Fb")
        );
        for p in [
            "",
            "/status/",
            "/api/v1/vips/",
            "/api/v1/vips//check",
            "/api/v1/vips/web/",
            "/api/v1/vips/web/check/",
            "/api/v1/vips/web/other",
        ] {
            assert_eq!(kind(p), None, "{p}");
        }
    }

    /// The gate table is emptied once triggers finish, also for unknown VIPs
    /// and for callers that gave up (a dropped future).
    #[test]
    fn gates_do_not_accumulate() {
        let (tx, rx) = smol::channel::bounded(8);
        let ctl = ControlHandle::new(tx);
        smol::block_on(async {
            let owner = smol::spawn(async move {
                while let Ok(Control::Trigger { vip, reply, .. }) = rx.recv().await {
                    let _ =
                        reply.try_send(Err(ApiError::NotFound(format!("VIP not found: {vip}"))));
                }
            });
            for i in 0..50 {
                let name = format!("gate-test-{i}");
                let r = trigger_serialized(&ctl, &name, None).await;
                assert_eq!(r, Err(ApiError::NotFound(format!("VIP not found: {name}"))));
            }
            // A caller that times out while waiting behind another.
            let first = Gate::enter("gate-test-held");
            let held = first.lock.as_ref().map(|l| l.try_lock_arc());
            let r = bounded(
                Duration::from_millis(20),
                trigger_serialized(&ctl, "gate-test-held", None),
            )
            .await;
            assert!(matches!(r, Err(ApiError::Unavailable(_))));
            drop(held);
            drop(first);
            drop(ctl);
            owner.await;
        });
        let m = TRIGGER_GATES.lock().unwrap();
        assert!(
            !m.keys().any(|k| k.starts_with("gate-test-")),
            "{:?}",
            m.keys()
        );
    }
}

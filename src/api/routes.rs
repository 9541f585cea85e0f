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

use super::control::{ApiError, ControlHandle, Quoted};
use super::http::{Handler, Request, Response};
use super::{access, metrics, page, status};
use serde_json::json;
use smol::future::FutureExt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How long a request waits for the owner task (including, for a trigger,
/// the checks' own run time) before it is answered 503.
pub(crate) const DEFAULT_OWNER_TIMEOUT: Duration = Duration::from_secs(60);

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

fn api_error(e: &ApiError) -> Response {
    let code = match e {
        ApiError::NotFound(_) => 404,
        ApiError::BadRequest(_) => 400,
        ApiError::Unavailable(_) => 503,
        ApiError::Busy { retry_after, .. } => {
            // RFC 9110 §10.2.3: Retry-After in whole seconds; round up.
            let secs = retry_after.as_millis().div_ceil(1000).max(1);
            return Response::error(429, &e.to_string())
                .with_header("Retry-After", secs.to_string());
        }
    };
    Response::error(code, &e.to_string())
}

/// Decodes %XX escapes of a path segment or query value; None if malformed
/// or not UTF-8.
pub(crate) fn pct_decode(s: &str) -> Option<String> {
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
            let r = bounded(t, ctl.trigger(&name, check.as_deref())).await;
            // Logged once the daemon has looked the names up, and cut short.
            let what = format!(
                "check trigger for VIP {}{} from {}",
                Quoted(&name),
                check
                    .as_deref()
                    .map_or(String::new(), |c| format!(" (check {})", Quoted(c))),
                req.peer
            );
            match r {
                Ok(o) => {
                    log::info!("api: {what}: {}", o.state);
                    Response::json(200, &status::trigger_json(&o))
                }
                Err(e) => {
                    // Unknown names are not logged; refusals (a flood of them
                    // is what the rate limit is for) only at debug level.
                    match e {
                        ApiError::NotFound(_) => {
                            log::debug!("api: trigger from {} refused: {}", req.peer, e.kind())
                        }
                        ApiError::Busy { .. } => log::debug!("api: {what} not run: {}", e.kind()),
                        _ => log::info!("api: {what} not run: {}", e.kind()),
                    }
                    api_error(&e)
                }
            }
        }
        Route::Drain(raw) => {
            let Some(name) = pct_decode(raw) else {
                return Response::error(400, "bad VIP name encoding");
            };
            let enable = req.method == "POST";
            let onoff = if enable { "on" } else { "off" };
            match bounded(t, ctl.drain(&name, enable)).await {
                Ok(state) => {
                    log::info!(
                        "api: drain {onoff} for VIP {} from {}: {state}",
                        Quoted(&name),
                        req.peer
                    );
                    Response::json(200, &json!({"vip": name, "drain": enable, "state": state}))
                }
                Err(e) => {
                    if matches!(e, ApiError::NotFound(_)) {
                        log::debug!("api: drain request from {} refused: {}", req.peer, e.kind());
                    } else {
                        log::info!(
                            "api: drain {onoff} for VIP {} from {}: {}",
                            Quoted(&name),
                            req.peer,
                            e.kind()
                        );
                    }
                    api_error(&e)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

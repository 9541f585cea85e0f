//! Routing of the local HTTP endpoint, pure: a request in, either the answer
//! or what to ask the owner task; the owner's reply in, the answer and the
//! line to log. The driver (`pathosd::api::routes`) does the asking, with
//! its bounded wait, and the logging, with its rate limit.
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

use super::model::{Scope, Snapshot};
use super::stream::What;
use super::{access, status, Quoted, TriggerOutcome};
use serde_json::Value;
use status::Obj;
use std::net::SocketAddr;

/// A request as the HTTP server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub peer: SocketAddr,
    /// The address the client connected to (this end of the connection).
    pub local: SocketAddr,
}

impl Request {
    /// The value of query parameter `name` (no percent-decoding: names and
    /// check identifiers are plain).
    fn query_param(&self, name: &str) -> Option<&str> {
        self.query.as_deref()?.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then_some(v)
        })
    }
}

/// An answer, before the HTTP server writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn json(status: u16, v: &serde_json::Value) -> Response {
        // Value's `{:#}`: the one pretty printer on flash (the daemon's Display
        // of a Value has it anyway), the bytes to_vec_pretty writes.
        let mut body = format!("{v:#}").into_bytes();
        body.push(b'\n');
        Response::new(status, "application/json", body)
    }

    pub fn error(status: u16, msg: &str) -> Response {
        Response::json(status, &Obj::default().put("error", msg.into()).done())
    }

    pub(crate) fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

/// Why the owner refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Unknown VIP or check (HTTP 404, ubus NOT_FOUND).
    NotFound(String),
    /// Bad arguments (HTTP 400, ubus INVALID_ARGUMENT).
    BadRequest(String),
    /// The daemon is stopping or busy (HTTP 503, ubus UNKNOWN_ERROR).
    Unavailable(String),
    /// A trigger refused by the per-VIP rate limit or because another one of
    /// the VIP runs with a different check selection: try again after
    /// `retry_after` (HTTP 429 with Retry-After, ubus UNKNOWN_ERROR).
    Busy {
        message: String,
        retry_after: std::time::Duration,
    },
}

impl ApiError {
    /// What went wrong, without the caller-supplied names the message may
    /// hold: for log lines.
    pub fn kind(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "not found",
            ApiError::BadRequest(_) => "bad request",
            ApiError::Unavailable(_) => "daemon unavailable",
            ApiError::Busy { .. } => "busy (rate limit or another trigger running)",
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::NotFound(m) | ApiError::BadRequest(m) | ApiError::Unavailable(m) => {
                f.write_str(m)
            }
            ApiError::Busy { message, .. } => f.write_str(message),
        }
    }
}

/// The level of a [`LogLine`] (the driver maps it onto its logger's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Warn,
    Info,
    Debug,
}

/// A line for the driver to log about a request's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub level: Level,
    pub text: String,
    /// A line any client can provoke at will (a refused change request):
    /// the driver rate-limits it and appends how many it left out.
    pub limited: bool,
}

impl LogLine {
    fn new(level: Level, text: String) -> LogLine {
        LogLine {
            level,
            text,
            limited: false,
        }
    }
}

/// A small read-only endpoint, answered from a [`Snapshot`] (the large
/// ones are streamed: [`Step::Stream`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum View {
    Healthz,
    Readyz,
    /// One VIP, by its (percent-decoded) name.
    Vip(String),
}

impl View {
    /// The VIPs the answer shows, and so the owner's snapshot holds.
    pub fn scope(&self) -> Scope {
        match self {
            View::Healthz | View::Readyz => Scope::Summary,
            View::Vip(name) => Scope::Vip(name.clone()),
        }
    }
}

/// What the driver does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Answered without the owner task (not found, bad method or name,
    /// access refused), maybe with a line to log.
    Answer(Response, Option<LogLine>),
    /// Ask the owner for a snapshot, then [`answer_snapshot`].
    Snapshot(View),
    /// Ask the owner for the answer a piece at a time (`api::stream`):
    /// `/`, `/status`, `/metrics`, whose size grows with the VIPs.
    Stream(What),
    /// Ask the owner to run the VIP's checks (or only `check`), then
    /// [`answer_trigger`].
    Trigger { vip: String, check: Option<String> },
    /// Ask the owner to drain the VIP (`enable`) or stop draining it, then
    /// [`answer_drain`].
    Drain { vip: String, enable: bool },
}

/// The HTTP answer to an owner's refusal.
pub(crate) fn api_error(e: &ApiError) -> Response {
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
fn pct_decode(s: &str) -> Option<String> {
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

/// The route `path` takes as a template ("/api/v1/vips/{name}/drain"),
/// what OpenTelemetry's `http.route` and a server span's name want; None
/// for a path no route takes.
pub fn route_template(path: &str) -> Option<&'static str> {
    Some(match parse(path)? {
        Route::Page => "/",
        Route::Healthz => "/healthz",
        Route::Readyz => "/readyz",
        Route::Status => "/status",
        Route::Metrics => "/metrics",
        Route::Vip(_) => "/api/v1/vips/{name}",
        Route::Check(_) => "/api/v1/vips/{name}/check",
        Route::Drain(_) => "/api/v1/vips/{name}/drain",
    })
}

fn bad_name() -> Step {
    Step::Answer(Response::error(400, "bad VIP name encoding"), None)
}

/// The first step for `req`; `token` is `api.token`.
pub fn plan(req: &Request, token: Option<&str>) -> Step {
    let Some(r) = parse(&req.path) else {
        return Step::Answer(Response::error(404, "not found"), None);
    };
    let allowed = match req.method.as_str() {
        "GET" | "HEAD" => r.allow().contains("GET"),
        m => r.allow().split(", ").any(|a| a == m),
    };
    if !allowed {
        return Step::Answer(
            Response::error(405, "method not allowed").with_header("Allow", r.allow()),
            None,
        );
    }
    if matches!(r, Route::Check(_) | Route::Drain(_)) {
        if let Err(d) = access::check(&req.headers, req.local, token) {
            let line = LogLine {
                level: Level::Warn,
                text: format!(
                    "api: refused {} {} from {}: {} {}",
                    req.method,
                    access::quoted(&req.path),
                    req.peer,
                    d.status,
                    d.message,
                ),
                limited: true,
            };
            let resp = Response::error(d.status, &d.message);
            let resp = match d.challenge {
                Some(c) => resp.with_header("WWW-Authenticate", c),
                None => resp,
            };
            return Step::Answer(resp, Some(line));
        }
    }
    match r {
        Route::Page => Step::Stream(What::Page),
        Route::Healthz => Step::Snapshot(View::Healthz),
        Route::Readyz => Step::Snapshot(View::Readyz),
        Route::Status => match status_query(req.query.as_deref()) {
            Ok(q) => Step::Stream(What::Status(q)),
            Err(e) => Step::Answer(Response::error(400, &e), None),
        },
        Route::Metrics => Step::Stream(What::Metrics),
        Route::Vip(raw) => match pct_decode(raw) {
            Some(name) => Step::Snapshot(View::Vip(name)),
            None => bad_name(),
        },
        Route::Check(raw) => {
            let Some(vip) = pct_decode(raw) else {
                return bad_name();
            };
            let check = match req.query_param("check").map(pct_decode) {
                None => None,
                Some(Some(c)) if !c.is_empty() => Some(c),
                Some(_) => return Step::Answer(Response::error(400, "bad check name"), None),
            };
            Step::Trigger { vip, check }
        }
        Route::Drain(raw) => match pct_decode(raw) {
            Some(vip) => Step::Drain {
                vip,
                enable: req.method == "POST",
            },
            None => bad_name(),
        },
    }
}

/// `/status?offset=…&limit=…&search=…&state=…&health=…&compact=1`: one page
/// of the VIPs ([`status::StatusQuery`]); no query: the whole document, as
/// the Go pathosd's consumers expect.
fn status_query(query: Option<&str>) -> Result<Option<status::StatusQuery>, String> {
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        return Ok(None);
    };
    let mut q = status::StatusQuery::default();
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        // A form sends a space as '+'.
        let v = pct_decode(&v.replace('+', " ")).ok_or_else(|| format!("{k}: bad encoding"))?;
        q.set(k, &Value::String(v))?;
    }
    Ok(Some(q))
}

/// The answer to `view` from the owner's snapshot (or its refusal).
/// `/healthz` when the owner answers (objects through [`Obj`], not `json!`:
/// flash).
fn healthz_ok() -> Response {
    Response::json(200, &Obj::default().put("status", "ok".into()).done())
}

pub fn answer_snapshot(view: &View, s: Result<&Snapshot, &ApiError>) -> Response {
    let s = match (view, s) {
        // Liveness: the owner task answers, i.e. the daemon runs with a
        // loaded config. BGP peers do not matter here (that is /readyz).
        (View::Healthz, Ok(_)) => return healthz_ok(),
        (View::Healthz, Err(e)) => {
            let v = Obj::default()
                .put("status", "unavailable".into())
                .put("error", e.to_string().into());
            return Response::json(503, &v.done());
        }
        (_, Err(e)) => return api_error(e),
        (_, Ok(s)) => s,
    };
    match view {
        View::Healthz => healthz_ok(),
        View::Readyz => {
            let (ready, v) = status::ready_json(s);
            Response::json(if ready { 200 } else { 503 }, &v)
        }
        View::Vip(name) => match s.vips.iter().find(|v| &v.name == name) {
            Some(v) => Response::json(200, &status::vip_json(v)),
            None => Response::error(404, &format!("VIP not found: {name}")),
        },
    }
}

/// The answer to a streamed request whose first piece the owner could not
/// render: the owner's refusal, or the reason the job gave.
pub fn answer_stream_error(e: Result<&'static str, &ApiError>) -> Response {
    match e {
        Ok(why) => Response::error(503, why),
        Err(e) => api_error(e),
    }
}

/// The answer to a check trigger and its log line: the daemon has looked
/// the names up by now, and they are cut short ([`Quoted`]).
pub fn answer_trigger(
    peer: SocketAddr,
    vip: &str,
    check: Option<&str>,
    r: Result<TriggerOutcome, ApiError>,
) -> (Response, LogLine) {
    let what = format!(
        "check trigger for VIP {}{} from {peer}",
        Quoted(vip),
        check.map_or(String::new(), |c| format!(" (check {})", Quoted(c))),
    );
    match r {
        Ok(o) => (
            Response::json(200, &status::trigger_json(&o)),
            LogLine::new(Level::Info, format!("api: {what}: {}", o.state)),
        ),
        Err(e) => {
            // Unknown names are not logged; refusals (a flood of them is
            // what the rate limit is for) only at debug level.
            let line = match e {
                ApiError::NotFound(_) => LogLine::new(
                    Level::Debug,
                    format!("api: trigger from {peer} refused: {}", e.kind()),
                ),
                ApiError::Busy { .. } => {
                    LogLine::new(Level::Debug, format!("api: {what} not run: {}", e.kind()))
                }
                _ => LogLine::new(Level::Info, format!("api: {what} not run: {}", e.kind())),
            };
            (api_error(&e), line)
        }
    }
}

/// A drain request's answer (HTTP and ubus).
pub fn drain_json(vip: &str, enable: bool, state: &str) -> Value {
    Obj::default()
        .put("vip", vip.into())
        .put("drain", enable.into())
        .put("state", state.into())
        .done()
}

/// The answer to a drain request and its log line.
pub fn answer_drain(
    peer: SocketAddr,
    vip: &str,
    enable: bool,
    r: Result<&'static str, ApiError>,
) -> (Response, LogLine) {
    let onoff = if enable { "on" } else { "off" };
    match r {
        Ok(state) => (
            Response::json(200, &drain_json(vip, enable, state)),
            LogLine::new(
                Level::Info,
                format!(
                    "api: drain {onoff} for VIP {} from {peer}: {state}",
                    Quoted(vip)
                ),
            ),
        ),
        Err(e) => {
            let line = if matches!(e, ApiError::NotFound(_)) {
                LogLine::new(
                    Level::Debug,
                    format!("api: drain request from {peer} refused: {}", e.kind()),
                )
            } else {
                LogLine::new(
                    Level::Info,
                    format!(
                        "api: drain {onoff} for VIP {} from {peer}: {}",
                        Quoted(vip),
                        e.kind()
                    ),
                )
            };
            (api_error(&e), line)
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
        assert_eq!(route_template("/status"), Some("/status"));
        assert_eq!(
            route_template("/api/v1/vips/w%2Fb/drain"),
            Some("/api/v1/vips/{name}/drain")
        );
        assert_eq!(
            route_template("/api/v1/vips/web"),
            Some("/api/v1/vips/{name}")
        );
        assert_eq!(route_template("/nope"), None);
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

    fn req(method: &str, path: &str, query: Option<&str>) -> Request {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        Request {
            method: method.into(),
            path: path.into(),
            query: query.map(str::to_string),
            headers: vec![
                ("Host".into(), "127.0.0.1:8080".into()),
                ("Content-Type".into(), "application/json".into()),
            ],
            body: Vec::new(),
            peer: "127.0.0.2:40000".parse().unwrap(),
            local,
        }
    }

    #[test]
    fn plan_decodes_names_and_asks_the_owner() {
        assert_eq!(
            plan(&req("GET", "/api/v1/vips/a%20b", None), None),
            Step::Snapshot(View::Vip("a b".into()))
        );
        assert_eq!(
            plan(
                &req("POST", "/api/v1/vips/web/check", Some("check=h%31")),
                None
            ),
            Step::Trigger {
                vip: "web".into(),
                check: Some("h1".into())
            }
        );
        assert_eq!(
            plan(&req("DELETE", "/api/v1/vips/web/drain", None), None),
            Step::Drain {
                vip: "web".into(),
                enable: false
            }
        );
        let Step::Answer(r, None) =
            plan(&req("POST", "/api/v1/vips/web/check", Some("check=")), None)
        else {
            panic!("an empty check name is answered at once")
        };
        assert_eq!(r.status, 400);
        let Step::Answer(r, None) = plan(&req("PUT", "/status", None), None) else {
            panic!("a bad method is answered at once")
        };
        assert_eq!((r.status, r.headers[0].1.as_str()), (405, "GET, HEAD"));
    }

    /// A refused change request is answered at once with a rate-limited
    /// warning for the driver to log.
    #[test]
    fn a_refused_change_is_a_limited_warning() {
        let Step::Answer(r, Some(line)) =
            plan(&req("POST", "/api/v1/vips/web/drain", None), Some("secret"))
        else {
            panic!("a request without the token is refused")
        };
        assert_eq!(r.status, 401);
        assert_eq!(line.level, Level::Warn);
        assert!(line.limited);
        assert!(
            line.text.starts_with(
                "api: refused POST \"/api/v1/vips/web/drain\" from 127.0.0.2:40000: 401 "
            ),
            "{}",
            line.text
        );
    }

    #[test]
    fn owner_replies_become_answers_and_log_lines() {
        let peer: SocketAddr = "127.0.0.2:40000".parse().unwrap();
        let (r, line) = answer_drain(peer, "web", true, Ok("pessimized"));
        assert_eq!(r.status, 200);
        assert_eq!(
            line,
            LogLine::new(
                Level::Info,
                "api: drain on for VIP \"web\" from 127.0.0.2:40000: pessimized".into()
            )
        );
        let (r, line) = answer_trigger(peer, "web", None, Err(ApiError::NotFound("x".into())));
        assert_eq!(r.status, 404);
        assert_eq!(
            line,
            LogLine::new(
                Level::Debug,
                "api: trigger from 127.0.0.2:40000 refused: not found".into()
            )
        );
        let busy = ApiError::Busy {
            message: "busy".into(),
            retry_after: std::time::Duration::from_millis(1500),
        };
        let (r, _) = answer_trigger(peer, "web", Some("h"), Err(busy));
        assert_eq!(r.status, 429);
        assert_eq!(r.headers, vec![("Retry-After", "2".to_string())]);
        let gone = ApiError::Unavailable("daemon is stopping".into());
        let r = answer_snapshot(&View::Healthz, Err(&gone));
        assert_eq!(r.status, 503);
    }
}

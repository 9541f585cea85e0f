//! How an encoded request reaches its collector: over OTLP/HTTP, POSTed
//! with the project's own HTTP/1.1 client (`http://`, [`crate::net::http1`])
//! or ureq (`https://`); over OTLP/gRPC, as a unary call of the signal's
//! `Export` with the project's own HTTP/2 client (`grpc::unary`, for
//! `grpc://` and `grpcs://`); and what the answer means for the request
//! ([`Outcome`]).

use crate::config::run::{OtlpTarget, Transport};
use crate::net::addrs;
use crate::net::grpc;
use crate::net::http1::{self, Method};
use crate::net::tls::{self, H2Config};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

const USER_AGENT: &str = concat!("pathosd/", env!("CARGO_PKG_VERSION"));
/// One attempt: connect, send, and the response head.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The exporter's calls that run on the blocking pool (https://
/// with ureq, OTLP/gRPC) take turns, whichever signals are sending: a
/// collector that never answers holds one of the pool's workers, not one
/// per signal, and the checks keep the others.
static POOL_TURN: smol::lock::Semaphore = smol::lock::Semaphore::new(1);

/// One signal's collector and how to reach it.
#[derive(Clone)]
pub(super) struct Sink {
    /// Shared with the calls on the blocking pool, which outlive a borrow.
    pub(super) target: Arc<OtlpTarget>,
    client: Client,
}

/// How requests go out: plain http:// on the daemon's thread; https://
/// with ureq on the bounded blocking pool (its agent built once, with the
/// system's CA store read once); grpc:// and grpcs:// with the gRPC
/// client (`grpc::unary`) on the same pool, with its TLS config
/// built once.
#[derive(Clone)]
enum Client {
    Plain,
    #[cfg(feature = "tls")]
    Tls(ureq::Agent),
    Grpc(Option<H2Config>),
}

#[cfg(feature = "tls")]
fn tls_agent(t: &OtlpTarget) -> ureq::Agent {
    let roots = if t.insecure {
        Vec::new()
    } else {
        tls::system_roots()
    };
    let tls = tls::ureq_config(roots, None, t.insecure);
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(REQUEST_TIMEOUT))
        .user_agent(USER_AGENT)
        .max_idle_connections(0)
        .tls_config(tls)
        .build();
    ureq::Agent::new_with_config(config)
}

/// One https:// request with ureq, on the blocking pool: the status and
/// its Retry-After.
#[cfg(feature = "tls")]
async fn exchange_tls(
    agent: &ureq::Agent,
    t: &Arc<OtlpTarget>,
    body: Arc<Vec<u8>>,
) -> Result<(u16, Option<u64>), String> {
    let agent = agent.clone();
    let t = Arc::clone(t);
    let r = crate::pool::pool()
        .run(move || {
            let mut req = agent
                .post(&t.url)
                .header("Content-Type", "application/x-protobuf");
            for (k, v) in &t.headers {
                req = req.header(k, v);
            }
            let resp = req.send(&body[..]).map_err(|e| e.to_string())?;
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok());
            Ok((resp.status().as_u16(), retry_after))
        })
        .await?;
    r
}

/// The client for `target`, or None for a transport this build cannot
/// take (validation refuses https:// and grpcs:// without TLS) or a TLS
/// setup that failed.
pub(super) fn sink(target: &OtlpTarget) -> Option<Sink> {
    let mut target = target.clone();
    let client = match target.transport {
        Transport::Http { tls: false } => Client::Plain,
        #[cfg(feature = "tls")]
        Transport::Http { tls: true } => Client::Tls(tls_agent(&target)),
        Transport::Grpc { tls } => {
            // gRPC metadata names are lower-case (HTTP/2 header names).
            for (k, _) in &mut target.headers {
                k.make_ascii_lowercase();
            }
            match grpc_tls(&target, tls) {
                Ok(c) => Client::Grpc(c),
                Err(e) => {
                    log::error!("otel: {}: {e}", target.url);
                    return None;
                }
            }
        }
        #[cfg(not(feature = "tls"))]
        Transport::Http { tls: true } => {
            log::error!("otel: {} {}", target.url, crate::NEEDS_TLS);
            return None;
        }
    };
    Some(Sink {
        target: Arc::new(target),
        client,
    })
}

/// grpcs://'s TLS config (the system's CA store, or none with
/// `insecure`), built once; a build without TLS cannot make one.
fn grpc_tls(t: &OtlpTarget, tls: bool) -> Result<Option<H2Config>, String> {
    tls.then(|| tls::h2_config(None, t.insecure)).transpose()
}

/// What became of one attempt.
pub(super) enum Outcome {
    Accepted,
    /// Retry, after the collector's `Retry-After` when it sent one.
    Retry(Option<Duration>, String),
    /// The collector refused it for good.
    Refused(String),
}

/// The request's head for a body of `body_len` bytes, on a new
/// connection (one request a minute does not need a kept one).
fn request_head(t: &OtlpTarget, body_len: usize) -> Vec<u8> {
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {USER_AGENT}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n",
        t.path,
        t.collector,
        body_len
    );
    for (k, v) in &t.headers {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// One OTLP/gRPC call (the signal's Export, `t.path`) with `grpc::unary`
/// on the blocking pool, bounded by `deadline`: its grpc-status and
/// grpc-message.
async fn exchange_grpc(
    addrs: Vec<std::net::SocketAddr>,
    t: &Arc<OtlpTarget>,
    tls: Option<&H2Config>,
    body: Arc<Vec<u8>>,
    deadline: Instant,
) -> Result<(u32, String), String> {
    let tls = tls.cloned();
    let t = Arc::clone(t);
    let r = crate::pool::pool()
        .run(move || {
            grpc::unary(&grpc::Call {
                addrs: &addrs,
                tls: tls.as_ref(),
                server_name: &t.collector.host,
                port: t.collector.port,
                path: &t.path,
                metadata: &t.headers,
                user_agent: USER_AGENT,
                message: &body,
                deadline,
            })
            .map(|r| (r.code, r.message))
        })
        .await?;
    r
}

/// An OTLP/HTTP answer: accepted, retried or refused.
fn http_outcome((status, retry_after): (u16, Option<u64>)) -> Outcome {
    match status {
        200..=299 => Outcome::Accepted,
        // OTLP/HTTP: the retryable responses.
        429 | 502 | 503 | 504 => Outcome::Retry(
            retry_after.map(Duration::from_secs),
            format!("HTTP {status}"),
        ),
        s => Outcome::Refused(format!("HTTP {s}")),
    }
}

/// An OTLP/gRPC answer. The specification's retryable codes are retried
/// on the back-off: CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE,
/// UNAVAILABLE, DATA_LOSS, and RESOURCE_EXHAUSTED, which it retries only
/// when the server sends RetryInfo: its details (and any
/// grpc-retry-pushback-ms) are not read, so it is always retried, after
/// the back-off rather than the server's delay. Any other code drops the
/// request.
fn grpc_outcome((code, message): (u32, String)) -> Outcome {
    let why = if message.is_empty() {
        format!("gRPC {}", grpc::code_name(code))
    } else {
        format!("gRPC {}: {message}", grpc::code_name(code))
    };
    match code {
        0 => Outcome::Accepted,
        1 | 4 | 8 | 10 | 11 | 14 | 15 => Outcome::Retry(None, why),
        _ => Outcome::Refused(why),
    }
}

/// One attempt at sending `body` to the sink's collector, bounded by
/// [`REQUEST_TIMEOUT`], and what its answer means; on the heap while it
/// runs. Its future (the clients' own, ≈ 18 KB) is then no part of the
/// exporter's task nor of the last export's: inline, three of them made
/// the task's future 84 KB, built on the main thread's stack at every start
/// of the daemon (the exporter's start) and kept resident there.
#[inline(never)]
pub(super) fn send(sink: &Sink, body: Arc<Vec<u8>>) -> Pin<Box<dyn Future<Output = Outcome> + '_>> {
    Box::pin(attempt(sink, body))
}

async fn attempt(sink: &Sink, body: Arc<Vec<u8>>) -> Outcome {
    let (t, client) = (&sink.target, &sink.client);
    // The calls on the pool take turns (`POOL_TURN`); waiting for the turn
    // is not the call's time.
    let _turn = match client {
        Client::Plain => None,
        _ => Some(POOL_TURN.acquire().await),
    };
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let attempt = async {
        // ureq looks the name up itself; the project's own clients are
        // given the addresses (each tried in turn), looked up here for both
        // (one lookup's code).
        #[cfg(feature = "tls")]
        if let Client::Tls(agent) = client {
            return exchange_tls(agent, t, body).await.map(http_outcome);
        }
        let addrs = addrs(&t.collector).await?;
        match client {
            Client::Grpc(tls) => exchange_grpc(addrs, t, tls.as_ref(), body, deadline)
                .await
                .map(grpc_outcome),
            // Client::Plain (Client::Tls went to ureq above).
            _ => {
                // Head and body written one after the other: the body (up
                // to megabytes at 10,000 VIPs) is not copied behind it.
                let head = request_head(t, body.len());
                http1::exchange(&addrs, None, &[&head, &body], Method::Post, false, false)
                    .await
                    .map(|r| http_outcome((r.status, r.retry_after)))
                    .map_err(|f| f.detail("request", &t.url))
            }
        }
    };
    match crate::net::until(deadline, attempt).await {
        None => Outcome::Retry(None, format!("no answer in {REQUEST_TIMEOUT:?}")),
        Some(Err(why)) => Outcome::Retry(None, why),
        Some(Ok(o)) => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> OtlpTarget {
        OtlpTarget {
            transport: Transport::Http { tls: false },
            collector: crate::config::target::HostPort {
                host: crate::config::target::Host::Ip(std::net::Ipv6Addr::LOCALHOST.into()),
                port: 4318,
            },
            path: "/v1/metrics".into(),
            url: "http://[::1]:4318/v1/metrics".into(),
            insecure: false,
            headers: vec![("X-Key".into(), "k".into())],
        }
    }

    #[test]
    fn the_request_head_carries_the_body_length_and_the_headers() {
        let r = request_head(&target(), 2);
        let text = String::from_utf8_lossy(&r);
        assert!(text.starts_with("POST /v1/metrics HTTP/1.1\r\nHost: [::1]:4318\r\n"));
        assert!(text.contains("\r\nContent-Type: application/x-protobuf\r\n"));
        assert!(text.contains("\r\nContent-Length: 2\r\n"));
        assert!(text.contains("\r\nX-Key: k\r\n\r\n"));
        assert!(r.ends_with(b"\r\n\r\n"), "the head ends the head only");
    }

    /// OTLP's retryable gRPC codes are retried, the others dropped; the
    /// reason names the code and carries the server's message.
    #[test]
    fn grpc_codes_are_retried_or_dropped_as_otlp_says() {
        let o = |c: u32| grpc_outcome((c, String::new()));
        assert!(matches!(o(0), Outcome::Accepted));
        for c in [1, 4, 8, 10, 11, 14, 15] {
            assert!(matches!(o(c), Outcome::Retry(None, _)), "{c}");
        }
        for c in [2, 3, 5, 6, 7, 9, 12, 13, 16, 99] {
            assert!(matches!(o(c), Outcome::Refused(_)), "{c}");
        }
        let Outcome::Retry(_, why) = grpc_outcome((14, "down".into())) else {
            panic!("retried");
        };
        assert_eq!(why, "gRPC UNAVAILABLE (14): down");
    }
}

//! The driver of the local HTTP endpoint's routing: the pure router
//! (`pathosd_core::api::router`, with the table of endpoints) says what a
//! request needs; this asks the owner task through [`ControlHandle`] and logs
//! the outcome the router describes. Every wait for the owner task is
//! bounded, so a stuck owner costs a connection slot for at most
//! `owner_timeout`.

use super::control::{ApiError, ControlHandle};
use super::http::{Handler, Pieces, Reply, Request, Response};
use pathosd_core::api::router::{self, Level, LogLine, Step};
use pathosd_core::api::stream::{Job, PIECE};
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
    f.or(async { Err(expired(limit).await) }).await
}

/// The timeout side of [`bounded`], not generic: one copy of the timer and
/// its message in the binary, not one per answer type.
async fn expired(limit: Duration) -> ApiError {
    crate::rt::sleep(limit).await;
    ApiError::Unavailable(format!(
        "daemon did not answer within {} s",
        limit.as_secs_f64()
    ))
}

/// Client-provoked warnings (refused change requests): at most one per
/// this, with the count left out.
const DENIED_LOG_EVERY: Duration = Duration::from_secs(10);
thread_local! {
    // The API's tasks run on the daemon's one thread (see api::http::LogLimit).
    static DENIED_LOG: super::http::LogLimit = const { super::http::LogLimit::new() };
}

/// Logs what the router says happened; a `limited` line only as often as
/// [`DENIED_LOG_EVERY`].
fn log_line(l: LogLine) {
    let level = match l.level {
        Level::Warn => log::Level::Warn,
        Level::Info => log::Level::Info,
        Level::Debug => log::Level::Debug,
    };
    if !l.limited {
        log::log!(level, "{}", l.text);
    } else if let Some(n) = DENIED_LOG.with(|l| l.allow(DENIED_LOG_EVERY)) {
        log::log!(level, "{}{}", l.text, super::http::more_since(n));
    }
}

async fn route(ctl: &ControlHandle, opts: &Options, req: Request) -> Reply {
    // A server span per request while traces are exported: from the
    // request read to the answer made (the write is the connection's, and
    // so is the rest of a streamed answer).
    let start = std::time::Instant::now();
    let reply = answer(ctl, opts, &req).await;
    crate::daemon::otel::served(
        &req.method,
        &req.path,
        router::route_template(&req.path),
        reply.response.status,
        start.elapsed(),
    );
    reply
}

/// A streamed answer's body: the job goes back to the owner for each
/// piece, each time within the owner timeout.
struct JobPieces {
    ctl: ControlHandle,
    job: Option<Box<Job>>,
    limit: Duration,
}

impl Pieces for JobPieces {
    fn piece(&self) -> &[u8] {
        self.job.as_ref().map_or(&[], |j| j.piece())
    }

    fn next(&mut self) -> std::pin::Pin<Box<dyn Future<Output = Result<bool, String>> + '_>> {
        Box::pin(async move {
            let Some(job) = self.job.take() else {
                return Ok(false);
            };
            if job.done() {
                return Ok(false);
            }
            let job = self
                .ctl
                .render(job, self.limit)
                .await
                .map_err(|e| e.to_string())?;
            if let Some(why) = job.failed() {
                return Err(why.to_string());
            }
            self.job = Some(job);
            Ok(true)
        })
    }
}

/// A streamed answer: its first piece decides the status (the owner not
/// answering is 503); an answer of one piece is written whole.
async fn stream(
    ctl: &ControlHandle,
    what: pathosd_core::api::stream::What,
    limit: Duration,
) -> Reply {
    let content_type = what.content_type();
    let job = match ctl.render(Box::new(Job::new(what, PIECE)), limit).await {
        Ok(job) => job,
        Err(e) => return router::answer_stream_error(Err(&e)).into(),
    };
    if let Some(why) = job.failed() {
        return router::answer_stream_error(Ok(why)).into();
    }
    let mut job = job;
    if job.done() {
        return Response::new(200, content_type, job.take_piece()).into();
    }
    Reply {
        response: Response::new(200, content_type, Vec::new()),
        body: Some(Box::new(JobPieces {
            ctl: ctl.clone(),
            job: Some(job),
            limit,
        })),
    }
}

async fn answer(ctl: &ControlHandle, opts: &Options, req: &Request) -> Reply {
    let t = opts.owner_timeout;
    let (resp, line) = match router::plan(req, opts.token.as_deref()) {
        Step::Answer(resp, line) => (resp, line),
        Step::Stream(what) => return stream(ctl, what, t).await,
        Step::Snapshot(view) => {
            let s = ctl.snapshot(view.scope(), t).await;
            (router::answer_snapshot(&view, s.as_ref()), None)
        }
        Step::Trigger { vip, check } => {
            let r = ctl.trigger(&vip, check.as_deref(), t).await;
            let (resp, line) = router::answer_trigger(req.peer, &vip, check.as_deref(), r);
            (resp, Some(line))
        }
        Step::Drain { vip, enable } => {
            let r = ctl.drain(&vip, enable, t).await;
            let (resp, line) = router::answer_drain(req.peer, &vip, enable, r);
            (resp, Some(line))
        }
    };
    if let Some(l) = line {
        log_line(l);
    }
    resp.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The owner not answering in time is 503 with this exact text (the
    /// HTTP API and ubus show it); an answer in time passes through.
    #[test]
    fn bounded_answers_or_says_how_long_it_waited() {
        let (late, on_time) = crate::rt::block_on(async {
            let late = bounded(
                Duration::from_millis(20),
                std::future::pending::<Result<u8, ApiError>>(),
            )
            .await;
            let on_time = bounded(Duration::from_secs(5), async { Ok::<_, ApiError>(7u8) }).await;
            (late, on_time)
        });
        assert_eq!(
            late,
            Err(ApiError::Unavailable(
                "daemon did not answer within 0.02 s".into()
            ))
        );
        assert_eq!(on_time, Ok(7));
    }
}

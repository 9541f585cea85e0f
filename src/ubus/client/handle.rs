//! The daemon's side of the ubus client: the calls it receives and answers
//! ([`Requests`], [`UbusReply`]), and the handle that queues events and
//! watchdog pings and reads the link's state ([`UbusHandle`]), both
//! shared with the connection task on the daemon's one thread.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use serde_json::Value;

use super::ReplyData;
use crate::chan::{Closed, Rx, Tx, UbusDone};
use crate::ubus::msg::UbusStatus;

/// One `ubus call pathosd <method> <args>` for the daemon to answer.
#[derive(Debug)]
pub struct UbusRequest {
    pub method: String,
    /// The call's arguments as a JSON object (blobmsg INT8 arrives as a bool).
    pub args: Value,
    pub reply: UbusReply,
}

/// The daemon's end of the calls, each a [`UbusRequest`].
pub struct Requests(pub(super) Rx<UbusRequest>);

impl Requests {
    /// The next call; Err once the client is gone.
    pub async fn recv(&self) -> Result<UbusRequest, Closed> {
        self.0.recv().await
    }
}

/// Answers one request. Dropping it unanswered answers UNKNOWN_ERROR.
#[derive(Debug)]
pub struct UbusReply {
    pub(super) key: u32,
    /// Gets the answer, with `key`.
    pub(super) tx: Option<Tx<UbusDone>>,
    /// Closed (never written) once the client no longer waits for this
    /// answer: it answered TIMEOUT, or the connection to ubusd ended.
    pub(super) waiting: Rx<()>,
}

impl UbusReply {
    /// Resolves once the client stopped waiting for this answer (it already
    /// answered the caller TIMEOUT, or the connection dropped), so that the
    /// handler can give up and free what it holds. Pending forever while the
    /// caller still waits.
    pub async fn abandoned(&self) {
        // Nothing is ever sent: recv() ends only when the sender is dropped.
        let _ = self.waiting.recv().await;
    }

    /// `Ok(object)` becomes DATA + STATUS 0, `Ok(Null)` STATUS 0 alone, any other
    /// `Ok` value is sent as `{"value": v}`; `Err(s)` becomes STATUS s without DATA.
    /// Never blocks; a reply after the connection dropped or timed out is discarded.
    pub fn send(self, result: Result<Value, UbusStatus>) {
        self.answer(result.map(ReplyData::Json));
    }

    /// [`Self::send`] of a reply whose table is encoded already.
    pub fn answer(mut self, result: Result<ReplyData, UbusStatus>) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.try_send((self.key, result));
        }
    }
}

impl Drop for UbusReply {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.try_send((self.key, Err(UbusStatus::UnknownError)));
        }
    }
}

/// A synchronous handler, for daemons that can answer from shared state directly.
pub trait UbusHandler {
    fn call(&self, method: &str, args: Value) -> Result<Value, UbusStatus>;
}

impl<F> UbusHandler for F
where
    F: Fn(&str, Value) -> Result<Value, UbusStatus>,
{
    fn call(&self, method: &str, args: Value) -> Result<Value, UbusStatus> {
        self(method, args)
    }
}

/// Answers every request with `handler` until the client is gone.
pub async fn serve<H: UbusHandler>(requests: Requests, handler: H) {
    while let Ok(req) = requests.recv().await {
        let r = handler.call(&req.method, req.args);
        req.reply.send(r);
    }
}

/// Link state, for logs and the status API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkStatus {
    pub connected: bool,
    /// Our object id while registered.
    pub objid: Option<u32>,
    /// How many times ADD_OBJECT succeeded (1 + re-registrations).
    pub registrations: u32,
    /// Events dropped because the queue was full.
    pub events_dropped: u32,
    /// Connections tried so far (grows by one per backoff step while ubusd is absent).
    pub connect_attempts: u32,
}

/// What the daemon's handles and the client task share: the event queue and
/// the link state. The owner (which holds the handles) and the client are
/// tasks on the daemon's one thread (`crate::rt`), so these are `Cell`s and a
/// `RefCell` (each read or written at once, never across an await), not
/// locks or atomics.
pub(super) struct Shared {
    pub(super) events: RefCell<VecDeque<(String, Value)>>,
    pub(super) event_cap: usize,
    pub(super) events_dropped: Cell<u32>,
    pub(super) connect_attempts: Cell<u32>,
    pub(super) connected: Cell<bool>,
    pub(super) objid: Cell<Option<u32>>,
    pub(super) registrations: Cell<u32>,
    pub(super) shutdown: Cell<bool>,
    /// A watchdog ping the owner asked for and the client has not sent
    /// yet: procd's service and instance names.
    pub(super) ping: RefCell<Option<(String, String)>>,
}

/// `c += 1`, saturating.
pub(super) fn bump(c: &Cell<u32>) -> u32 {
    let n = c.get().saturating_add(1);
    c.set(n);
    n
}

/// The daemon's side: send events, read link state, stop the client. Cheap to clone.
/// When every handle is dropped the client removes its object and stops.
/// Not `Send`: it and the client live on the daemon's thread.
#[derive(Clone)]
pub struct UbusHandle {
    pub(super) shared: Rc<Shared>,
    pub(super) wake: Tx<()>,
    pub(super) done: Rx<()>,
}

impl UbusHandle {
    /// Queues `ubus send <name> <data>`; never blocks, never fails. `data` should be an
    /// object (anything else is sent as `{"value": data}`).
    pub fn send_event(&self, name: &str, data: Value) {
        let mut q = self.shared.events.borrow_mut();
        while q.len() >= self.shared.event_cap.max(1) {
            q.pop_front();
            bump(&self.shared.events_dropped);
        }
        q.push_back((name.to_string(), data));
        drop(q);
        let _ = self.wake.try_send(());
    }

    /// Asks the client to send `ubus call service watchdog {"name":
    /// service, "instance": instance}`, which re-arms procd's watchdog
    /// timer of the instance. Never blocks: a ping asked for while ubusd is
    /// unreachable is sent once the client is connected again; asked for
    /// twice before it went out, it is sent once. Only `name` and
    /// `instance`: with `mode` or `timeout` procd would take the watchdog
    /// as the daemon's own (`self_managed`) and no longer apply the init
    /// script's.
    pub fn ping_procd(&self, service: &str, instance: &str) {
        *self.shared.ping.borrow_mut() = Some((service.to_string(), instance.to_string()));
        let _ = self.wake.try_send(());
    }

    pub fn status(&self) -> LinkStatus {
        LinkStatus {
            connected: self.shared.connected.get(),
            objid: self.shared.objid.get(),
            registrations: self.shared.registrations.get(),
            events_dropped: self.shared.events_dropped.get(),
            connect_attempts: self.shared.connect_attempts.get(),
        }
    }

    /// Asks the client to send REMOVE_OBJECT and return from `run`. When
    /// connected, the queued events are sent first and the calls still in
    /// flight answered UNKNOWN_ERROR.
    pub fn shutdown(&self) {
        self.shared.shutdown.set(true);
        let _ = self.wake.try_send(());
    }

    /// Resolves once [`UbusClient::run`] has returned (after
    /// [`UbusHandle::shutdown`]: ubusd has answered the REMOVE_OBJECT sent
    /// after the queued events, so it has delivered them), or at once if
    /// the client was dropped unrun.
    pub async fn stopped(&self) {
        // Nothing is ever sent: recv() ends when the client drops its sender.
        let _ = self.done.recv().await;
    }
}

//! The daemon: one owner task holds all state (the pure [`engine::Engine`])
//! and is the only writer of it. Check loops, the BGP speaker, the HTTP
//! endpoint, ubus and signals feed it through channels of one message
//! type, [`Msg`]; it answers
//! API requests from its own state and pushes route intents to the speaker in
//! the same step that decided them. The engine, triggers and reload diff are
//! pure (crate pathosd-core, re-exported at the same paths).

pub use pathosd_core::daemon::{engine, reload, triggers, views};

mod http;
mod otel;
mod owner;
mod signals;
mod ubus;

use crate::api::control::Control;
use crate::bgp::speaker::{PeerEvent, SessionReport};
use engine::CheckRun;

/// Every message that travels on a channel between the daemon thread's
/// tasks: to the owner (signals, API requests, session events, check
/// results), the sessions' reports, and the speaker's requests to each
/// session. All these channels carry this one type: async-channel compiles
/// its send, receive, close and drop code once per message type (≈ 3 KB
/// each on mips), and six types were six copies. The channels
/// stay separate, each carrying one kind, so the owner still reads its own
/// in its order (signals, requests, session events, check results).
pub enum Msg {
    /// A check loop ran a probe (scheduled or for a trigger).
    Result(CheckRun),
    /// A request from the HTTP API or ubus ([`crate::api::control::ControlHandle`]).
    Control(Control),
    /// A session state change (the speaker's `events`).
    Peer(PeerEvent),
    /// A signal number, from the signal pipe.
    Signal(i32),
    /// A peer task's status report ([`crate::bgp::speaker::SpeakerHandle::reports`]).
    /// Boxed: a report (a whole `Summary`) is twice the size of the other
    /// messages, and every slot of every channel of this type would be
    /// that size.
    Report(Box<SessionReport>),
    /// The speaker's request to one session (internal to the BGP driver).
    Session(crate::bgp::driver::Control),
    /// A `ubus call pathosd ...` for the daemon ([`crate::ubus::Requests`]).
    UbusCall(crate::ubus::UbusRequest),
    /// A call's answer, keyed by the client's call key, back to the ubus client.
    UbusDone(u32, Result<serde_json::Value, crate::ubus::UbusStatus>),
    /// The owner's answer to a request, on the request's reply channel.
    Answer(crate::api::control::Answer),
    /// A bare signal: a wake-up or an acknowledgement (a channel that is
    /// only ever closed, to say "gone", carries this type too).
    Wake,
}

pub use owner::{run, Options};

//! Typed channels between the daemon thread's tasks.
//!
//! Each channel carries one kind of message and says so in its type:
//! [`Tx<CheckRun>`](Tx) from a check loop to the owner, [`Rx<Control>`](Rx)
//! at a BGP session, `Tx<()>` for a bare wake-up or acknowledgement. A
//! receiver gets exactly its kind, so no task matches messages it can never
//! get.
//!
//! Underneath, every channel is a `smol::channel` (async-channel) of the one private enum
//! [`Msg`]: async-channel compiles its send, receive, close and drop code
//! once per message type (≈ 3 KB each on mips), and the daemon's ten kinds
//! as ten types would be ten copies. [`Tx`] and [`Rx`] only wrap a value
//! into its variant and out again ([`Kind`]); the channel code exists once.
//! Only [`Tx::send`] and its kin create a `Msg`, each from its own kind, so
//! a channel's `Msg`s are always of its kind.

use crate::api::control::{Answer, Control as ApiRequest};
use crate::bgp::driver::Control as SessionRequest;
use crate::bgp::speaker::{PeerEvent, SessionReport};
use crate::daemon::engine::CheckRun;
use crate::daemon::hooks::HookEvent;
use crate::ubus::{UbusRequest, UbusStatus};
use std::marker::PhantomData;

/// The one representation every channel carries. Boxed where a kind is
/// large: every slot of every channel is the size of the largest variant.
/// Public only because [`Kind`] names it; nothing outside this module can
/// put one on a channel but through [`Tx`].
#[doc(hidden)]
pub enum Msg {
    Result(CheckRun),
    Control(ApiRequest),
    Peer(PeerEvent),
    Signal(Signal),
    /// A whole `Summary`: twice the size of the other kinds, so boxed.
    Report(Box<SessionReport>),
    Session(SessionRequest),
    UbusCall(UbusRequest),
    UbusDone(UbusDone),
    Answer(Answer),
    /// Boxed: a VIP transition is larger than the other kinds.
    Hook(Box<HookEvent>),
    Wake,
}

/// A signal number, from the signal pipe to the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal(pub i32);

/// A ubus call's answer, keyed by the client's call key, back to the ubus
/// client.
pub type UbusDone = (u32, Result<crate::ubus::client::ReplyData, UbusStatus>);

/// A message kind that travels on a channel: how it goes into the shared
/// representation and comes out of it.
pub trait Kind: Sized {
    #[doc(hidden)]
    fn into_msg(self) -> Msg;
    /// Never None on a channel of this kind (only this kind's `into_msg`
    /// put messages there); None rather than a panic all the same.
    #[doc(hidden)]
    fn from_msg(m: Msg) -> Option<Self>;
}

macro_rules! kind {
    ($t:ty, $variant:ident) => {
        impl Kind for $t {
            fn into_msg(self) -> Msg {
                Msg::$variant(self)
            }
            fn from_msg(m: Msg) -> Option<Self> {
                match m {
                    Msg::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}

kind!(CheckRun, Result);
kind!(ApiRequest, Control);
kind!(PeerEvent, Peer);
kind!(Signal, Signal);
kind!(Box<SessionReport>, Report);
kind!(SessionRequest, Session);
kind!(UbusRequest, UbusCall);
kind!(UbusDone, UbusDone);
kind!(Answer, Answer);
kind!(Box<HookEvent>, Hook);

impl Kind for () {
    fn into_msg(self) -> Msg {
        Msg::Wake
    }
    fn from_msg(m: Msg) -> Option<Self> {
        matches!(m, Msg::Wake).then_some(())
    }
}

/// The sending end of a channel of `T`s.
pub struct Tx<T> {
    inner: smol::channel::Sender<Msg>,
    kind: PhantomData<fn(T)>,
}

/// The receiving end of a channel of `T`s.
pub struct Rx<T> {
    inner: smol::channel::Receiver<Msg>,
    kind: PhantomData<fn() -> T>,
}

/// The channel is closed (every receiver, or every sender, is gone), or,
/// for `try_` calls, full or empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// A channel of at most `cap` queued `T`s.
pub fn bounded<T: Kind>(cap: usize) -> (Tx<T>, Rx<T>) {
    wrap(smol::channel::bounded(cap))
}

/// A channel of any number of queued `T`s.
pub fn unbounded<T: Kind>() -> (Tx<T>, Rx<T>) {
    wrap(smol::channel::unbounded())
}

fn wrap<T>(
    (inner, rx): (smol::channel::Sender<Msg>, smol::channel::Receiver<Msg>),
) -> (Tx<T>, Rx<T>) {
    (
        Tx {
            inner,
            kind: PhantomData,
        },
        Rx {
            inner: rx,
            kind: PhantomData,
        },
    )
}

impl<T> std::fmt::Debug for Tx<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tx")
    }
}

impl<T> std::fmt::Debug for Rx<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rx")
    }
}

impl<T> Clone for Tx<T> {
    fn clone(&self) -> Self {
        Tx {
            inner: self.inner.clone(),
            kind: PhantomData,
        }
    }
}

impl<T> Clone for Rx<T> {
    fn clone(&self) -> Self {
        Rx {
            inner: self.inner.clone(),
            kind: PhantomData,
        }
    }
}

impl<T: Kind> Tx<T> {
    /// Sends `v`, waiting for room; Err when every receiver is gone.
    pub async fn send(&self, v: T) -> Result<(), Closed> {
        self.inner.send(v.into_msg()).await.map_err(|_| Closed)
    }

    /// Sends `v` if there is room; Err when full or closed.
    pub fn try_send(&self, v: T) -> Result<(), Closed> {
        self.inner.try_send(v.into_msg()).map_err(|_| Closed)
    }
}

impl<T: Kind> Rx<T> {
    /// The next message, waiting for one; Err once the channel is closed
    /// and empty.
    pub async fn recv(&self) -> Result<T, Closed> {
        // Bounded by the channel's messages, all of kind `T` (see `Kind`).
        loop {
            let m = self.inner.recv().await.map_err(|_| Closed)?;
            if let Some(v) = T::from_msg(m) {
                return Ok(v);
            }
        }
    }

    /// The next message if one is queued.
    pub fn try_recv(&self) -> Result<T, Closed> {
        // As `recv`: a queued message is always of kind `T`.
        loop {
            let m = self.inner.try_recv().map_err(|_| Closed)?;
            if let Some(v) = T::from_msg(m) {
                return Ok(v);
            }
        }
    }
}

impl<T> Rx<T> {
    /// Whether every sender is gone.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_carries_its_kind() {
        let (tx, rx) = bounded::<Signal>(1);
        assert_eq!(tx.try_send(Signal(1)), Ok(()));
        assert_eq!(tx.try_send(Signal(2)), Err(Closed), "full");
        assert_eq!(rx.try_recv(), Ok(Signal(1)));
        assert_eq!(rx.try_recv(), Err(Closed), "empty");
        drop(rx);
        assert_eq!(tx.try_send(Signal(3)), Err(Closed), "no receiver");
    }

    #[test]
    fn recv_waits_and_ends_when_senders_are_gone() {
        let (tx, rx) = unbounded::<()>();
        let t2 = tx.clone();
        smol::block_on(async {
            tx.send(()).await.expect("open");
            drop(tx);
            assert_eq!(rx.recv().await, Ok(()));
            drop(t2);
            assert_eq!(rx.recv().await, Err(Closed));
        });
    }
}

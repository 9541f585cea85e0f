//! The daemon's entry point to BGP: the [`Speaker`] and its handle (see
//! [`super::driver`] for how sessions are run).

pub use super::driver::{
    MessageCounters, PeerEvent, PeerSettings, PeerStatus, SessionReport, Speaker, SpeakerHandle,
};

//! The owner's state as the API reads it: a streamed answer's view of one
//! VIP at a time (`Reading`), and a session's status as a peer view.

use super::Owner;
use crate::api::model::{PageInfo, Scope, Snapshot, VipView, Want};
use crate::api::stream::Source;
use crate::bgp::types::{PathAttrs, Prefix};
use std::time::Instant;

/// The owner's state as a streamed answer reads it: a view of one VIP at
/// a time, a few of a peer's routes at a time (`api::stream`).
pub(super) struct Reading<'a> {
    pub(super) owner: &'a mut Owner,
    pub(super) now: Instant,
}

impl Source for Reading<'_> {
    fn head(&mut self) -> Snapshot {
        self.owner.snapshot(&Scope::Summary, self.now)
    }

    fn vip_count(&self) -> usize {
        self.owner.state.engine().vips().len()
    }

    fn select(&self, scope: &Scope) -> (Vec<usize>, Option<PageInfo>) {
        self.owner.state.select_vips(scope)
    }

    fn vip(&self, i: usize, want: Want) -> Option<VipView> {
        self.owner.state.vip_view(i, want)
    }

    fn routes(
        &self,
        peer: usize,
        after: Option<&Prefix>,
        max: usize,
        out: &mut Vec<(Prefix, PathAttrs)>,
    ) {
        self.owner.speaker.routes(peer, after, max, out);
    }

    fn generation(&self) -> u64 {
        self.owner.state.generation()
    }
}

fn counts(m: crate::bgp::speaker::MessageCounters) -> crate::api::model::MsgCounts {
    crate::api::model::MsgCounts {
        open: m.open,
        update: m.update,
        notification: m.notification,
        keepalive: m.keepalive,
        route_refresh: m.route_refresh,
    }
}

pub(super) fn peer_view(p: crate::bgp::speaker::PeerStatus) -> crate::api::model::PeerView {
    let s = p.summary;
    crate::api::model::PeerView {
        name: p.name,
        address: p.address,
        peer_asn: p.asn,
        required: p.required,
        state: s.state.to_string(),
        established_for: p.uptime,
        last_error: s.last_error,
        notification_sent: s.last_notification_sent,
        notification_received: s.last_notification_received,
        received: counts(s.messages_in),
        sent: counts(s.messages_out),
        advertised: s.advertised,
        flaps: s.flaps,
        // Read a few at a time by /metrics (`Reading::routes`), never copied whole.
        routes: Vec::new(),
        // The owner's BFD driver fills it in.
        bfd: None,
    }
}

//! RFC 4271 §8 per-peer BGP finite state machine, sans-IO.
//!
//! [`Fsm::handle`] takes one [`Event`] and the current [`Timestamp`] and
//! returns the [`Action`]s the driver must carry out, in order. The FSM owns
//! no socket and reads no clock: timers are actions too
//! ([`Action::StartTimer`] / [`Action::StopTimer`]) and the driver feeds the
//! matching `*TimerExpires` event back when one fires. Restarting a running
//! timer is a `StartTimer` for it again: the driver replaces the old deadline.
//! A timer event for a timer the FSM does not consider running (a race
//! between a stop and a fire in the driver) is ignored.
//!
//! One `Fsm` models one TCP connection to the peer at a time. The messages a
//! driver feeds in (`BGPOpen`, `KeepAliveMsg`, ...) always belong to that
//! connection. In Connect and Active ([`Fsm::accepts_connection`]) an
//! inbound connection is simply handed over as `TcpConnectionConfirmed`
//! (abort the outbound attempt). In Idle inbound connections are refused.
//! From OpenSent on, an inbound connection is a RFC 4271 §6.8 collision
//! candidate with an FSM of its own ([`Fsm::collision_candidate`]); the
//! session's `PeerFsm` (`bgp::session`) runs the two and decides with
//! [`resolve_collision`] which stays, the loser getting
//! [`Event::OpenCollisionDump`].
//!
//! Behaviour beyond (or instead of) the RFC text, chosen for pathosd:
//!
//! * **First connect is immediate.** `ManualStart`/`AutomaticStart` on an
//!   active peer emits [`Action::Connect`] in the same call (GoBGP waits
//!   several seconds; the RFC only says "initiates a TCP connection").
//! * **Passive peers** (`PeerConfig::passive`) go to Active and wait for the
//!   peer's connection with no ConnectRetryTimer: they never emit `Connect`.
//! * **Peer oscillation damping** (RFC 4271 §8.1.1 leaves the method open;
//!   BIRD calls it `error wait time`): every error transition goes to Idle
//!   and starts the IdleHoldTimer with the current back-off, which then
//!   doubles from `PeerConfig::idle_hold_time` up to
//!   `PeerConfig::idle_hold_time_max` (1 s, 2 s, 4 s, ... 60 s by default).
//!   `IdleHoldTimerExpires` restarts the session like `AutomaticStart`. The
//!   back-off resets to its initial value on `ManualStart`.
//! * **A stable session restarts at once.** When a session that had been
//!   Established for at least `PeerConfig::stable_time` goes down, the
//!   IdleHoldTimer is started with zero (reconnect now) and the back-off
//!   resets, so the next error waits `idle_hold_time` again. A peer that
//!   was merely frozen for longer than the hold time, or restarted, gets
//!   its session back without waiting. The driver sets `stable_time` to the
//!   back-off cap: a peer that goes down after every such period is then
//!   redialled at most once per cap, the rate the capped back-off allows.
//! * **After a stall of our own, at once.** When an error comes while our
//!   KeepaliveTimer or HoldTimer is overdue by [`OWN_STALL`] or more, this
//!   process had not run (SIGSTOP, a blocked loop): the peer most likely
//!   dropped the session for our silence, and it is no peer oscillation.
//!   The IdleHoldTimer is started with zero and the back-off is left as
//!   it was.
//! * A TCP failure in OpenSent goes to Idle with back-off rather than to
//!   Active (RFC 4271 §8.2.2), so that a peer which closes the connection
//!   right after our OPEN is retried with growing delays.
//! * A NOTIFICATION received in OpenSent closes the connection without
//!   answering with an FSM-error NOTIFICATION: a NOTIFICATION is always
//!   followed by the sender closing the connection (RFC 4271 §4.5).
//! * `ManualStop` leaves the peer in Idle with no IdleHoldTimer until the next
//!   `ManualStart`; in OpenSent, OpenConfirm and Established it sends Cease /
//!   Administrative Shutdown with an optional RFC 9003 Shutdown Communication.
//!
//! Timers: ConnectRetryTimer `PeerConfig::connect_retry_time` (bounds a hung
//! outbound connect); HoldTimer 4 minutes in OpenSent, then the negotiated
//! hold time; KeepaliveTimer the negotiated keepalive; IdleHoldTimer the
//! back-off above (zero after a stable session); SendHoldTimer (RFC 9687)
//! `PeerConfig::send_hold_time`, running only while the driver reports
//! bytes waiting to be written ([`Event::WriteBlocked`]) and restarted by
//! each write that moves some ([`Event::WriteProgress`]).
//!
//! * **Send hold timer without a NOTIFICATION.** When the SendHoldTimer
//!   expires the connection is closed as after any error, but no
//!   NOTIFICATION is sent: it could only queue behind the bytes the peer
//!   does not take. The reason is kept as
//!   [`DownReason::SendHoldTimerExpired`] for the log and /status.
//!
//! This file holds what crosses the FSM's boundary (events, actions, the
//! peer's settings, the states) and [`Fsm::handle`]; `fsm/transitions.rs`
//! what each state does with each event; `fsm/timers.rs` the timers and the
//! back-off.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use super::types::Afi;
/// The FSM speaks the codec's NOTIFICATION type: it is plain numbers and
/// data, with no I/O behind it.
pub use super::wire::Notification;

mod timers;
mod transitions;

/// "A HoldTimer value of 4 minutes is suggested" for OpenSent (RFC 4271 §8.2.2).
pub const OPEN_SENT_HOLD_TIME: Duration = Duration::from_secs(240);

/// How late our own KeepaliveTimer or HoldTimer must be for the FSM to
/// take it that this process did not run (SIGSTOP, a frozen router, a
/// blocked loop) rather than that the peer failed.
///
/// Why 1 s: the driver fires these timers at most 50 ms late (the
/// runtime's slack), so 1 s late means the whole process stood still. And
/// every stall that costs the session is caught: the peer's HoldTimer
/// only expires after a hold time without our messages, and our
/// KEEPALIVE, due at most a keepalive (≤ hold time / 3) after the last
/// one, is then at least 2/3 of the hold time (≥ 2 s, the hold time being
/// 0 or ≥ 3 s) overdue. Such a failure is ours, not the peer's: the session
/// restarts at once, without the IdleHoldTimer back-off.
pub const OWN_STALL: Duration = Duration::from_secs(1);

/// Milliseconds since an origin the driver picks (e.g. daemon start). Only
/// differences are used, so any monotonic origin works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// `now` relative to `origin`, saturating (a clock can't go backwards
    /// here, but a mixed-up origin must not panic).
    pub fn since(origin: Instant, now: Instant) -> Timestamp {
        let ms = now.saturating_duration_since(origin).as_millis();
        Timestamp(u64::try_from(ms).unwrap_or(u64::MAX))
    }

    fn elapsed_since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

/// RFC 4271 §8.2.2 session states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Idle,
    Connect,
    Active,
    OpenSent,
    OpenConfirm,
    Established,
}

impl State {
    /// Lower-case name as shown in /status (GoBGP's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Connect => "connect",
            State::Active => "active",
            State::OpenSent => "opensent",
            State::OpenConfirm => "openconfirm",
            State::Established => "established",
        }
    }
}

/// The RFC 4271 §8 mandatory timers, the optional IdleHoldTimer used
/// for peer oscillation damping, and RFC 9687's SendHoldTimer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    ConnectRetry,
    Hold,
    Keepalive,
    IdleHold,
    /// RFC 9687: runs while bytes wait to be written and none move.
    SendHold,
}

impl Timer {
    pub const ALL: [Timer; 5] = [
        Timer::ConnectRetry,
        Timer::Hold,
        Timer::Keepalive,
        Timer::IdleHold,
        Timer::SendHold,
    ];

    /// The timer's place in a per-timer array (`[_; 5]`, in [`Timer::ALL`]'s
    /// order): the FSM's running flags, the driver's deadlines.
    pub fn index(self) -> usize {
        match self {
            Timer::ConnectRetry => 0,
            Timer::Hold => 1,
            Timer::Keepalive => 2,
            Timer::IdleHold => 3,
            Timer::SendHold => 4,
        }
    }

    /// The event the driver feeds when this timer fires.
    pub fn expiry(self) -> Event {
        match self {
            Timer::ConnectRetry => Event::ConnectRetryTimerExpires,
            Timer::Hold => Event::HoldTimerExpires,
            Timer::Keepalive => Event::KeepaliveTimerExpires,
            Timer::IdleHold => Event::IdleHoldTimerExpires,
            Timer::SendHold => Event::SendHoldTimerExpires,
        }
    }
}

/// RFC 9234 §4.1 BGP Roles, with their capability values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Provider = 0,
    /// Route Server.
    Rs = 1,
    RsClient = 2,
    Customer = 3,
    Peer = 4,
}

impl Role {
    /// The role the other side must have: RFC 9234 §4.2, Table 2.
    pub fn expected_peer(self) -> Role {
        match self {
            Role::Provider => Role::Customer,
            Role::Customer => Role::Provider,
            Role::Rs => Role::RsClient,
            Role::RsClient => Role::Rs,
            Role::Peer => Role::Peer,
        }
    }

    /// RFC 9234 §5: "If a route is to be advertised to a Customer, a Peer,
    /// or an RS-Client (when the sender is an RS), and the OTC Attribute is
    /// not present, then when advertising the route, an OTC Attribute MUST
    /// be added with a value equal to the AS number of the local AS." Our
    /// routes are our own and never carry one: added whenever the peer is
    /// one of those, that is when we are its Provider, Peer or RS.
    pub fn adds_otc(self) -> bool {
        matches!(self, Role::Provider | Role::Peer | Role::Rs)
    }
}

/// Capabilities (RFC 5492) of one side of the session, codec-independent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Capabilities {
    /// RFC 6793 Support for 4-octet AS number capability.
    pub four_octet_as: bool,
    /// RFC 4760 Multiprotocol Extensions for IPv4 unicast.
    pub mp_ipv4: bool,
    /// RFC 4760 Multiprotocol Extensions for IPv6 unicast.
    pub mp_ipv6: bool,
    /// RFC 2918 Route Refresh.
    pub route_refresh: bool,
    /// RFC 4724 Graceful Restart (receiving speaker only).
    pub graceful_restart: bool,
    /// RFC 8950 Extended Next Hop Encoding for IPv4 unicast with an IPv6
    /// next hop.
    pub extended_next_hop: bool,
    /// RFC 9234 BGP Role capability value: ours when configured, the
    /// peer's as received (any octet; differing ones as `ROLE_CONFLICT`).
    pub role: Option<u8>,
}

impl Capabilities {
    /// Whether this side can carry `afi` unicast. RFC 4760 §1: a speaker that
    /// advertises no Multiprotocol capability at all carries IPv4 unicast only.
    pub fn carries(&self, afi: Afi) -> bool {
        match afi {
            Afi::Ipv4 => self.mp_ipv4 || !self.mp_ipv6,
            Afi::Ipv6 => self.mp_ipv6,
        }
    }
}

/// The contents of an OPEN message, decoded or to be encoded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpenInfo {
    /// The speaker's AS, already resolved from the 4-octet AS capability when
    /// the 2-octet field held AS_TRANS (RFC 6793 §4.1).
    pub asn: u32,
    /// Proposed hold time in seconds.
    pub hold_time: u16,
    pub bgp_id: Ipv4Addr,
    pub capabilities: Capabilities,
}

/// RFC 4271 §8.1 events (names as in the RFC, minus the underscores), plus
/// RouteRefreshMsg (RFC 2918). Optional RFC events pathosd does not use
/// (DelayOpen, Tcp_CR_Invalid, ...) are left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Event 1: the operator (or config) starts the peer; resets the back-off.
    ManualStart,
    /// Event 2, with the optional RFC 9003 Shutdown Communication.
    ManualStop {
        shutdown_message: Option<String>,
    },
    /// Event 3: the daemon starts the peer (ignored while backing off).
    AutomaticStart,
    ConnectRetryTimerExpires,
    HoldTimerExpires,
    KeepaliveTimerExpires,
    IdleHoldTimerExpires,
    /// RFC 9687 SendHoldTimer_Expires: bytes waited to be written for the
    /// send hold time and none moved.
    SendHoldTimerExpires,
    /// Not an RFC event: the driver could not write all it has for this
    /// connection (the socket's send buffer is full, the peer does not
    /// read). Starts the SendHoldTimer unless it runs.
    WriteBlocked,
    /// Not an RFC event: a write on this connection moved bytes;
    /// `waiting`: some still wait. Restarts the SendHoldTimer, or stops it
    /// when nothing waits.
    WriteProgress {
        waiting: bool,
    },
    /// Event 17: the driver accepted the peer's connection.
    TcpConnectionConfirmed,
    /// Event 16: our outbound connection was established.
    TcpCrAcked,
    /// Event 18: the connection failed or was closed by the peer.
    TcpConnectionFails,
    /// Event 19: a syntactically valid OPEN (the FSM then applies the
    /// semantic checks of RFC 4271 §6.2 it owns: AS, identifier, hold time).
    BGPOpen(OpenInfo),
    /// Event 21: the codec found a header error; the NOTIFICATION to send.
    BGPHeaderErr(Notification),
    /// Event 22: the codec found an OPEN error; the NOTIFICATION to send.
    BGPOpenMsgErr(Notification),
    /// Event 23: this connection lost a collision (RFC 4271 §6.8).
    OpenCollisionDump,
    /// Event 24: a NOTIFICATION with Unsupported Version Number was received.
    NotifMsgVerErr,
    /// Event 25: any other NOTIFICATION was received.
    NotifMsg(Notification),
    /// Event 26.
    KeepAliveMsg,
    /// Event 27: a valid UPDATE (its routes are ignored: pathosd only originates).
    UpdateMsg,
    /// Event 28: the codec found an UPDATE error that resets the session
    /// (RFC 7606 treat-as-withdraw errors are not events).
    UpdateMsgErr(Notification),
    /// RFC 2918 ROUTE-REFRESH for a family.
    RouteRefreshMsg(Afi),
    /// The neighbor's BFD session went from Up to Down (RFC 5882 §4.2.1:
    /// "action SHOULD be taken in the control protocol"). Not one of RFC
    /// 4271's events: it ends a connection that is up as a detected error
    /// does, and does nothing without one.
    BfdDown,
}

/// Why a session left Established (or why the last attempt failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownReason {
    ManualStop,
    /// The TCP connection failed or was closed without a NOTIFICATION.
    ConnectionFailed,
    HoldTimerExpired,
    /// RFC 9687: the peer took none of our bytes for the send hold time.
    /// No NOTIFICATION was sent: it could only have queued behind the
    /// bytes the peer does not read.
    SendHoldTimerExpired,
    /// We detected an error and sent this NOTIFICATION.
    NotificationSent(Notification),
    /// The peer sent this NOTIFICATION.
    NotificationReceived(Notification),
    /// This connection lost a collision (RFC 4271 §6.8).
    CollisionDump,
}

/// What a session agreed on; the input for the codec's context and RIB-out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// Seconds; 0 means no HoldTimer and no KEEPALIVEs (RFC 4271 §4.4).
    pub hold_time: u16,
    /// Seconds between our KEEPALIVEs; 0 when `hold_time` is 0.
    pub keepalive: u16,
    /// Both sides sent the 4-octet AS capability (RFC 6793).
    pub four_octet_as: bool,
    /// Unicast families both sides carry.
    pub families: Vec<Afi>,
    pub route_refresh: bool,
    /// The peer advertised Graceful Restart (RFC 4724).
    pub peer_graceful_restart: bool,
    /// Both sides sent Extended Next Hop Encoding for IPv4 unicast (RFC
    /// 8950): IPv4 routes go with the IPv6 next hop.
    pub extended_next_hop: bool,
    pub peer_as: u32,
    pub peer_id: Ipv4Addr,
    /// The peer is in another AS (RFC 4271 §8.2.2 "external" connection).
    pub ebgp: bool,
}

/// What the driver must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Open the outbound TCP connection (keep listening for the peer's).
    Connect,
    /// Close the connection, or abort the connect attempt, if there is one.
    DropConnection,
    SendOpen(OpenInfo),
    SendKeepalive,
    SendNotification(Notification),
    /// (Re)start the timer: any earlier deadline of the same timer is replaced.
    StartTimer(Timer, Duration),
    StopTimer(Timer),
    SessionEstablished(Negotiated),
    SessionDown(DownReason),
    /// The peer asked for our routes of this family again (RFC 2918).
    ResendRoutes(Afi),
}

/// Per-peer settings the FSM needs (built from pathosd's neighbor config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerConfig {
    pub local_as: u32,
    /// The configured `peer_asn`; the OPEN must carry it.
    pub peer_as: u32,
    /// Our BGP Identifier (`router_id`).
    pub router_id: Ipv4Addr,
    /// Proposed hold time in seconds (0 disables; 1 and 2 are raised to 3).
    pub hold_time: u16,
    /// Configured keepalive in seconds; `None` = negotiated hold time / 3.
    pub keepalive_time: Option<u16>,
    /// Never connect; wait in Active for the peer to connect.
    pub passive: bool,
    pub capabilities: Capabilities,
    pub connect_retry_time: Duration,
    /// First IdleHoldTimer after an error (the neighbor's `error_wait_min`).
    pub idle_hold_time: Duration,
    /// Cap of the doubling IdleHoldTimer (the neighbor's `error_wait_max`).
    pub idle_hold_time_max: Duration,
    /// A session Established this long is stable: when it goes down the
    /// session restarts at once and the back-off resets.
    pub stable_time: Duration,
    /// RFC 9687 SendHoldTime: how long bytes may wait to be written with
    /// none moving before the connection is closed; zero: never.
    pub send_hold_time: Duration,
    /// Our RFC 9234 role towards this (eBGP) peer; `capabilities.role`
    /// carries it in the OPEN.
    pub role: Option<Role>,
    /// RFC 9234 §4.2 strict mode: a peer without the Role capability is
    /// rejected too.
    pub require_role: bool,
}

impl PeerConfig {
    /// Defaults: hold 90 s (GoBGP's), keepalive hold/3, active, 4-octet AS,
    /// IPv4 unicast, route refresh; ConnectRetry 30 s; back-off 1 s..60 s;
    /// a session Established for 60 s restarts at once when it goes down.
    pub fn new(local_as: u32, peer_as: u32, router_id: Ipv4Addr) -> PeerConfig {
        PeerConfig {
            local_as,
            peer_as,
            router_id,
            hold_time: 90,
            keepalive_time: None,
            passive: false,
            capabilities: Capabilities {
                four_octet_as: true,
                mp_ipv4: true,
                mp_ipv6: false,
                route_refresh: true,
                graceful_restart: false,
                extended_next_hop: false,
                role: None,
            },
            connect_retry_time: Duration::from_secs(30),
            idle_hold_time: Duration::from_secs(1),
            idle_hold_time_max: Duration::from_secs(60),
            stable_time: Duration::from_secs(60),
            send_hold_time: default_send_hold_time(90),
            role: None,
            require_role: false,
        }
    }

    pub(crate) fn is_ebgp(&self) -> bool {
        self.local_as != self.peer_as
    }

    /// RFC 4271 §4.2: the Hold Time "MUST be either zero or at least three
    /// seconds", so a configured 1 or 2 is raised to 3.
    pub fn effective_hold_time(&self) -> u16 {
        match self.hold_time {
            1 | 2 => 3,
            h => h,
        }
    }

    /// The OPEN we send: entirely determined by the configuration.
    pub fn open(&self) -> OpenInfo {
        OpenInfo {
            asn: self.local_as,
            hold_time: self.effective_hold_time(),
            bgp_id: self.router_id,
            capabilities: self.capabilities,
        }
    }
}

/// RFC 9687 §3.4: "The suggested default value for SendHoldTime is the
/// greater of 8 minutes or 2 times HoldTime." `hold_time` is the configured
/// one, in seconds: the negotiated hold time is never larger, so the
/// default also keeps §3.4's "SendHoldTime MUST be greater than the value
/// of HoldTime".
pub fn default_send_hold_time(hold_time: u16) -> Duration {
    Duration::from_secs(u64::from(hold_time).saturating_mul(2).max(480))
}

/// Which end opened a TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionOrigin {
    /// We connected to the peer.
    Local,
    /// The peer connected to us.
    Remote,
}

/// RFC 4271 §6.8 connection collision resolution: which of two connections to
/// the same peer to keep, once the OPEN on the newer one has been received.
/// `existing` is the connection that was there first and whether it is
/// Established; the other one is dumped with Cease / Connection Collision
/// Resolution ([`Event::OpenCollisionDump`]).
pub fn resolve_collision(
    existing: ConnectionOrigin,
    existing_established: bool,
    local_id: Ipv4Addr,
    local_as: u32,
    remote_id: Ipv4Addr,
    remote_as: u32,
) -> ConnectionOrigin {
    // RFC 4271 §6.8: "a connection collision with an existing BGP connection
    // that is in the Established state causes closing of the newly created
    // connection."
    if existing_established {
        return existing;
    }
    // RFC 4271 §6.8: "Comparing BGP Identifiers is done by converting them to
    // host byte order and treating them as 4-octet unsigned integers. If the
    // value of the local BGP Identifier is less than the remote one, the local
    // system closes the BGP connection that already exists ... and accepts
    // the BGP connection initiated by the remote system": the connection
    // opened by the speaker with the larger identifier survives.
    let local = u32::from(local_id);
    let remote = u32::from(remote_id);
    if local != remote {
        return if local < remote {
            ConnectionOrigin::Remote
        } else {
            ConnectionOrigin::Local
        };
    }
    // RFC 6286 §2.3: "If the BGP Identifiers of the peers involved in the
    // connection collision are identical, then the connection initiated by
    // the BGP speaker with the larger AS number is preserved."
    if local_as < remote_as {
        ConnectionOrigin::Remote
    } else {
        ConnectionOrigin::Local
    }
}

/// The per-peer state machine. See the module documentation.
#[derive(Debug, Clone)]
pub struct Fsm {
    config: PeerConfig,
    state: State,
    /// Per timer: when it is due, while it runs.
    running: [Option<Timestamp>; 5],
    /// The time of the event being handled (timers started by it count
    /// from it).
    clock: Timestamp,
    /// How late our own timers were when the event being handled came,
    /// if that shows this process did not run (see [`OWN_STALL`]).
    stalled: Option<Duration>,
    /// ManualStop was the last start/stop event: no automatic restart.
    stopped: bool,
    /// IdleHoldTimer duration for the next error.
    backoff: Duration,
    established_at: Option<Timestamp>,
    peer_open: Option<OpenInfo>,
    negotiated: Option<Negotiated>,
    last_down: Option<DownReason>,
}

impl Fsm {
    /// A peer in Idle; nothing happens until `ManualStart`/`AutomaticStart`.
    pub fn new(config: PeerConfig) -> Fsm {
        let backoff = config.idle_hold_time;
        Fsm {
            config,
            state: State::Idle,
            running: [None; 5],
            clock: Timestamp(0),
            stalled: None,
            stopped: false,
            backoff,
            established_at: None,
            peer_open: None,
            negotiated: None,
            last_down: None,
        }
    }

    /// An FSM for a second, inbound connection that arrived while the peer's
    /// FSM is past Active (RFC 4271 §6.8): it has sent our OPEN on that
    /// connection and waits in OpenSent. See the module documentation.
    pub fn collision_candidate(config: PeerConfig, now: Timestamp) -> (Fsm, Vec<Action>) {
        let passive = config.passive;
        let mut fsm = Fsm::new(PeerConfig {
            passive: true,
            ..config
        });
        let mut actions = fsm.handle(Event::ManualStart, now);
        actions.extend(fsm.handle(Event::TcpConnectionConfirmed, now));
        // Once it wins, it restarts after errors like the peer's own FSM.
        fsm.config.passive = passive;
        (fsm, actions)
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn config(&self) -> &PeerConfig {
        &self.config
    }

    /// The peer's accepted OPEN on the current connection (OpenConfirm and
    /// Established), e.g. for collision resolution.
    pub fn peer_open(&self) -> Option<&OpenInfo> {
        self.peer_open.as_ref()
    }

    /// What the current session negotiated (OpenConfirm and Established).
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    /// Why the last session or attempt ended, for /status and logs.
    pub fn last_down_reason(&self) -> Option<&DownReason> {
        self.last_down.as_ref()
    }

    pub fn is_running(&self, timer: Timer) -> bool {
        self.running[timer.index()].is_some()
    }

    /// How long this process had not run when the last event came, if its
    /// KeepaliveTimer or HoldTimer was overdue by at least [`OWN_STALL`]
    /// then (the driver logs it when the session went down).
    pub fn stalled(&self) -> Option<Duration> {
        self.stalled
    }

    /// The IdleHoldTimer the next error would start (for the replay tests).
    #[cfg(any(test, feature = "test-support"))]
    pub fn next_idle_hold(&self) -> Duration {
        self.backoff
    }

    /// Whether the driver should hand an inbound connection to this FSM as
    /// `TcpConnectionConfirmed`. In Idle the RFC 4271 §8.2.2 FSM "refuses all
    /// incoming BGP connections for this peer"; in OpenSent and later an inbound connection
    /// is a collision candidate the session's `PeerFsm` tracks.
    pub fn accepts_connection(&self) -> bool {
        matches!(self.state, State::Connect | State::Active)
    }

    /// Feeds one event; returns the actions to perform in order.
    pub fn handle(&mut self, event: Event, now: Timestamp) -> Vec<Action> {
        let mut out = Vec::new();
        self.clock = now;
        self.stalled = self.overdue(now).filter(|late| *late >= OWN_STALL);
        // A stale fire (the driver raced a StopTimer) is dropped here, so no
        // state ever sees it.
        if !self.timer_fired(&event) {
            return out;
        }
        match self.state {
            State::Idle => self.idle(event, &mut out),
            State::Connect => self.connect(event, now, &mut out),
            State::Active => self.active(event, now, &mut out),
            State::OpenSent => self.open_sent(event, now, &mut out),
            State::OpenConfirm => self.open_confirm(event, now, &mut out),
            State::Established => self.established(event, now, &mut out),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collision_keeps_the_larger_identifiers_connection() {
        let lo = Ipv4Addr::new(10, 0, 0, 1);
        let hi = Ipv4Addr::new(10, 0, 0, 2);
        use ConnectionOrigin::*;
        assert_eq!(resolve_collision(Local, false, lo, 1, hi, 2), Remote);
        assert_eq!(resolve_collision(Remote, false, hi, 1, lo, 2), Local);
        // Equal identifiers (eBGP, RFC 6286): the larger AS wins.
        assert_eq!(resolve_collision(Local, false, lo, 1, lo, 2), Remote);
        assert_eq!(resolve_collision(Local, false, lo, 3, lo, 2), Local);
        // An Established connection always stays.
        assert_eq!(resolve_collision(Local, true, lo, 1, hi, 2), Local);
    }
}

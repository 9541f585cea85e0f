//! A small ubusd for tests: Debian has no ubusd, so integration tests run the client
//! against this broker, which follows the rules the recorded ubusd traffic shows
//! (tests/vectors/ubus/*.hex; ubusd_proto.c, ubusd_event.c):
//!
//! * HELLO with a fresh random client id right after accept.
//! * ADD_OBJECT -> DATA {OBJID[, OBJTYPE]} + STATUS 0; a taken or denied path -> STATUS 2.
//! * LOOKUP (one path, or all named objects) -> one DATA per object + STATUS 0, or 4.
//! * INVOKE -> forwarded to the owner with peer = caller id and USER/GROUP added; the
//!   owner's DATA/STATUS (peer = caller) are relayed with peer rewritten to the objid,
//!   after checking the sender owns the OBJID. Unknown object -> 4, denied -> 6.
//!   ubusd does not check method names: the owner answers 3 itself.
//! * Object 1 (events): `register` {object, pattern} and `send` {id, data}; delivery is
//!   an INVOKE with peer 0 and ubusd's own event seq. ubusd's own events
//!   `ubus.object.add` / `ubus.object.remove` {id, path} for objects with a path.
//! * SUBSCRIBE / UNSUBSCRIBE {OBJID: subscriber, TARGET} -> STATUS (0; 4 for an
//!   unknown object, 2 for a subscriber of another client or a target of the
//!   same one); the target's owner gets NOTIFY {OBJID, ACTIVE} when its first
//!   subscriber comes and its last goes (ubus_notify_subscription).
//! * NOTIFY {OBJID, METHOD, DATA[, NO_REPLY]} from the object's owner: without
//!   NO_REPLY a STATUS {OBJID, SUBSCRIBERS, STATUS 0} first; then to each
//!   subscriber an INVOKE with the NOTIFY's seq, peer = the notifier's client id,
//!   {[NO_REPLY 1], OBJID: subscriber, METHOD, USER, GROUP, DATA}
//!   (ubusd_handle_notify). A removed target sends each subscriber
//!   UNSUBSCRIBE {OBJID, TARGET} (ubus_notify_unsubscribe).
//! * Reading a client (`client_cb` in ubusd_main.c): when the broker comes to a
//!   readable socket it reads and handles every message there, in order, until none
//!   is left; but once the client's end is closed it reads nothing more and frees
//!   the client, with whatever it had not read (uloop sets `sock->eof` from
//!   EPOLLRDHUP, and `client_cb` then skips the read). A client that writes and
//!   closes before the broker came to its socket is not heard. How long the broker
//!   takes to come is [`BrokerConfig::latency`].
//!
//! Every reply ubusd makes itself copies the request's seq and peer.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, Read};
use std::os::unix::net::{UnixListener as StdUnixListener, UnixStream as StdUnixStream};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use smol::channel::{self, Receiver, Sender};
use smol::io::AsyncWriteExt;
use smol::{future, Async, LocalExecutor, Timer};

use pathosd::ubus::blob::{table_to_json, BlobValue, Table};
use pathosd::ubus::msg::{
    Attr, FrameBuf, Message, MsgType, UbusStatus, UBUS_SYSTEM_OBJECT_EVENT, UBUS_SYSTEM_OBJECT_MAX,
};

/// What the broker refuses, standing in for ubusd's ACL files.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// (object path, method) pairs whose INVOKE is answered PERMISSION_DENIED; they are
    /// also left out of LOOKUP signatures, as ubusd does for callers without access.
    pub deny_invoke: Vec<(String, String)>,
    /// Object paths whose ADD_OBJECT is refused (STATUS 2, like a missing `publish`).
    pub deny_publish: Vec<String>,
    /// What the forwarded INVOKE carries as UBUS_ATTR_USER / UBUS_ATTR_GROUP.
    pub user: String,
    pub group: String,
    /// How long the broker takes to come to a client's socket once it is
    /// readable: a ubusd busy with its other clients, or sharing a router's one
    /// CPU with the writer, gets there after the writer went on (and maybe
    /// closed). Zero: at once.
    pub latency: Duration,
}

impl Default for BrokerConfig {
    fn default() -> BrokerConfig {
        BrokerConfig {
            deny_invoke: Vec::new(),
            deny_publish: Vec::new(),
            user: "root".to_string(),
            group: "root".to_string(),
            latency: Duration::ZERO,
        }
    }
}

/// A running broker on its own thread. Dropping it (or [`Broker::stop`]) closes every
/// client connection and removes the socket, as when ubusd dies.
pub struct Broker {
    path: PathBuf,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
    events: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Broker {
    /// Binds `path` (replacing a stale socket file) before returning, so clients can
    /// connect as soon as this returns.
    pub fn start(path: &Path, config: BrokerConfig) -> io::Result<Broker> {
        let _ = std::fs::remove_file(path);
        let std_listener = StdUnixListener::bind(path)?;
        let (stop_tx, stop_rx) = channel::bounded::<()>(1);
        let events = Arc::new(Mutex::new(Vec::new()));
        let ev2 = events.clone();
        let thread = std::thread::Builder::new()
            .name("ubus-broker".into())
            .spawn(move || {
                let ex = LocalExecutor::new();
                let latency = config.latency;
                let state = Rc::new(RefCell::new(State::new(config, ev2)));
                let res = smol::block_on(ex.run(async {
                    let listener = Async::new(std_listener)?;
                    let accept = async {
                        loop {
                            let (s, _) = listener.accept().await?;
                            ex.spawn(connection(state.clone(), Arc::new(s), latency))
                                .detach();
                        }
                    };
                    future::or(accept, async {
                        let _ = stop_rx.recv().await;
                        Ok::<(), io::Error>(())
                    })
                    .await
                }));
                if let Err(e) = res {
                    log::warn!("ubus broker: {e}");
                }
                // Dropping the executor drops every connection task and its stream.
                drop(ex);
            })?;
        Ok(Broker {
            path: path.to_path_buf(),
            stop: Some(stop_tx),
            thread: Some(thread),
            events,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every event sent through object 1 so far: (id, data).
    pub fn sent_events(&self) -> Vec<(String, Value)> {
        self.events.lock().map(|g| g.clone()).unwrap_or_default()
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.try_send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Object {
    client: u32,
    path: Option<String>,
    objtype: Option<u32>,
    signature: Table,
}

struct Listener {
    objid: u32,
    pattern: String,
}

struct State {
    config: BrokerConfig,
    clients: HashMap<u32, Sender<Vec<u8>>>,
    objects: HashMap<u32, Object>,
    listeners: Vec<Listener>,
    /// (target, subscriber) object ids, newest first (ubusd's list_add).
    subs: Vec<(u32, u32)>,
    event_seq: u16,
    rng: u32,
    next_type: u32,
    events: Arc<Mutex<Vec<(String, Value)>>>,
}

impl State {
    fn new(config: BrokerConfig, events: Arc<Mutex<Vec<(String, Value)>>>) -> State {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        State {
            config,
            clients: HashMap::new(),
            objects: HashMap::new(),
            listeners: Vec::new(),
            subs: Vec::new(),
            event_seq: 0,
            rng: (nanos ^ std::process::id().rotate_left(16)) | 1,
            next_type: 0,
            events,
        }
    }

    /// ubusd hands out random 32-bit ids (ubus_alloc_id); so do we, so that clients
    /// never rely on small or sequential ids.
    fn random_id(&mut self) -> u32 {
        loop {
            let mut x = self.rng;
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            self.rng = x;
            if x >= UBUS_SYSTEM_OBJECT_MAX
                && !self.clients.contains_key(&x)
                && !self.objects.contains_key(&x)
            {
                return x;
            }
        }
    }

    fn send(&self, client: u32, m: &Message) {
        if let (Some(tx), Ok(bytes)) = (self.clients.get(&client), m.encode()) {
            let _ = tx.try_send(bytes);
        }
    }

    fn status(&self, client: u32, req: &Message, st: UbusStatus) {
        self.send(
            client,
            &Message::status_msg(req.header.seq, req.header.peer, st, None),
        );
    }

    fn denied(&self, path: Option<&str>, method: &str) -> bool {
        path.is_some_and(|p| {
            self.config
                .deny_invoke
                .iter()
                .any(|(dp, dm)| dp == p && dm == method)
        })
    }

    fn drop_client(&mut self, id: u32) {
        self.clients.remove(&id);
        let gone: Vec<u32> = self
            .objects
            .iter()
            .filter(|(_, o)| o.client == id)
            .map(|(k, _)| *k)
            .collect();
        for k in &gone {
            self.forget_object(*k);
        }
    }

    /// An object goes (REMOVE_OBJECT or its client's end): its listens and
    /// subscriptions with it, each subscriber told, and ubusd's event.
    fn forget_object(&mut self, id: u32) {
        let Some(o) = self.objects.remove(&id) else {
            return;
        };
        self.listeners.retain(|l| l.objid != id);
        let (lost, kept): (Vec<_>, Vec<_>) =
            self.subs.iter().partition(|(t, s)| *t == id || *s == id);
        self.subs = kept;
        for (t, sub) in lost {
            if t == id {
                if let Some(c) = self.objects.get(&sub).map(|o| o.client) {
                    let m = Message::new(
                        MsgType::Unsubscribe,
                        0,
                        0,
                        vec![Attr::ObjId(sub), Attr::Target(t)],
                    );
                    self.send(c, &m);
                }
            } else {
                self.tell_active(t);
            }
        }
        if let Some(p) = o.path {
            self.deliver("ubus.object.remove", &obj_event(id, &p));
        }
    }

    /// NOTIFY {OBJID, ACTIVE} to the owner of `target`.
    fn tell_active(&self, target: u32) {
        let Some(owner) = self.objects.get(&target).map(|o| o.client) else {
            return;
        };
        let active = u8::from(self.subs.iter().any(|(t, _)| *t == target));
        let m = Message::new(
            MsgType::Notify,
            0,
            0,
            vec![Attr::ObjId(target), Attr::Active(active)],
        );
        self.send(owner, &m);
    }

    fn subscribe(&mut self, client: u32, m: &Message, on: bool) {
        let target = m.attrs.iter().find_map(|a| match a {
            Attr::Target(t) => Some(*t),
            _ => None,
        });
        let (Some(sub), Some(target)) = (m.objid(), target) else {
            return self.status(client, m, UbusStatus::InvalidArgument);
        };
        match self.objects.get(&sub) {
            None => return self.status(client, m, UbusStatus::NotFound),
            Some(o) if o.client != client => {
                return self.status(client, m, UbusStatus::InvalidArgument)
            }
            Some(_) => {}
        }
        if !on {
            let had = self.subs.len();
            self.subs.retain(|p| *p != (target, sub));
            if self.subs.len() == had {
                return self.status(client, m, UbusStatus::NotFound);
            }
            self.tell_active(target);
            return self.status(client, m, UbusStatus::Ok);
        }
        match self.objects.get(&target) {
            None => self.status(client, m, UbusStatus::NotFound),
            Some(o) if o.client == client => self.status(client, m, UbusStatus::InvalidArgument),
            Some(_) => {
                let first = !self.subs.iter().any(|(t, _)| *t == target);
                self.subs.insert(0, (target, sub));
                if first {
                    self.tell_active(target);
                }
                self.status(client, m, UbusStatus::Ok);
            }
        }
    }

    fn notify(&mut self, client: u32, m: &Message) {
        let (Some(id), Some(method)) = (m.objid(), m.method().map(str::to_string)) else {
            return self.status(client, m, UbusStatus::InvalidArgument);
        };
        let no_reply = m
            .attrs
            .iter()
            .any(|a| matches!(a, Attr::NoReply(n) if *n != 0));
        match self.objects.get(&id) {
            None => return self.status(client, m, UbusStatus::NotFound),
            Some(o) if o.client != client => {
                return self.status(client, m, UbusStatus::PermissionDenied)
            }
            Some(_) => {}
        }
        let subs: Vec<u32> = self
            .subs
            .iter()
            .filter(|(t, _)| *t == id)
            .map(|(_, s)| *s)
            .collect();
        if !no_reply {
            let st = Message::new(
                MsgType::Status,
                m.header.seq,
                m.header.peer,
                vec![
                    Attr::ObjId(id),
                    Attr::Subscribers(
                        subs.iter()
                            .map(|s| Attr::Unknown {
                                extended: false,
                                id: 0,
                                payload: s.to_be_bytes().to_vec(),
                            })
                            .collect(),
                    ),
                    Attr::Status(0),
                ],
            );
            self.send(client, &st);
        }
        for sub in subs {
            let Some(owner) = self.objects.get(&sub).map(|o| o.client) else {
                continue;
            };
            let mut attrs = Vec::new();
            if no_reply {
                attrs.push(Attr::NoReply(1));
            }
            attrs.extend([
                Attr::ObjId(sub),
                Attr::Method(method.clone()),
                Attr::User(self.config.user.clone()),
                Attr::Group(self.config.group.clone()),
            ]);
            if let Some(d) = m.data() {
                attrs.push(Attr::Data(d.clone()));
            }
            self.send(
                owner,
                &Message::new(MsgType::Invoke, m.header.seq, client, attrs),
            );
        }
    }

    /// An event to every listener whose pattern matches `name`.
    fn deliver(&mut self, name: &str, body: &Table) {
        let targets: Vec<u32> = self
            .listeners
            .iter()
            .filter(|l| match l.pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == l.pattern,
            })
            .map(|l| l.objid)
            .collect();
        for objid in targets {
            let Some(owner) = self.objects.get(&objid).map(|o| o.client) else {
                continue;
            };
            self.event_seq = self.event_seq.wrapping_add(1);
            let m = Message::new(
                MsgType::Invoke,
                self.event_seq,
                0,
                vec![
                    Attr::ObjId(objid),
                    Attr::Method(name.to_string()),
                    Attr::Data(body.clone()),
                ],
            );
            self.send(owner, &m);
        }
    }

    fn handle(&mut self, client: u32, m: Message) {
        match m.header.ty {
            MsgType::Hello => {}
            // ubusd_handle_ping echoes the message.
            MsgType::Ping => self.send(client, &m),
            MsgType::Lookup => self.lookup(client, &m),
            MsgType::AddObject => self.add_object(client, &m),
            MsgType::RemoveObject => self.remove_object(client, &m),
            MsgType::Invoke => self.invoke(client, m),
            MsgType::Status | MsgType::Data => self.response(client, m),
            MsgType::Subscribe => self.subscribe(client, &m, true),
            MsgType::Unsubscribe => self.subscribe(client, &m, false),
            MsgType::Notify => self.notify(client, &m),
            MsgType::Monitor => self.status(client, &m, UbusStatus::NotSupported),
            MsgType::Unknown(_) => self.status(client, &m, UbusStatus::InvalidCommand),
        }
    }

    fn object_data(&self, req: &Message, id: u32, o: &Object) -> Message {
        let mut attrs = Vec::new();
        if let Some(p) = &o.path {
            attrs.push(Attr::ObjPath(p.clone()));
        }
        attrs.push(Attr::ObjId(id));
        if let Some(t) = o.objtype {
            attrs.push(Attr::ObjType(t));
        }
        let sig: Table = o
            .signature
            .iter()
            .filter(|(meth, _)| !self.denied(o.path.as_deref(), meth))
            .cloned()
            .collect();
        attrs.push(Attr::Signature(sig));
        Message::new(MsgType::Data, req.header.seq, req.header.peer, attrs)
    }

    fn lookup(&self, client: u32, req: &Message) {
        let mut found: Vec<(u32, &Object)> = self
            .objects
            .iter()
            .filter(|(_, o)| match (req.objpath(), &o.path) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(want), Some(p)) => match want.strip_suffix('*') {
                    Some(prefix) => p.starts_with(prefix),
                    None => p == want,
                },
            })
            .map(|(k, o)| (*k, o))
            .collect();
        if found.is_empty() && req.objpath().is_some() {
            return self.status(client, req, UbusStatus::NotFound);
        }
        found.sort_by(|a, b| a.1.path.cmp(&b.1.path));
        for (id, o) in found {
            self.send(client, &self.object_data(req, id, o));
        }
        self.status(client, req, UbusStatus::Ok);
    }

    fn add_object(&mut self, client: u32, req: &Message) {
        let path = req.objpath().map(str::to_string);
        if let Some(p) = &path {
            let taken = self.objects.values().any(|o| o.path.as_ref() == Some(p));
            if taken || self.config.deny_publish.contains(p) {
                return self.status(client, req, UbusStatus::InvalidArgument);
            }
        }
        let signature = req.signature().cloned();
        let objtype = if path.is_some() || signature.is_some() {
            self.next_type = self.next_type.wrapping_add(1);
            Some(0x1000_0000 | self.next_type)
        } else {
            None
        };
        let id = self.random_id();
        let mut attrs = vec![Attr::ObjId(id)];
        if let Some(t) = objtype {
            attrs.push(Attr::ObjType(t));
        }
        self.objects.insert(
            id,
            Object {
                client,
                path,
                objtype,
                signature: signature.unwrap_or_default(),
            },
        );
        // ubusd sends its event while creating the object, before the reply.
        if let Some(p) = self.objects.get(&id).and_then(|o| o.path.clone()) {
            self.deliver("ubus.object.add", &obj_event(id, &p));
        }
        self.send(
            client,
            &Message::new(MsgType::Data, req.header.seq, req.header.peer, attrs),
        );
        self.status(client, req, UbusStatus::Ok);
    }

    fn remove_object(&mut self, client: u32, req: &Message) {
        let Some(id) = req.objid() else {
            return self.status(client, req, UbusStatus::InvalidArgument);
        };
        match self.objects.get(&id) {
            None => self.status(client, req, UbusStatus::NotFound),
            Some(o) if o.client != client => self.status(client, req, UbusStatus::PermissionDenied),
            Some(o) => {
                let mut attrs = vec![Attr::ObjId(id)];
                if let Some(t) = o.objtype {
                    attrs.push(Attr::ObjType(t));
                }
                self.send(
                    client,
                    &Message::new(MsgType::Data, req.header.seq, req.header.peer, attrs),
                );
                self.forget_object(id);
                self.status(client, req, UbusStatus::Ok);
            }
        }
    }

    fn invoke(&mut self, client: u32, req: Message) {
        let Some(id) = req.objid() else {
            return self.status(client, &req, UbusStatus::InvalidArgument);
        };
        let Some(method) = req.method().map(str::to_string) else {
            return self.status(client, &req, UbusStatus::InvalidArgument);
        };
        if id == UBUS_SYSTEM_OBJECT_EVENT {
            let st = self.event_call(client, &method, req.data());
            return self.status(client, &req, st);
        }
        let Some(obj) = self.objects.get(&id) else {
            return self.status(client, &req, UbusStatus::NotFound);
        };
        if self.denied(obj.path.as_deref(), &method) {
            return self.status(client, &req, UbusStatus::PermissionDenied);
        }
        let mut attrs = vec![
            Attr::ObjId(id),
            Attr::Method(method),
            Attr::User(self.config.user.clone()),
            Attr::Group(self.config.group.clone()),
        ];
        if let Some(d) = req.data() {
            attrs.push(Attr::Data(d.clone()));
        }
        let fwd = Message::new(MsgType::Invoke, req.header.seq, client, attrs);
        self.send(obj.client, &fwd);
    }

    /// ubusd_handle_response: the sender must own OBJID; relay to the caller named by
    /// `peer` with `peer` rewritten to the object id. Anything else is dropped silently.
    fn response(&mut self, client: u32, mut m: Message) {
        let Some(id) = m.objid() else { return };
        if self.objects.get(&id).map(|o| o.client) != Some(client) {
            return;
        }
        let caller = m.header.peer;
        m.header.peer = id;
        self.send(caller, &m);
    }

    fn event_call(&mut self, client: u32, method: &str, data: Option<&Table>) -> UbusStatus {
        let empty = Vec::new();
        let data = data.unwrap_or(&empty);
        let get = |k: &str| data.iter().find(|(n, _)| n == k).map(|(_, v)| v);
        match method {
            "register" => {
                let (Some(obj), Some(BlobValue::String(pattern))) = (get("object"), get("pattern"))
                else {
                    return UbusStatus::InvalidArgument;
                };
                let Some(objid) = obj.as_i64().map(|v| v as u32) else {
                    return UbusStatus::InvalidArgument;
                };
                match self.objects.get(&objid) {
                    None => UbusStatus::NotFound,
                    Some(o) if o.client != client => UbusStatus::PermissionDenied,
                    Some(_) => {
                        self.listeners.push(Listener {
                            objid,
                            pattern: pattern.clone(),
                        });
                        UbusStatus::Ok
                    }
                }
            }
            "send" => {
                let (Some(BlobValue::String(name)), Some(BlobValue::Table(body))) =
                    (get("id"), get("data"))
                else {
                    return UbusStatus::InvalidArgument;
                };
                if let Ok(mut log) = self.events.lock() {
                    log.push((name.clone(), table_to_json(body)));
                }
                let (name, body) = (name.clone(), body.clone());
                self.deliver(&name, &body);
                UbusStatus::Ok
            }
            _ => UbusStatus::InvalidCommand,
        }
    }
}

/// ubusd's `ubus.object.add` / `.remove` data (ubusd_create_object_event_msg).
fn obj_event(id: u32, path: &str) -> Table {
    vec![
        ("id".to_string(), BlobValue::Int32(id as i32)),
        ("path".to_string(), BlobValue::str(path)),
    ]
}

async fn connection(
    state: Rc<RefCell<State>>,
    stream: Arc<Async<StdUnixStream>>,
    latency: Duration,
) {
    let (tx, rx) = channel::unbounded::<Vec<u8>>();
    let id = {
        let mut st = state.borrow_mut();
        let id = st.random_id();
        st.clients.insert(id, tx);
        st.send(id, &Message::hello(id));
        id
    };
    let reader = read_loop(state.clone(), id, stream.clone(), latency);
    let writer = write_loop(rx, stream);
    // Either side failing ends the client, as ubusd's ubusd_client_free does.
    future::or(reader, writer).await;
    state.borrow_mut().drop_client(id);
}

async fn write_loop(rx: Receiver<Vec<u8>>, stream: Arc<Async<StdUnixStream>>) {
    while let Ok(b) = rx.recv().await {
        if (&*stream).write_all(&b).await.is_err() {
            return;
        }
    }
}

/// ubusd's `client_cb`: each time the socket is readable (and `latency` later),
/// every message there is read and handled in order; a socket whose far end is
/// already closed is not read at all, and the client ends. (ubusd would still
/// finish a message whose header it had read before; the clients here write
/// each message whole.)
async fn read_loop(
    state: Rc<RefCell<State>>,
    id: u32,
    stream: Arc<Async<StdUnixStream>>,
    latency: Duration,
) {
    let mut fb = FrameBuf::new();
    let mut buf = vec![0u8; 4096];
    loop {
        if stream.readable().await.is_err() {
            return;
        }
        if !latency.is_zero() {
            Timer::after(latency).await;
        }
        // What the socket holds now, up to the close if there is one: the
        // non-blocking reads stand in for the epoll_wait that tells ubusd
        // both (EPOLLIN, EPOLLRDHUP) at once.
        let mut batch = Vec::new();
        let closed = loop {
            match stream.get_ref().read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => batch.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break true,
            }
        };
        if closed {
            // `sock->eof`: nothing of it is handled.
            if !batch.is_empty() {
                log::debug!(
                    "ubus broker: client {id:#x} closed; {} bytes not read",
                    batch.len()
                );
            }
            return;
        }
        fb.push(&batch);
        loop {
            match fb.next_frame() {
                Ok(Some(fr)) => match Message::decode(&fr) {
                    Ok(m) => state.borrow_mut().handle(id, m),
                    Err(e) => log::debug!("ubus broker: client {id:#x}: {e}"),
                },
                Ok(None) => break,
                // ubusd disconnects a client whose framing is broken.
                Err(_) => return,
            }
        }
    }
}

//! dns via simple-dns: one query per name, sequentially, over UDP with
//! RD=1; a truncated (TC) reply is retried over TCP (RFC 7766 §5: a client
//! that receives TC "SHOULD retry over TCP"). Each name must get the
//! expected rcode and, for NOERROR, at least one answer or the expected
//! answers (any or all of them).

use super::on_addr;
use crate::check::result::CheckResult;
use crate::config::dns_name::DnsName;
use crate::config::target::{DnsTarget, HostPort};
use crate::config::{AnswerMatch, DnsCheck, DnsQueryType, DnsRcode, ExpectedAnswer};
use crate::net::{io_msg, until};
use simple_dns::rdata::RData;
use simple_dns::{Name, Packet, PacketFlag, CLASS, RCODE, TYPE};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Instant;

#[derive(Debug)]
pub(crate) struct DnsProbe {
    /// The query names, as validation read them into labels.
    names: Vec<DnsName>,
    /// The resolver, as validation resolved it (`dns.resolver`, else the
    /// VIP address) with `dns.port`.
    resolver: HostPort,
    qtype: DnsQueryType,
    rcode: DnsRcode,
    /// `expected_answers`, as validation resolved them (addresses or names).
    expected: Vec<ExpectedAnswer>,
    all: bool,
}

/// The query (RFC 1035 §4.1): a header with RD=1 and one question, IN
/// class. Written here rather than by simple-dns's packet builder, whose
/// writer of every record type the probe never sends costs ~15 KB of
/// flash; the bytes are the ones it builds (tests: `query_wire`). The
/// name is the labels validation read (each 1..=63 octets, the whole at
/// most 255 in the wire format, RFC 1035 §2.3.4), so this cannot fail.
fn query_wire(id: u16, name: &DnsName, qtype: TYPE) -> Vec<u8> {
    let n = name.wire();
    let mut w = Vec::with_capacity(12 + n.len() + 5);
    w.extend_from_slice(&id.to_be_bytes());
    // QR=0, OPCODE=0 (QUERY), RD=1; QDCOUNT=1, no other sections.
    w.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    w.extend_from_slice(n);
    w.push(0);
    w.extend_from_slice(&u16::from(qtype).to_be_bytes());
    w.extend_from_slice(&(CLASS::IN as u16).to_be_bytes());
    w
}

/// One parsed reply: its rcode and answers rendered as text.
struct Reply {
    rcode: RCODE,
    answers: Vec<String>,
    /// The answers that are addresses (A, AAAA, a TXT holding one).
    addrs: Vec<IpAddr>,
    tcp: bool,
}

fn qtype(t: DnsQueryType) -> TYPE {
    match t {
        DnsQueryType::A => TYPE::A,
        DnsQueryType::Aaaa => TYPE::AAAA,
        DnsQueryType::Cname => TYPE::CNAME,
        DnsQueryType::Mx => TYPE::MX,
        DnsQueryType::Txt => TYPE::TXT,
        DnsQueryType::Srv => TYPE::SRV,
        DnsQueryType::Ptr => TYPE::PTR,
        DnsQueryType::Ns => TYPE::NS,
        DnsQueryType::Soa => TYPE::SOA,
    }
}

fn rcode_name(r: RCODE) -> String {
    match r {
        RCODE::NoError => "NOERROR".into(),
        RCODE::FormatError => "FORMERR".into(),
        RCODE::ServerFailure => "SERVFAIL".into(),
        RCODE::NameError => "NXDOMAIN".into(),
        RCODE::NotImplemented => "NOTIMP".into(),
        RCODE::Refused => "REFUSED".into(),
        other => format!("RCODE {}", other as u16),
    }
}

fn want_rcode(r: DnsRcode) -> RCODE {
    match r {
        DnsRcode::NoError => RCODE::NoError,
        DnsRcode::FormErr => RCODE::FormatError,
        DnsRcode::ServFail => RCODE::ServerFailure,
        DnsRcode::NxDomain => RCODE::NameError,
        DnsRcode::NotImp => RCODE::NotImplemented,
        DnsRcode::Refused => RCODE::Refused,
    }
}

fn name_text(n: &Name) -> String {
    n.to_string().trim_end_matches('.').to_ascii_lowercase()
}

/// An answer as text: an address, a name, or TXT's text.
fn render(rd: &RData) -> Option<String> {
    Some(match rd {
        RData::A(a) => Ipv4Addr::from(a.address).to_string(),
        RData::AAAA(a) => Ipv6Addr::from(a.address).to_string(),
        RData::CNAME(n) => name_text(&n.0),
        RData::NS(n) => name_text(&n.0),
        RData::PTR(n) => name_text(&n.0),
        RData::MX(m) => name_text(&m.exchange),
        RData::SRV(s) => name_text(&s.target),
        RData::SOA(s) => name_text(&s.mname),
        RData::TXT(t) => String::try_from(t.clone()).ok()?,
        _ => return None,
    })
}

/// An answer as an address: an A or AAAA answer's, or a TXT answer whose
/// text is one (an address in a TXT record is compared by value too).
fn addr(rd: &RData, text: &str) -> Option<IpAddr> {
    match rd {
        RData::A(a) => Some(Ipv4Addr::from(a.address).into()),
        RData::AAAA(a) => Some(Ipv6Addr::from(a.address).into()),
        RData::TXT(_) => text.parse().ok(),
        _ => None,
    }
}

/// Whether an expected answer is in a reply: an address by value among the
/// answers that are addresses, a name (or text) case-insensitively without
/// the trailing dot among the rendered ones.
fn answer_matches(want: &ExpectedAnswer, r: &Reply) -> bool {
    if let Some(a) = want.addr {
        return r.addrs.contains(&a);
    }
    let w = want.text.trim();
    r.answers.iter().any(|got| {
        w == got
            || w.trim_end_matches('.')
                .eq_ignore_ascii_case(got.trim_end_matches('.'))
    })
}

thread_local! {
    /// Probes run on the daemon's one thread: a counter of its own, no atomic.
    static QUERY_ID: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A query id that differs between queries and processes.
fn next_id() -> u16 {
    let n = QUERY_ID.with(|q| q.replace(q.get().wrapping_add(1)));
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (n.wrapping_mul(0x9e37) ^ t ^ std::process::id()) as u16
}

impl DnsProbe {
    /// `t`: the resolver and the names, as validation resolved and read
    /// them; nothing here can fail.
    pub fn new(c: &DnsCheck, t: &DnsTarget, answers: &[ExpectedAnswer]) -> DnsProbe {
        DnsProbe {
            names: t.names.clone(),
            resolver: t.resolver.clone(),
            qtype: c.query_type,
            rcode: c.expected_rcode,
            expected: answers.to_vec(),
            all: c.expected_match == AnswerMatch::All,
        }
    }

    pub fn what(&self) -> String {
        format!("dns {}", self.resolver)
    }

    pub fn run(&self, deadline: Instant) -> impl Future<Output = CheckResult> + '_ {
        on_addr(&self.resolver, move |server| {
            self.query_all(server, deadline)
        })
    }

    /// Each name's query to `server`, the resolver's address.
    async fn query_all(&self, server: SocketAddr, deadline: Instant) -> CheckResult {
        let mut all_answers = Vec::new();
        let mut used_tcp = false;
        for name in &self.names {
            let reply = match self.query(server, name, deadline).await {
                Ok(r) => r,
                Err(e) => return CheckResult::fail(format!("query {name}: {e}")),
            };
            used_tcp |= reply.tcp;
            if let Err(e) = self.judge(&reply) {
                return CheckResult::fail(format!("query {name}: {e}"))
                    .with("rcode", rcode_name(reply.rcode))
                    .with("answers", reply.answers);
            }
            all_answers.extend(reply.answers);
        }
        let names: Vec<&str> = self.names.iter().map(DnsName::as_str).collect();
        CheckResult::pass(format!("DNS OK: {}", names.join(", ")))
            .with("answers", all_answers)
            .with("tcp", used_tcp)
    }

    fn judge(&self, r: &Reply) -> Result<(), String> {
        if r.rcode != want_rcode(self.rcode) {
            return Err(format!("rcode {}", rcode_name(r.rcode)));
        }
        if self.expected.is_empty() {
            if self.rcode == DnsRcode::NoError && r.answers.is_empty() {
                return Err("no answers".into());
            }
            return Ok(());
        }
        let found = |w: &ExpectedAnswer| answer_matches(w, r);
        let ok = if self.all {
            self.expected.iter().all(found)
        } else {
            self.expected.iter().any(found)
        };
        if ok {
            return Ok(());
        }
        let missing: Vec<&str> = self
            .expected
            .iter()
            .filter(|w| !found(w))
            .map(|w| w.text.as_str())
            .collect();
        Err(format!(
            "answers [{}] lack {} of [{}]",
            r.answers.join(", "),
            if self.all { "some" } else { "all" },
            missing.join(", ")
        ))
    }

    async fn query(
        &self,
        server: SocketAddr,
        name: &DnsName,
        deadline: Instant,
    ) -> Result<Reply, String> {
        let id = next_id();
        let wire = query_wire(id, name, qtype(self.qtype));
        let udp = match until(deadline, udp_exchange(server, &wire, id)).await {
            Some(r) => r.map_err(|e| format!("server {server}: {e}"))?,
            None => return Err(format!("server {server}: no reply")),
        };
        let (bytes, tcp) = if Packet::parse(&udp)
            .map(|p| p.has_flags(PacketFlag::TRUNCATION))
            .unwrap_or(false)
        {
            match until(deadline, tcp_exchange(server, &wire)).await {
                Some(r) => (
                    r.map_err(|e| format!("server {server} over tcp: {e}"))?,
                    true,
                ),
                None => return Err(format!("server {server} over tcp: no reply")),
            }
        } else {
            (udp, false)
        };
        let p = Packet::parse(&bytes).map_err(|e| format!("bad reply from {server}: {e}"))?;
        if p.id() != id {
            return Err(format!("reply from {server} has the wrong id"));
        }
        let mut answers = Vec::new();
        let mut addrs = Vec::new();
        for a in &p.answers {
            if let Some(text) = render(&a.rdata) {
                addrs.extend(addr(&a.rdata, &text));
                answers.push(text);
            }
        }
        Ok(Reply {
            rcode: p.rcode(),
            answers,
            addrs,
            tcp,
        })
    }
}

async fn udp_exchange(server: SocketAddr, wire: &[u8], id: u16) -> Result<Vec<u8>, String> {
    let any: IpAddr = match server {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let s = smol::net::UdpSocket::bind(SocketAddr::new(any, 0))
        .await
        .map_err(|e| io_msg(&e))?;
    s.connect(server).await.map_err(|e| io_msg(&e))?;
    s.send(wire).await.map_err(|e| io_msg(&e))?;
    let mut buf = vec![0u8; 65535];
    // Bounded: stray datagrams with another id are skipped, a few times.
    for _ in 0..16 {
        let n = s.recv(&mut buf).await.map_err(|e| io_msg(&e))?;
        if n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id {
            buf.truncate(n);
            return Ok(buf);
        }
    }
    Err("no reply with our id".into())
}

/// RFC 1035 §4.2.2: over TCP each message is prefixed by its two-byte length.
async fn tcp_exchange(server: SocketAddr, wire: &[u8]) -> Result<Vec<u8>, String> {
    let mut s = smol::net::TcpStream::connect(server)
        .await
        .map_err(|e| io_msg(&e))?;
    let len = u16::try_from(wire.len()).map_err(|_| "query too long".to_string())?;
    let mut msg = len.to_be_bytes().to_vec();
    msg.extend_from_slice(wire);
    s.write_all(&msg).await.map_err(|e| io_msg(&e))?;
    let mut l = [0u8; 2];
    s.read_exact(&mut l).await.map_err(|e| io_msg(&e))?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(l))];
    s.read_exact(&mut buf).await.map_err(|e| io_msg(&e))?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use simple_dns::{Label, Question};

    /// The question's name as simple-dns holds it, from validation's labels.
    fn qname(n: &DnsName) -> Name<'_> {
        let labels: Vec<Label<'_>> = n.labels().map(Label::new_unchecked).collect();
        Name::new_with_labels(&labels)
    }

    /// The query as simple-dns's packet builder writes it.
    fn simple_dns_query(id: u16, n: &DnsName, t: TYPE) -> Vec<u8> {
        let mut q = Packet::new_query(id);
        q.set_flags(PacketFlag::RECURSION_DESIRED);
        q.questions
            .push(Question::new(qname(n), t.into(), CLASS::IN.into(), false));
        q.build_bytes_vec().unwrap()
    }

    #[test]
    fn query_wire_is_simple_dns_query() {
        let l63 = "a".repeat(63);
        for s in ["example.org", ".", r"My\.Device._tcp.local", l63.as_str()] {
            let n = DnsName::parse(s).unwrap();
            for t in [
                DnsQueryType::A,
                DnsQueryType::Aaaa,
                DnsQueryType::Cname,
                DnsQueryType::Mx,
                DnsQueryType::Txt,
                DnsQueryType::Srv,
                DnsQueryType::Ptr,
                DnsQueryType::Ns,
                DnsQueryType::Soa,
            ] {
                for id in [0, 1, 0xbeef, u16::MAX] {
                    assert_eq!(
                        query_wire(id, &n, qtype(t)),
                        simple_dns_query(id, &n, qtype(t)),
                        "{s} {t:?} {id}"
                    );
                }
            }
        }
    }

    fn reply(answers: &[&str]) -> Reply {
        Reply {
            rcode: RCODE::NoError,
            answers: answers.iter().map(|a| a.to_string()).collect(),
            addrs: answers.iter().filter_map(|a| a.parse().ok()).collect(),
            tcp: false,
        }
    }

    #[test]
    fn matching() {
        let m =
            |want: &str, got: &str| answer_matches(&ExpectedAnswer::parse(want), &reply(&[got]));
        assert!(m("10.0.0.1", "10.0.0.1"));
        assert!(m(" 2001:db8::1 ", "2001:db8:0::1"));
        assert!(m("Web.Example.", "web.example"));
        assert!(!m("10.0.0.1", "10.0.0.2"));
        assert!(!m("10.0.0.1", "web.example"));
    }

    /// Validation and simple-dns agree on a name: validation accepts exactly
    /// the names `Name::new` accepts, with the same labels, so the question
    /// built from validation's labels is the one simple-dns would build, and
    /// a name simple-dns refuses never reaches the probe.
    fn o_name(n: &Result<DnsName, String>) -> Result<&DnsName, String> {
        n.as_ref().map_err(Clone::clone)
    }

    fn agree(s: &str) -> Result<(), String> {
        let ours = DnsName::parse(s);
        let theirs = Name::new(s);
        match (&ours, &theirs) {
            (Ok(o), Ok(t)) => {
                let o: Vec<&[u8]> = o.labels().collect();
                let t: Vec<&[u8]> = t.get_labels().iter().map(|l| l.as_ref()).collect();
                if o != t {
                    return Err(format!("{s:?}: labels {o:?}, simple-dns {t:?}"));
                }
                // The query built from validation's labels is the one
                // simple-dns builds from the text.
                let wire = |n: Name<'_>| {
                    let mut q = Packet::new_query(1);
                    q.questions
                        .push(Question::new(n, TYPE::A.into(), CLASS::IN.into(), false));
                    q.build_bytes_vec().map_err(|e| e.to_string())
                };
                let a = wire(qname(o_name(&ours)?))?;
                let b = wire(Name::new(s).map_err(|e| e.to_string())?)?;
                if a != b {
                    return Err(format!("{s:?}: wire {a:?}, simple-dns {b:?}"));
                }
                Ok(())
            }
            (Err(_), Err(_)) => Ok(()),
            _ => Err(format!(
                "{s:?}: validation {:?}, simple-dns {:?}",
                ours.as_ref().map(|_| ()),
                theirs.as_ref().map(|_| ())
            )),
        }
    }

    #[test]
    fn names_validation_and_simple_dns_agree_on() {
        let l63 = "a".repeat(63);
        let long = |last: usize| format!("{l63}.{l63}.{l63}.{}", "b".repeat(last));
        for s in [
            "example.org",
            "example.org.",
            ".",
            "",
            "a..b",
            "..a..",
            r"My\.Device._googlecast._tcp.local",
            r"a\\.b",
            r"a\",
            r"a\\\",
            r"a\1.b",
            r"a\12",
            r"\255\000",
            r"\256",
            r"a\.",
            "é.test",
            " a .b ",
            &l63,
            &format!("{l63}a"),
            &r"\097".repeat(63),
            &r"\097".repeat(64),
            &long(61),
            &long(62),
            &format!("{}.", long(61)),
        ] {
            agree(s).unwrap();
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(4000))]
        /// Names of short and long labels, dots and escapes, valid or not.
        #[test]
        fn validation_and_simple_dns_agree_on_random_names(
            s in "([a-z0-9.\\\\-]|\\\\[0-9]{1,3}|é|[a-z]{60,64}){0,80}"
        ) {
            if let Err(e) = agree(&s) {
                proptest::prop_assert!(false, "{}", e);
            }
        }
    }
}

//! BGP codec tests against bytes captured from real BIRD 2 sessions
//! (tests/vectors/bgp/README.md says how), RFC error cases, and proptest
//! round trips.

use std::collections::BTreeSet;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use pathosd::bgp::types::{Afi, Community, LargeCommunity, Origin, PathAttrs, Prefix};
use pathosd::bgp::wire::{
    decode, encode, encode_end_of_rib, encode_keepalive, encode_updates, frame, AsPath, AsSegment,
    AttrAction, Capability, DecodeCtx, GracefulRestart, GracefulRestartFamily, Message, MpNextHop,
    MpReach, MpUnreach, Notification, Open, PathAttr, RouteRefresh, SegmentType, SkipReason,
    Update, AS_TRANS,
};

/// `encode_updates` where every route can be encoded: its messages, after
/// checking that nothing was skipped.
fn encode_ok(routes: &[(Prefix, PathAttrs)], withdrawn: &[Prefix], four: bool) -> Vec<Vec<u8>> {
    let out = encode_updates(routes, withdrawn, four);
    assert!(out.skipped.is_empty(), "skipped: {:?}", out.skipped);
    out.messages
}

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/bgp/captured")
}

fn unhex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.bytes())
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    assert!(digits.len() % 2 == 0, "odd number of hex digits");
    digits
        .chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
        .collect()
}

fn vector(name: &str) -> Vec<u8> {
    let path = vectors_dir().join(format!("{name}.hex"));
    unhex(&fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Session context of each captured session (see bird-a.conf).
fn ctx_of(name: &str) -> DecodeCtx {
    match &name[..2] {
        "e4" => DecodeCtx {
            four_octet_as: true,
            ebgp: true,
        },
        // B has `enable as4 off`, so the session runs with 2-octet ASes.
        "e2" => DecodeCtx {
            four_octet_as: false,
            ebgp: true,
        },
        "ib" => DecodeCtx {
            four_octet_as: true,
            ebgp: false,
        },
        other => panic!("unknown session {other}"),
    }
}

fn p(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn decode_update(name: &str) -> Update {
    match decode(&vector(name), &ctx_of(name)) {
        Ok(Message::Update(u)) => u,
        other => panic!("{name}: {other:?}"),
    }
}

// ===== every captured message =====

#[test]
fn every_bird_message_decodes_cleanly_and_re_encodes_identically() {
    let mut names: Vec<String> = fs::read_dir(vectors_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".hex"))
        .map(|n| n.trim_end_matches(".hex").to_string())
        .collect();
    names.sort();
    assert!(names.len() >= 40, "vectors missing: {}", names.len());
    for name in &names {
        let bytes = vector(name);
        let ctx = ctx_of(name);
        assert_eq!(frame(&bytes), Ok(Some(bytes.len())), "{name}");
        let msg = decode(&bytes, &ctx).unwrap_or_else(|n| panic!("{name}: {n}"));
        let kind = name.rsplit('-').next().unwrap();
        let expected_kind = match &msg {
            Message::Open(_) => "open",
            Message::Update(u) => {
                assert!(u.errors.is_empty(), "{name}: {:?}", u.errors);
                "update"
            }
            Message::Notification(_) => "notification",
            Message::Keepalive => "keepalive",
            Message::RouteRefresh(_) => "routerefresh",
        };
        assert_eq!(kind, expected_kind, "{name}");
        assert_eq!(encode(&msg, &ctx).as_deref(), Some(&bytes[..]), "{name}");
    }
}

#[test]
fn stream_of_captured_messages_frames_one_by_one() {
    let names = [
        "e4-c1-a2b-01-open",
        "e4-c1-a2b-02-keepalive",
        "e4-c1-a2b-03-update",
    ];
    let mut stream = Vec::new();
    for n in names {
        stream.extend_from_slice(&vector(n));
    }
    let mut rest = &stream[..];
    let mut count = 0;
    while let Some(len) = frame(rest).unwrap() {
        decode(&rest[..len], &ctx_of("e4")).unwrap();
        rest = &rest[len..];
        count += 1;
    }
    assert_eq!(count, 3);
    assert!(rest.is_empty());
}

// ===== OPEN =====

#[test]
fn bird_open_with_four_octet_as_uses_as_trans() {
    let Message::Open(o) = decode(&vector("e4-c1-a2b-01-open"), &ctx_of("e4")).unwrap() else {
        panic!("not an OPEN");
    };
    assert_eq!(o.my_as, AS_TRANS);
    assert_eq!(o.asn(), 4_200_000_001);
    assert_eq!(o.hold_time, 90);
    assert_eq!(o.bgp_id, Ipv4Addr::new(127, 77, 0, 1));
    assert_eq!(
        o.capabilities,
        vec![
            Capability::Multiprotocol { afi: 1, safi: 1 },
            Capability::Multiprotocol { afi: 2, safi: 1 },
            Capability::RouteRefresh,
            Capability::GracefulRestart(GracefulRestart {
                flags: 0,
                restart_time: 120,
                families: vec![
                    GracefulRestartFamily {
                        afi: 1,
                        safi: 1,
                        flags: 0
                    },
                    GracefulRestartFamily {
                        afi: 2,
                        safi: 1,
                        flags: 0
                    },
                ],
            }),
            Capability::FourOctetAs(4_200_000_001),
            // Enhanced Route Refresh (RFC 7313) and Long-Lived GR: kept raw.
            Capability::Unknown {
                code: 70,
                value: vec![]
            },
            Capability::Unknown {
                code: 71,
                value: vec![]
            },
        ]
    );
    assert!(o.supports_route_refresh());
    assert_eq!(o.families(), vec![(1, 1), (2, 1)]);
    assert_eq!(
        o.validate(65002, Ipv4Addr::new(127, 77, 0, 2), 4_200_000_001),
        Ok(())
    );

    // pathosd's own OPEN for the same speaker: capability order and GR
    // differ from BIRD's, the rest must agree field by field.
    let ours = Open::pathosd(
        4_200_000_001,
        90,
        Ipv4Addr::new(127, 77, 0, 1),
        &[Afi::Ipv4, Afi::Ipv6],
        true,
        false,
        None,
    );
    assert_eq!(
        (ours.my_as, ours.hold_time, ours.bgp_id),
        (o.my_as, o.hold_time, o.bgp_id)
    );
    for c in &ours.capabilities {
        match c {
            Capability::GracefulRestart(gr) => {
                let bird = o.graceful_restart().unwrap();
                assert_eq!(gr.families, bird.families);
                assert_eq!(gr.restart_time, 0, "pathosd advertises restart time 0");
            }
            c => assert!(o.capabilities.contains(c), "{c:?} not in BIRD's OPEN"),
        }
    }
    let bytes = encode(&Message::Open(ours.clone()), &ctx_of("e4")).unwrap();
    assert_eq!(decode(&bytes, &ctx_of("e4")), Ok(Message::Open(ours)));
}

#[test]
fn bird_open_without_as4_capability() {
    let Message::Open(o) = decode(&vector("e2-c1-b2a-01-open"), &ctx_of("e2")).unwrap() else {
        panic!("not an OPEN");
    };
    assert_eq!(o.my_as, 65002);
    assert_eq!(o.four_octet_as(), None);
    assert_eq!(o.asn(), 65002);
    assert_eq!(o.bgp_id, Ipv4Addr::new(127, 77, 0, 2));
    let Message::Open(a) = decode(&vector("e2-c1-a2b-01-open"), &ctx_of("e2")).unwrap() else {
        panic!("not an OPEN");
    };
    assert_eq!((a.my_as, a.four_octet_as()), (65001, Some(65001)));
}

// ===== UPDATE: decode =====

fn bird_a_attrs(next_hop: IpAddr) -> PathAttrs {
    PathAttrs {
        origin: Origin::Igp,
        as_path: vec![4_200_000_001],
        next_hop,
        med: Some(50),
        local_pref: None,
        communities: vec![Community(65001, 100), Community(65001, 666)],
        large_communities: vec![LargeCommunity(4_200_000_001, 1, 2)],
        otc: None,
    }
}

fn a_v4() -> Vec<Prefix> {
    // BIRD's order in the captured UPDATE.
    vec![
        p("198.51.100.0/24"),
        p("192.0.2.128/25"),
        p("203.0.113.7/32"),
    ]
}

fn a_v6() -> Vec<Prefix> {
    vec![p("2001:db8:100::/48"), p("2001:db8:200::1/128")]
}

const A_NH4: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 77, 0, 1));
const A_NH6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));

#[test]
fn bird_ipv4_update_four_octet_ebgp() {
    let u = decode_update("e4-c1-a2b-03-update");
    assert_eq!(u.origin(), Some(Origin::Igp));
    assert_eq!(u.as_path().unwrap().asns(), vec![4_200_000_001]);
    assert_eq!(u.next_hop(), Some(A_NH4));
    assert_eq!(u.med(), Some(50));
    assert_eq!(u.local_pref(), None);
    assert_eq!(
        u.communities(),
        &[Community(65001, 100), Community(65001, 666)]
    );
    assert_eq!(
        u.large_communities(),
        &[LargeCommunity(4_200_000_001, 1, 2)]
    );
    assert_eq!(u.nlri, a_v4());
    assert_eq!(u.announced(), a_v4());
    assert!(u.withdrawn_prefixes().is_empty());
    assert_eq!(u.is_end_of_rib(), None);
    assert_eq!(Message::Update(u).to_string(), "UPDATE +3 -0 prefixes");
}

#[test]
fn bird_ipv6_update_carries_mp_reach_first() {
    let u = decode_update("e4-c1-a2b-05-update");
    let PathAttr::MpReach(r) = &u.attrs[0] else {
        panic!("MP_REACH_NLRI is not first: {:?}", u.attrs);
    };
    assert_eq!(r.afi, Afi::Ipv6);
    assert_eq!(
        r.next_hop,
        MpNextHop::Ipv6 {
            global: "2001:db8::1".parse().unwrap(),
            link_local: None
        }
    );
    assert_eq!(u.next_hop(), Some(A_NH6));
    assert_eq!(u.announced(), a_v6());
    assert!(u.nlri.is_empty());
    assert_eq!(u.med(), Some(50));
}

#[test]
fn bird_two_octet_session_sends_as_trans_and_as4_path() {
    let u = decode_update("e2-c1-a2b-03-update");
    assert_eq!(
        u.as_path().unwrap().asns(),
        vec![65001, u32::from(AS_TRANS)]
    );
    let as4 = u
        .attrs
        .iter()
        .find_map(|a| match a {
            PathAttr::As4Path(p) => Some(p.asns()),
            _ => None,
        })
        .unwrap();
    assert_eq!(as4, vec![65001, 4_200_000_001]);
    assert_eq!(u.communities(), &[Community(65001, 200)]);
    // B's side of the same session: plain 2-octet path.
    let b = decode_update("e2-c1-b2a-03-update");
    assert_eq!(b.as_path().unwrap().asns(), vec![65002]);
    assert_eq!(b.announced(), vec![p("10.20.0.0/16")]);
    assert_eq!(b.large_communities(), &[LargeCommunity(65002, 7, 8)]);
}

#[test]
fn bird_ibgp_update_has_empty_as_path_and_local_pref() {
    let u = decode_update("ib-c1-a2b-03-update");
    assert_eq!(u.as_path(), Some(&AsPath::default()));
    assert_eq!(u.local_pref(), Some(100));
    // The same LOCAL_PREF bytes from an eBGP peer are discarded (RFC 7606 §7.5).
    let ebgp = DecodeCtx {
        four_octet_as: true,
        ebgp: true,
    };
    let Ok(Message::Update(e)) = decode(&vector("ib-c1-a2b-03-update"), &ebgp) else {
        panic!("decode failed");
    };
    assert_eq!(e.local_pref(), None);
    assert_eq!(e.errors.len(), 1);
    assert_eq!(e.errors[0].action, AttrAction::Discard);
    assert_eq!(e.announced(), a_v4());
}

#[test]
fn bird_withdrawals_and_end_of_rib() {
    let w4 = decode_update("e4-c1-a2b-07-update");
    assert_eq!(w4.withdrawn, a_v4());
    assert_eq!(w4.withdrawn_prefixes(), a_v4());
    assert!(w4.announced().is_empty());
    let w6 = decode_update("e4-c1-a2b-08-update");
    assert_eq!(w6.withdrawn_prefixes(), a_v6());
    assert_eq!(w6.is_end_of_rib(), None);
    assert_eq!(
        decode_update("e4-c1-a2b-04-update").is_end_of_rib(),
        Some(Afi::Ipv4)
    );
    assert_eq!(
        decode_update("e4-c1-a2b-06-update").is_end_of_rib(),
        Some(Afi::Ipv6)
    );
}

// ===== UPDATE: encode, byte for byte against BIRD =====

#[test]
fn encoder_matches_bird_ipv4_and_ipv6_updates() {
    let mut routes: Vec<(Prefix, PathAttrs)> = a_v4()
        .into_iter()
        .map(|p| (p, bird_a_attrs(A_NH4)))
        .collect();
    routes.extend(a_v6().into_iter().map(|p| (p, bird_a_attrs(A_NH6))));
    let msgs = encode_ok(&routes, &[], true);
    assert_eq!(
        msgs,
        vec![vector("e4-c1-a2b-03-update"), vector("e4-c1-a2b-05-update")]
    );
}

#[test]
fn encoder_matches_bird_two_octet_session() {
    let attrs = |nh| PathAttrs {
        origin: Origin::Igp,
        as_path: vec![65001, 4_200_000_001],
        next_hop: nh,
        med: None,
        local_pref: None,
        communities: vec![Community(65001, 200)],
        large_communities: vec![],
        otc: None,
    };
    let mut routes: Vec<(Prefix, PathAttrs)> =
        a_v4().into_iter().map(|p| (p, attrs(A_NH4))).collect();
    routes.extend(a_v6().into_iter().map(|p| (p, attrs(A_NH6))));
    let msgs = encode_ok(&routes, &[], false);
    assert_eq!(
        msgs,
        vec![vector("e2-c1-a2b-03-update"), vector("e2-c1-a2b-05-update")]
    );
}

#[test]
fn encoder_matches_bird_ibgp_and_peer_b() {
    let ib = PathAttrs {
        as_path: vec![],
        local_pref: Some(100),
        ..bird_a_attrs(A_NH4)
    };
    let routes: Vec<(Prefix, PathAttrs)> = a_v4().into_iter().map(|p| (p, ib.clone())).collect();
    assert_eq!(
        encode_ok(&routes, &[], true),
        vec![vector("ib-c1-a2b-03-update")]
    );

    let b = |nh: &str, four| {
        let attrs = PathAttrs {
            origin: Origin::Igp,
            as_path: vec![65002],
            next_hop: nh.parse().unwrap(),
            med: None,
            local_pref: None,
            communities: vec![Community(65002, 1)],
            large_communities: vec![LargeCommunity(65002, 7, 8)],
            otc: None,
        };
        let pfx = if nh.contains(':') {
            "2001:db8:beef::/64"
        } else {
            "10.20.0.0/16"
        };
        encode_ok(&[(p(pfx), attrs)], &[], four)
    };
    assert_eq!(b("127.77.0.2", true), vec![vector("e4-c1-b2a-03-update")]);
    assert_eq!(b("2001:db8::2", true), vec![vector("e4-c1-b2a-05-update")]);
    assert_eq!(b("127.77.0.2", false), vec![vector("e2-c1-b2a-03-update")]);
    assert_eq!(b("2001:db8::2", false), vec![vector("e2-c1-b2a-05-update")]);
}

#[test]
fn encoder_matches_bird_withdrawals_and_end_of_rib() {
    assert_eq!(
        encode_ok(&[], &a_v4(), true),
        vec![vector("e4-c1-a2b-07-update")]
    );
    assert_eq!(
        encode_ok(&[], &a_v6(), true),
        vec![vector("e4-c1-a2b-08-update")]
    );
    assert_eq!(encode_end_of_rib(Afi::Ipv4), vector("e4-c1-a2b-04-update"));
    assert_eq!(encode_end_of_rib(Afi::Ipv6), vector("e4-c1-a2b-06-update"));
    assert_eq!(
        encode(
            &Message::Update(Update::end_of_rib(Afi::Ipv6)),
            &ctx_of("e4")
        )
        .unwrap(),
        vector("e4-c1-a2b-06-update")
    );
}

// ===== NOTIFICATION, ROUTE-REFRESH, KEEPALIVE =====

#[test]
fn bird_shutdown_communications() {
    let msg = "pathosd golden vector: planned maintenance";
    let Message::Notification(n) =
        decode(&vector("e4-c1-a2b-13-notification"), &ctx_of("e4")).unwrap()
    else {
        panic!("not a NOTIFICATION");
    };
    assert_eq!((n.code, n.subcode), (6, 2));
    assert_eq!(n.shutdown_communication(), Some(msg));
    assert_eq!(
        n.to_string(),
        format!("Cease / Administrative Shutdown: {msg:?}")
    );
    let ours = Notification::administrative_shutdown(msg);
    assert_eq!(
        encode(&Message::Notification(ours), &ctx_of("e4")).unwrap(),
        vector("e4-c1-a2b-13-notification")
    );
    let reset = Notification::administrative_reset("pathosd reset test");
    assert_eq!(
        encode(&Message::Notification(reset), &ctx_of("e2")).unwrap(),
        vector("e2-c1-a2b-09-notification")
    );
}

#[test]
fn bird_route_refresh_and_keepalive() {
    assert_eq!(
        encode(
            &Message::RouteRefresh(RouteRefresh::request(Afi::Ipv4)),
            &ctx_of("e4")
        )
        .unwrap(),
        vector("e4-c1-b2a-07-routerefresh")
    );
    assert_eq!(
        encode(
            &Message::RouteRefresh(RouteRefresh::request(Afi::Ipv6)),
            &ctx_of("e4")
        )
        .unwrap(),
        vector("e4-c1-b2a-08-routerefresh")
    );
    // RFC 7313 BoRR (1) and EoRR (2) from A answering the refresh.
    let subtypes: Vec<(u16, u8)> = ["09", "10", "11", "12"]
        .iter()
        .map(|i| {
            match decode(
                &vector(&format!("e4-c1-a2b-{i}-routerefresh")),
                &ctx_of("e4"),
            ) {
                Ok(Message::RouteRefresh(r)) => (r.afi, r.subtype),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    assert_eq!(subtypes, vec![(1, 1), (1, 2), (2, 1), (2, 2)]);
    assert_eq!(encode_keepalive(), vector("e4-c1-a2b-02-keepalive"));
}

// ===== malformed input: RFC 4271 §6 and RFC 7606 =====

fn msg(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0xff; 16];
    v.extend_from_slice(&((body.len() + 19) as u16).to_be_bytes());
    v.push(ty);
    v.extend_from_slice(body);
    v
}

fn err(bytes: &[u8], ctx: &DecodeCtx) -> (u8, u8, Vec<u8>) {
    let n = decode(bytes, ctx).expect_err("must be rejected");
    assert!(!n.to_string().is_empty());
    (n.code, n.subcode, n.data)
}

const EBGP4: DecodeCtx = DecodeCtx {
    four_octet_as: true,
    ebgp: true,
};

#[test]
fn header_errors() {
    let mut m = encode_keepalive();
    m[0] = 0xfe;
    assert_eq!(err(&m, &EBGP4), (1, 1, vec![]));
    for len in [0u16, 18, 4097, 0xffff] {
        let mut m = encode_keepalive();
        m[16..18].copy_from_slice(&len.to_be_bytes());
        assert_eq!(
            frame(&m).unwrap_err(),
            Notification {
                code: 1,
                subcode: 2,
                data: len.to_be_bytes().to_vec()
            }
        );
    }
    // Type-specific minimums (RFC 4271 §6.1).
    assert_eq!(err(&msg(4, &[0]), &EBGP4), (1, 2, vec![0, 20]));
    assert_eq!(err(&msg(1, &[4, 0, 1]), &EBGP4), (1, 2, vec![0, 22]));
    assert_eq!(err(&msg(3, &[6]), &EBGP4), (1, 2, vec![0, 20]));
    assert_eq!(err(&msg(2, &[0, 0]), &EBGP4), (1, 2, vec![0, 21]));
    assert_eq!(err(&msg(0, &[]), &EBGP4), (1, 3, vec![0]));
    assert_eq!(err(&msg(6, &[]), &EBGP4), (1, 3, vec![6]));
}

fn open_body(version: u8, hold: u16, id: [u8; 4], params: &[u8]) -> Vec<u8> {
    let mut b = vec![version, 0xfd, 0xe9];
    b.extend_from_slice(&hold.to_be_bytes());
    b.extend_from_slice(&id);
    b.push(params.len() as u8);
    b.extend_from_slice(params);
    b
}

#[test]
fn open_errors() {
    let id = [10, 0, 0, 1];
    assert!(decode(&msg(1, &open_body(4, 90, id, &[])), &EBGP4).is_ok());
    assert_eq!(
        err(&msg(1, &open_body(3, 90, id, &[])), &EBGP4),
        (2, 1, vec![0, 4])
    );
    assert_eq!(
        err(&msg(1, &open_body(5, 90, id, &[])), &EBGP4),
        (2, 1, vec![0, 4])
    );
    assert_eq!(err(&msg(1, &open_body(4, 1, id, &[])), &EBGP4).1, 6);
    assert_eq!(err(&msg(1, &open_body(4, 2, id, &[])), &EBGP4).1, 6);
    assert!(decode(&msg(1, &open_body(4, 3, id, &[])), &EBGP4).is_ok());
    assert_eq!(err(&msg(1, &open_body(4, 90, [0; 4], &[])), &EBGP4).1, 3);
    // Authentication parameter (type 1, long deprecated): unsupported.
    assert_eq!(err(&msg(1, &open_body(4, 90, id, &[1, 1, 0])), &EBGP4).1, 4);
    // Parameter running past the message; truncated capability.
    assert_eq!(
        err(&msg(1, &open_body(4, 90, id, &[2, 9, 65, 4])), &EBGP4),
        (2, 0, vec![])
    );
    assert_eq!(
        err(&msg(1, &open_body(4, 90, id, &[2, 3, 65, 4, 0])), &EBGP4),
        (2, 0, vec![])
    );
    // RFC 9234 Role capability (code 9, length 1): any other length is an
    // OPEN Message Error, Unspecific, as every malformed known capability
    // (the RFC gives no handling; BIRD sends the same).
    for role in [&[2, 2, 9, 0][..], &[2, 4, 9, 2, 3, 3]] {
        assert_eq!(
            err(&msg(1, &open_body(4, 90, id, role)), &EBGP4),
            (2, 0, vec![]),
            "{role:?}"
        );
    }
    let open = |params: &[u8]| match decode(&msg(1, &open_body(4, 90, id, params)), &EBGP4) {
        Ok(Message::Open(o)) => o,
        other => panic!("{other:?}"),
    };
    assert_eq!(open(&[2, 3, 9, 1, 3]).role(), Some(3));
    assert_eq!(open(&[2, 3, 9, 1, 200]).role(), Some(200));
    assert_eq!(open(&[]).role(), None);
    // Identical duplicates are one; differing ones conflict (RFC 9234 §4.2).
    assert_eq!(open(&[2, 6, 9, 1, 4, 9, 1, 4]).role(), Some(4));
    assert_eq!(
        open(&[2, 6, 9, 1, 4, 9, 1, 3]).role(),
        Some(pathosd::bgp::wire::ROLE_CONFLICT)
    );
    // Ours: one Role capability when configured, none otherwise.
    let ours = Open::pathosd(
        65001,
        90,
        Ipv4Addr::new(10, 0, 0, 1),
        &[Afi::Ipv4],
        false,
        false,
        Some(3),
    );
    let roles: Vec<&Capability> = ours
        .capabilities
        .iter()
        .filter(|c| matches!(c, Capability::Role(_)))
        .collect();
    assert_eq!(roles, vec![&Capability::Role(3)]);
}

/// An UPDATE body from parts.
fn update_body(withdrawn: &[u8], attrs: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut b = (withdrawn.len() as u16).to_be_bytes().to_vec();
    b.extend_from_slice(withdrawn);
    b.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    b.extend_from_slice(attrs);
    b.extend_from_slice(nlri);
    b
}

const ORIGIN: &[u8] = &[0x40, 1, 1, 0];
const AS_PATH4: &[u8] = &[0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9];
const NEXT_HOP: &[u8] = &[0x40, 3, 4, 192, 0, 2, 1];
const NLRI: &[u8] = &[24, 198, 51, 100];

fn attrs(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn soft(attr_list: &[u8], nlri: &[u8], ctx: &DecodeCtx) -> Update {
    match decode(&msg(2, &update_body(&[], attr_list, nlri)), ctx) {
        Ok(Message::Update(u)) => u,
        other => panic!("{other:?}"),
    }
}

#[test]
fn update_session_reset_errors() {
    // Withdrawn Routes Length beyond the message (RFC 4271 §6.3).
    let mut b = update_body(&[], &[], &[]);
    b[1] = 9;
    assert_eq!(err(&msg(2, &b), &EBGP4), (3, 1, vec![]));
    // Total Path Attribute Length beyond the message.
    let mut b = update_body(&[], &[], &[]);
    b[3] = 9;
    assert_eq!(err(&msg(2, &b), &EBGP4), (3, 1, vec![]));
    // NLRI with prefix length 33, or truncated (RFC 7606 §5.3).
    let good = attrs(&[ORIGIN, AS_PATH4, NEXT_HOP]);
    assert_eq!(
        err(
            &msg(2, &update_body(&[], &good, &[33, 1, 2, 3, 4, 5])),
            &EBGP4
        )
        .1,
        10
    );
    assert_eq!(
        err(&msg(2, &update_body(&[], &good, &[24, 1, 2])), &EBGP4).1,
        10
    );
    assert_eq!(
        err(&msg(2, &update_body(&[25, 1, 2, 3], &[], &[])), &EBGP4).1,
        10
    );
    // MP_REACH_NLRI twice (RFC 7606 §3 g).
    let eor6 = [0x80, 15, 3, 0, 2, 1];
    assert_eq!(
        err(
            &msg(2, &update_body(&[], &attrs(&[&eor6, &eor6]), &[])),
            &EBGP4
        )
        .1,
        1
    );
    // MP_REACH_NLRI with a 5-octet IPv6 next hop (RFC 7606 §7.11).
    let bad_nh = [0x80, 14, 10, 0, 2, 1, 5, 1, 2, 3, 4, 5, 0];
    assert_eq!(
        err(
            &msg(
                2,
                &update_body(&[], &attrs(&[ORIGIN, AS_PATH4, &bad_nh]), &[])
            ),
            &EBGP4
        )
        .1,
        9
    );
    // MP_UNREACH_NLRI with an IPv6 prefix length of 129.
    let bad_w = [0x80, 15, 5, 0, 2, 1, 129, 0];
    assert_eq!(err(&msg(2, &update_body(&[], &bad_w, &[])), &EBGP4).1, 9);
    // Unrecognized well-known attribute (RFC 4271 §6.3).
    let wk = [0x40, 99, 0];
    let (c, s, d) = err(
        &msg(2, &update_body(&[], &attrs(&[ORIGIN, &wk]), &[])),
        &EBGP4,
    );
    assert_eq!((c, s, d), (3, 2, wk.to_vec()));
}

/// Type code, action and the RFC 4271 subcode (0 when silently ignored).
fn first_error(u: &Update) -> (u8, AttrAction, u8) {
    let e = &u.errors[0];
    assert!(!e.to_string().is_empty());
    (
        e.type_code,
        e.action,
        e.notification.as_ref().map_or(0, |n| n.subcode),
    )
}

#[test]
fn update_otc_malformed_is_treat_as_withdraw() {
    let taw = AttrAction::TreatAsWithdraw;
    // ONLY_TO_CUSTOMER of 3 and 5 octets (RFC 9234 §5: "malformed if the
    // length value is not 4 ... treat-as-withdraw"); 4 is fine, and
    // optional non-transitive flags are an Attribute Flags Error.
    for bad in [&[0xc0, 35, 3, 0, 0, 1][..], &[0xc0, 35, 5, 0, 0, 0, 1, 2]] {
        let u = soft(&attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, bad]), NLRI, &EBGP4);
        assert_eq!(first_error(&u), (35, taw, 5), "{bad:?}");
        assert!(u.treat_as_withdraw());
    }
    let otc: &[u8] = &[0xc0, 35, 4, 0, 0, 0xfd, 0xe8];
    let u = soft(&attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, otc]), NLRI, &EBGP4);
    assert!(u.errors.is_empty(), "{:?}", u.errors);
    assert!(u.attrs.contains(&PathAttr::Otc(65000)), "{:?}", u.attrs);
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, &[0x80, 35, 4, 0, 0, 0xfd, 0xe8]]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u).2, 4);
}

#[test]
fn update_rfc7606_treat_as_withdraw() {
    let taw = AttrAction::TreatAsWithdraw;
    // ORIGIN value 3 (§7.1).
    let u = soft(
        &attrs(&[&[0x40, 1, 1, 3], AS_PATH4, NEXT_HOP]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (1, taw, 6));
    assert!(u.treat_as_withdraw());
    assert!(u.announced().is_empty());
    assert_eq!(u.withdrawn_prefixes(), vec![p("198.51.100.0/24")]);
    // ORIGIN with optional flag set (§3 c).
    let u = soft(
        &attrs(&[&[0xc0, 1, 1, 0], AS_PATH4, NEXT_HOP]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (1, taw, 4));
    // AS_PATH with a zero-length segment, and with an unknown segment type (§7.2).
    let u = soft(
        &attrs(&[ORIGIN, &[0x40, 2, 2, 2, 0], NEXT_HOP]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (2, taw, 11));
    let u = soft(
        &attrs(&[ORIGIN, &[0x40, 2, 6, 9, 1, 0, 0, 0, 1], NEXT_HOP]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (2, taw, 11));
    // AS_CONFED_SEQUENCE from an eBGP peer; fine from iBGP.
    let confed: &[u8] = &[0x40, 2, 6, 3, 1, 0, 0, 0, 1];
    let u = soft(&attrs(&[ORIGIN, confed, NEXT_HOP]), NLRI, &EBGP4);
    assert_eq!(first_error(&u), (2, taw, 11));
    let ibgp = DecodeCtx {
        four_octet_as: true,
        ebgp: false,
    };
    assert!(soft(&attrs(&[ORIGIN, confed, NEXT_HOP]), NLRI, &ibgp)
        .errors
        .is_empty());
    // NEXT_HOP of 3 octets (§7.3), MED of 2 (§7.4), COMMUNITIES of 3 and 0
    // (§7.8), LARGE_COMMUNITIES of 8 (RFC 8092 §5).
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, &[0x40, 3, 3, 1, 2, 3]]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (3, taw, 5));
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, &[0x80, 4, 2, 0, 1]]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (4, taw, 5));
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, &[0xc0, 8, 3, 0, 1, 2]]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (8, taw, 5));
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, &[0xc0, 8, 0]]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (8, taw, 5));
    let u = soft(
        &attrs(&[
            ORIGIN,
            AS_PATH4,
            NEXT_HOP,
            &[0xc0, 32, 8, 0, 0, 0, 1, 0, 0, 0, 2],
        ]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (32, taw, 5));
    // Missing NEXT_HOP with IPv4 NLRI (§3 d), data = the missing type.
    let u = soft(&attrs(&[ORIGIN, AS_PATH4]), NLRI, &EBGP4);
    assert_eq!(first_error(&u), (3, taw, 3));
    assert_eq!(u.errors[0].notification.as_ref().unwrap().data, vec![3]);
    // ... but a pure withdrawal needs no attributes at all.
    let w = decode(&msg(2, &update_body(NLRI, &[], &[])), &EBGP4).unwrap();
    let Message::Update(w) = w else { panic!() };
    assert!(w.errors.is_empty());
    // An attribute overrunning the attribute list (§4): NLRI still found.
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, &[0xc0, 8, 8, 0, 0]]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u).1, taw);
    assert_eq!(u.withdrawn_prefixes(), vec![p("198.51.100.0/24")]);
    // Two octets left: too short for any attribute header (§4).
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, &[0x40, 1]]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u).1, taw);
}

/// RFC 7606 §5.2: path attributes but no NLRI (neither the NLRI field nor
/// MP_REACH_NLRI) leave treat-as-withdraw nothing to withdraw, so an error
/// calling for it resets the session: ORIGIN 5, AS_PATH [65020], NEXT_HOP
/// and no NLRI is a NOTIFICATION 3/6, as if RFC 7606 did not exist.
#[test]
fn update_rfc7606_no_nlri_makes_treat_as_withdraw_a_session_reset() {
    let as_path: &[u8] = &[0x40, 2, 6, 2, 1, 0, 0, 0xfe, 0x1c];
    let bad_origin: &[u8] = &[0x40, 1, 1, 5];
    let body = update_body(&[], &attrs(&[bad_origin, as_path, NEXT_HOP]), &[]);
    assert_eq!(err(&msg(2, &body), &EBGP4), (3, 6, bad_origin.to_vec()));
    // The same with withdrawn routes beside the attributes.
    let body = update_body(NLRI, &attrs(&[bad_origin, as_path, NEXT_HOP]), &[]);
    assert_eq!(err(&msg(2, &body), &EBGP4).1, 6);
    // With NLRI the UPDATE is treated as withdraw and the session stays.
    let u = soft(&attrs(&[bad_origin, as_path, NEXT_HOP]), NLRI, &EBGP4);
    assert!(u.treat_as_withdraw());
    // An attribute that is only discarded keeps a no-NLRI UPDATE harmless.
    let u = soft(&attrs(&[ORIGIN, as_path, &[0x80, 6, 1, 0]]), &[], &EBGP4);
    assert_eq!(first_error(&u).1, AttrAction::Discard);
}

/// RFC 7606 §6: what is logged of an UPDATE treated as withdraw names its
/// NLRI and shows the message, both bounded.
#[test]
fn treat_as_withdraw_report_names_the_nlri_and_the_update() {
    let bad_origin: &[u8] = &[0x40, 1, 1, 3];
    let one = msg(
        2,
        &update_body(&[], &attrs(&[bad_origin, AS_PATH4, NEXT_HOP]), NLRI),
    );
    let Message::Update(u) = decode(&one, &EBGP4).unwrap() else {
        panic!()
    };
    let report = u.withdraw_report(&one).unwrap();
    assert_eq!(
        report,
        format!(
            "treated as withdraw: NLRI (1) 198.51.100.0/24; UPDATE ({} octets) {}",
            one.len(),
            one.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    );
    // 300 prefixes: eight named, the UPDATE cut at 96 octets.
    let many: Vec<u8> = (0..300u32)
        .flat_map(|i| [32, 10, (i >> 8) as u8, i as u8, 1])
        .collect();
    let big = msg(
        2,
        &update_body(&[], &attrs(&[bad_origin, AS_PATH4, NEXT_HOP]), &many),
    );
    let Message::Update(u) = decode(&big, &EBGP4).unwrap() else {
        panic!()
    };
    let report = u.withdraw_report(&big).unwrap();
    assert!(
        report.starts_with("treated as withdraw: NLRI (300) 10.0.0.1/32 10.0.1.1/32 "),
        "{report}"
    );
    assert!(
        report.contains(" … ; UPDATE (") || report.contains(" …; UPDATE ("),
        "{report}"
    );
    assert!(report.len() < 400, "{}", report.len());
    assert!(report.ends_with('…'));
    // Nothing to report for a clean UPDATE.
    let clean = msg(
        2,
        &update_body(&[], &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP]), NLRI),
    );
    let Message::Update(u) = decode(&clean, &EBGP4).unwrap() else {
        panic!()
    };
    assert_eq!(u.withdraw_report(&clean), None);
}

#[test]
fn update_rfc7606_mp_reach_with_bad_flags_withdraws_its_nlri() {
    let mp = [
        0xc0, 14, 22, 0, 2, 1, 16, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
    ];
    // Prefix ::/0 is a single zero octet: make it 2001:db8::/32 instead.
    let mut mp = mp.to_vec();
    mp.truncate(mp.len() - 1);
    mp.extend_from_slice(&[32, 0x20, 0x01, 0x0d, 0xb8]);
    mp[2] = (mp.len() - 3) as u8;
    let u = soft(&attrs(&[&mp, ORIGIN, AS_PATH4]), &[], &EBGP4);
    assert_eq!(first_error(&u), (14, AttrAction::TreatAsWithdraw, 4));
    assert!(u.announced().is_empty());
    assert_eq!(u.withdrawn_prefixes(), vec![p("2001:db8::/32")]);
    // With correct flags the same attribute announces the prefix, and a
    // missing AS_PATH is treat-as-withdraw (§3 d).
    mp[0] = 0x80;
    let u = soft(&attrs(&[&mp, ORIGIN, AS_PATH4]), &[], &EBGP4);
    assert!(u.errors.is_empty());
    assert_eq!(u.announced(), vec![p("2001:db8::/32")]);
    let u = soft(&attrs(&[&mp, ORIGIN]), &[], &EBGP4);
    assert_eq!(first_error(&u), (2, AttrAction::TreatAsWithdraw, 3));
}

#[test]
fn update_rfc7606_attribute_discard() {
    let d = AttrAction::Discard;
    let base = [ORIGIN, AS_PATH4, NEXT_HOP];
    // LOCAL_PREF from an eBGP peer (§7.5).
    let u = soft(
        &attrs(&[&base[..], &[&[0x40, 5, 4, 0, 0, 0, 100][..]]].concat()),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (5, d, 0));
    assert_eq!(
        u.errors[0].to_string(),
        "LOCAL_PREF (type 5): attribute discarded"
    );
    assert_eq!(u.local_pref(), None);
    assert_eq!(u.announced(), vec![p("198.51.100.0/24")]);
    // ATOMIC_AGGREGATE with a value (§7.6), AGGREGATOR of 7 octets (§7.7).
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, &[0x40, 6, 1, 0]]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (6, d, 5));
    let u = soft(
        &attrs(&[
            ORIGIN,
            AS_PATH4,
            NEXT_HOP,
            &[0xc0, 7, 7, 0, 0, 1, 10, 0, 0, 1],
        ]),
        NLRI,
        &EBGP4,
    );
    assert_eq!(first_error(&u), (7, d, 5));
    assert!(!u.treat_as_withdraw());
    // A second COMMUNITIES (§3 g): the first one wins.
    let c1: &[u8] = &[0xc0, 8, 4, 0, 1, 0, 1];
    let c2: &[u8] = &[0xc0, 8, 4, 0, 2, 0, 2];
    let u = soft(&attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, c1, c2]), NLRI, &EBGP4);
    assert_eq!(first_error(&u).1, d);
    assert_eq!(u.communities(), &[Community(1, 1)]);
    // AS4_PATH from a four-octet speaker (RFC 6793 §3) and a malformed one
    // on a two-octet session (RFC 6793 §6).
    let as4: &[u8] = &[0xc0, 17, 6, 2, 1, 0, 0, 0xfd, 0xe9];
    let u = soft(&attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, as4]), NLRI, &EBGP4);
    assert_eq!(first_error(&u), (17, d, 0));
    let two = DecodeCtx {
        four_octet_as: false,
        ebgp: true,
    };
    let as_path2: &[u8] = &[0x40, 2, 4, 2, 1, 0x5b, 0xa0];
    let u = soft(&attrs(&[ORIGIN, as_path2, NEXT_HOP, as4]), NLRI, &two);
    assert!(u.errors.is_empty());
    let bad_as4: &[u8] = &[0xc0, 17, 6, 3, 1, 0, 0, 0xfd, 0xe9];
    let u = soft(&attrs(&[ORIGIN, as_path2, NEXT_HOP, bad_as4]), NLRI, &two);
    assert_eq!(first_error(&u), (17, d, 9));
    assert!(!u.treat_as_withdraw());
}

#[test]
fn unknown_optional_attributes_and_families_are_kept_raw() {
    let unknown: &[u8] = &[0xe0, 99, 2, 0xab, 0xcd];
    // MP_REACH_NLRI for AFI 25 (L2VPN) SAFI 65.
    let l2: &[u8] = &[0x80, 14, 5, 0, 25, 65, 0, 0];
    let u = soft(
        &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, unknown, l2]),
        NLRI,
        &EBGP4,
    );
    assert!(u.errors.is_empty());
    assert!(u.attrs.contains(&PathAttr::Unknown {
        flags: 0xe0,
        type_code: 99,
        value: vec![0xab, 0xcd]
    }));
    assert!(matches!(
        u.attrs.last(),
        Some(PathAttr::Unknown { type_code: 14, .. })
    ));
    let bytes = msg(
        2,
        &update_body(
            &[],
            &attrs(&[ORIGIN, AS_PATH4, NEXT_HOP, unknown, l2]),
            NLRI,
        ),
    );
    assert_eq!(encode(&Message::Update(u), &EBGP4).unwrap(), bytes);
}

#[test]
fn route_refresh_length_error_carries_the_message() {
    let m = msg(5, &[0, 1, 2, 1, 9]);
    assert_eq!(err(&m, &EBGP4), (7, 1, m.clone()));
}

// ===== encoder packing =====

fn vip_attrs() -> PathAttrs {
    PathAttrs {
        origin: Origin::Igp,
        as_path: vec![65001, 65001],
        next_hop: "192.0.2.1".parse().unwrap(),
        med: None,
        local_pref: None,
        communities: vec![Community(65001, 666)],
        large_communities: vec![LargeCommunity(65001, 1, 1)],
        otc: None,
    }
}

fn decode_all(msgs: &[Vec<u8>], ctx: &DecodeCtx) -> (Vec<Prefix>, Vec<Prefix>) {
    let (mut ann, mut wd) = (Vec::new(), Vec::new());
    for m in msgs {
        assert!(m.len() <= 4096);
        let Ok(Message::Update(u)) = decode(m, ctx) else {
            panic!("not an UPDATE");
        };
        assert!(u.errors.is_empty(), "{:?}", u.errors);
        ann.extend(u.announced());
        wd.extend(u.withdrawn_prefixes());
    }
    (ann, wd)
}

#[test]
fn ten_thousand_host_routes_fit_in_thirteen_updates() {
    let routes: Vec<(Prefix, PathAttrs)> = (0..10_000u32)
        .map(|i| {
            let a = Ipv4Addr::from(0x0a00_0000 + i);
            (Prefix::new(IpAddr::V4(a), 32).unwrap(), vip_attrs())
        })
        .collect();
    let msgs = encode_ok(&routes, &[], true);
    assert!(msgs.len() <= 13, "{} UPDATEs", msgs.len());
    let (ann, wd) = decode_all(&msgs, &EBGP4);
    assert!(wd.is_empty());
    assert_eq!(ann, routes.iter().map(|r| r.0).collect::<Vec<_>>());
    // Withdrawing them all: 4073 octets of withdrawn routes per message.
    let prefixes: Vec<Prefix> = routes.iter().map(|r| r.0).collect();
    let w = encode_ok(&[], &prefixes, true);
    assert!(w.len() <= 13, "{} UPDATEs", w.len());
    assert_eq!(decode_all(&w, &EBGP4).1, prefixes);
}

#[test]
fn ipv6_routes_and_mixed_groups_pack_by_attributes() {
    let v6 = PathAttrs {
        next_hop: "2001:db8::1".parse().unwrap(),
        ..vip_attrs()
    };
    let other = PathAttrs {
        as_path: vec![65001],
        ..vip_attrs()
    };
    let mut routes = Vec::new();
    for i in 0..3000u32 {
        let a =
            Ipv6Addr::from(0x2001_0db8_0000_0000_0000_0000_0000_0000u128 + (u128::from(i) << 64));
        routes.push((Prefix::new(IpAddr::V6(a), 64).unwrap(), v6.clone()));
        if i % 2 == 0 {
            let a = Ipv4Addr::from(0xc633_6400 + i);
            routes.push((Prefix::new(IpAddr::V4(a), 32).unwrap(), other.clone()));
        }
    }
    let withdrawn = vec![p("10.9.0.0/16"), p("2001:db8:dead::/48")];
    let msgs = encode_ok(&routes, &withdrawn, false);
    let (ann, wd) = decode_all(
        &msgs,
        &DecodeCtx {
            four_octet_as: false,
            ebgp: true,
        },
    );
    assert_eq!(wd, withdrawn);
    let want: BTreeSet<Prefix> = routes.iter().map(|r| r.0).collect();
    assert_eq!(ann.iter().copied().collect::<BTreeSet<_>>(), want);
    assert_eq!(ann.len(), routes.len());
    // 3000 /64s at 9 octets each need at least 7 messages; 1500 /32s at 5, 2.
    assert!(msgs.len() <= 2 + 7 + 2 + 1, "{} UPDATEs", msgs.len());
}

#[test]
fn long_as_path_is_split_into_segments_of_255() {
    let path: Vec<u32> = (1..=600).collect();
    let attrs = PathAttrs {
        as_path: path.clone(),
        ..vip_attrs()
    };
    let msgs = encode_ok(&[(p("192.0.2.0/24"), attrs)], &[], true);
    let Ok(Message::Update(u)) = decode(&msgs[0], &EBGP4) else {
        panic!()
    };
    let segs: Vec<usize> = u
        .as_path()
        .unwrap()
        .segments
        .iter()
        .map(|s| s.asns.len())
        .collect();
    assert_eq!(segs, vec![255, 255, 90]);
    assert_eq!(u.as_path().unwrap().asns(), path);
}

#[test]
fn ipv4_next_hop_for_ipv6_routes_is_mapped() {
    let attrs = vip_attrs();
    let msgs = encode_ok(&[(p("2001:db8::/48"), attrs)], &[], true);
    let Ok(Message::Update(u)) = decode(&msgs[0], &EBGP4) else {
        panic!()
    };
    assert_eq!(u.next_hop(), Some("::ffff:192.0.2.1".parse().unwrap()));
}

/// RFC 8950: an IPv4 route with an IPv6 next hop (which the RIB-out gives
/// only on a session that negotiated Extended Next Hop Encoding) goes in
/// MP_REACH_NLRI with AFI 1, SAFI 1 and the 16-octet next hop, first, and
/// without NEXT_HOP; withdrawals stay in the classic field.
#[test]
fn ipv4_routes_with_an_ipv6_next_hop_go_in_mp_reach_nlri() {
    let v6nh = PathAttrs {
        next_hop: "2001:db8::1".parse().unwrap(),
        ..vip_attrs()
    };
    let msgs = encode_ok(&[(p("192.0.2.0/24"), v6nh)], &[p("198.51.100.0/24")], true);
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    let Ok(Message::Update(w)) = decode(&msgs[0], &EBGP4) else {
        panic!()
    };
    assert_eq!(w.withdrawn_prefixes(), vec![p("198.51.100.0/24")]);
    let m = &msgs[1];
    let Ok(Message::Update(u)) = decode(m, &EBGP4) else {
        panic!()
    };
    assert!(u.errors.is_empty(), "{:?}", u.errors);
    let Some(PathAttr::MpReach(r)) = u.attrs.first() else {
        panic!("{:?}", u.attrs)
    };
    assert_eq!(r.afi, Afi::Ipv4);
    assert_eq!(r.nlri, vec![p("192.0.2.0/24")]);
    assert_eq!(
        r.next_hop,
        MpNextHop::Ipv6 {
            global: "2001:db8::1".parse().unwrap(),
            link_local: None
        }
    );
    assert!(!u.attrs.iter().any(|a| matches!(a, PathAttr::NextHop(_))));
    // AFI 1, SAFI 1, next hop length 16, on the wire.
    assert!(m.windows(4).any(|w| w == [0, 1, 1, 16]), "{m:?}");
}

#[test]
fn attributes_too_long_for_an_update_are_reported_not_sent() {
    // 1100 communities: 4400 octets of attributes, no room for a prefix.
    let attrs = PathAttrs {
        communities: (0..1100u16).map(|i| Community(65000, i)).collect(),
        ..vip_attrs()
    };
    let routes = vec![
        (p("192.0.2.0/24"), attrs.clone()),
        (p("2001:db8::/48"), attrs),
    ];
    let out = encode_updates(&routes, &[p("10.9.0.0/16")], true);
    // The withdrawal still goes out; both announcements are reported.
    assert_eq!(out.messages.len(), 1);
    let reasons: Vec<String> = out.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(out.skipped.len(), 2, "{reasons:?}");
    for s in &out.skipped {
        assert!(!s.withdrawn);
        assert!(
            matches!(s.reason, SkipReason::AttributesTooLong(n) if n > 4096),
            "{reasons:?}"
        );
    }
}

#[test]
fn link_local_next_hop_round_trips() {
    let u = Update {
        attrs: vec![
            PathAttr::MpReach(MpReach {
                afi: Afi::Ipv6,
                next_hop: MpNextHop::Ipv6 {
                    global: "2001:db8::1".parse().unwrap(),
                    link_local: Some("fe80::1".parse().unwrap()),
                },
                nlri: vec![p("2001:db8:1::/48")],
            }),
            PathAttr::Origin(Origin::Igp),
            PathAttr::AsPath(AsPath::sequence(&[65001])),
        ],
        ..Update::default()
    };
    let bytes = encode(&Message::Update(u.clone()), &EBGP4).unwrap();
    // 32-octet next hop (RFC 2545 §3).
    assert_eq!(bytes[23 + 4 + 3], 32);
    assert_eq!(decode(&bytes, &EBGP4), Ok(Message::Update(u)));
}

#[test]
fn ipv4_unicast_in_mp_attributes_is_understood() {
    // Some speakers send IPv4 unicast in MP_REACH_NLRI (RFC 4760 allows it).
    let u = Update {
        attrs: vec![
            PathAttr::MpReach(MpReach {
                afi: Afi::Ipv4,
                next_hop: MpNextHop::Ipv4(Ipv4Addr::new(192, 0, 2, 9)),
                nlri: vec![p("198.51.100.0/24")],
            }),
            PathAttr::MpUnreach(MpUnreach {
                afi: Afi::Ipv4,
                withdrawn: vec![p("203.0.113.0/24")],
            }),
            PathAttr::Origin(Origin::Egp),
            PathAttr::AsPath(AsPath::sequence(&[65001])),
        ],
        ..Update::default()
    };
    let bytes = encode(&Message::Update(u.clone()), &EBGP4).unwrap();
    let Ok(Message::Update(d)) = decode(&bytes, &EBGP4) else {
        panic!()
    };
    assert_eq!(d, u);
    assert_eq!(d.next_hop(), Some("192.0.2.9".parse().unwrap()));
    assert_eq!(d.announced(), vec![p("198.51.100.0/24")]);
    assert_eq!(d.withdrawn_prefixes(), vec![p("203.0.113.0/24")]);
    assert_eq!(d.origin(), Some(Origin::Egp));
}

// ===== proptest round trips =====

mod round_trip {
    use super::*;
    use proptest::prelude::*;

    fn prefix4() -> impl Strategy<Value = Prefix> {
        (any::<u32>(), 0u8..=32)
            .prop_map(|(a, l)| Prefix::new(IpAddr::V4(Ipv4Addr::from(a)), l).unwrap())
    }

    fn prefix6() -> impl Strategy<Value = Prefix> {
        (any::<u128>(), 0u8..=128)
            .prop_map(|(a, l)| Prefix::new(IpAddr::V6(Ipv6Addr::from(a)), l).unwrap())
    }

    fn asn(four: bool) -> BoxedStrategy<u32> {
        if four {
            any::<u32>().boxed()
        } else {
            (0u32..=65535).boxed()
        }
    }

    fn as_path(four: bool) -> impl Strategy<Value = AsPath> {
        prop::collection::vec(
            (
                prop_oneof![
                    Just(SegmentType::Set),
                    Just(SegmentType::Sequence),
                    Just(SegmentType::ConfedSequence),
                    Just(SegmentType::ConfedSet)
                ],
                prop::collection::vec(asn(four), 1..20),
            ),
            0..4,
        )
        .prop_map(|segs| AsPath {
            segments: segs
                .into_iter()
                .map(|(kind, asns)| AsSegment { kind, asns })
                .collect(),
        })
    }

    fn origin() -> impl Strategy<Value = Origin> {
        prop_oneof![
            Just(Origin::Igp),
            Just(Origin::Egp),
            Just(Origin::Incomplete)
        ]
    }

    fn attrs(four: bool) -> impl Strategy<Value = Vec<PathAttr>> {
        let v6nh =
            (any::<u128>(), prop::option::of(any::<u128>())).prop_map(|(g, l)| MpNextHop::Ipv6 {
                global: Ipv6Addr::from(g),
                link_local: l.map(Ipv6Addr::from),
            });
        (
            origin(),
            as_path(four),
            prop::option::of(any::<[u8; 4]>()),
            prop::option::of(any::<u32>()),
            prop::option::of(any::<u32>()),
            any::<bool>(),
            prop::option::of((asn(four), any::<[u8; 4]>())),
            prop::collection::vec(any::<(u16, u16)>(), 0..5),
            prop::collection::vec(any::<(u32, u32, u32)>(), 0..5),
            prop::option::of((v6nh, prop::collection::vec(prefix6(), 0..10))),
            prop::option::of(prop::collection::vec(prefix6(), 0..10)),
            prop::collection::vec(any::<u8>(), 0..300),
        )
            .prop_map(
                move |(o, path, nh, med, lp, atomic, aggr, comms, large, reach, unreach, raw)| {
                    let mut v = Vec::new();
                    if let Some((next_hop, nlri)) = reach {
                        v.push(PathAttr::MpReach(MpReach {
                            afi: Afi::Ipv6,
                            next_hop,
                            nlri,
                        }));
                    }
                    if let Some(withdrawn) = unreach {
                        v.push(PathAttr::MpUnreach(MpUnreach {
                            afi: Afi::Ipv6,
                            withdrawn,
                        }));
                    }
                    v.push(PathAttr::Origin(o));
                    v.push(PathAttr::AsPath(path));
                    if let Some(n) = nh {
                        v.push(PathAttr::NextHop(Ipv4Addr::from(n)));
                    }
                    if let Some(m) = med {
                        v.push(PathAttr::Med(m));
                    }
                    if let Some(l) = lp {
                        v.push(PathAttr::LocalPref(l));
                    }
                    if atomic {
                        v.push(PathAttr::AtomicAggregate);
                    }
                    if let Some((asn, a)) = aggr {
                        v.push(PathAttr::Aggregator {
                            asn,
                            addr: Ipv4Addr::from(a),
                        });
                    }
                    if !comms.is_empty() {
                        v.push(PathAttr::Communities(
                            comms.into_iter().map(|(a, b)| Community(a, b)).collect(),
                        ));
                    }
                    if !large.is_empty() {
                        v.push(PathAttr::LargeCommunities(
                            large
                                .into_iter()
                                .map(|(a, b, c)| LargeCommunity(a, b, c))
                                .collect(),
                        ));
                    }
                    v.push(PathAttr::Unknown {
                        flags: 0xc0,
                        type_code: 200,
                        value: raw,
                    });
                    v
                },
            )
    }

    fn update(four: bool) -> impl Strategy<Value = Update> {
        (
            prop::collection::vec(prefix4(), 0..20),
            attrs(four),
            prop::collection::vec(prefix4(), 0..20),
            any::<bool>(),
        )
            .prop_map(|(withdrawn, attrs, nlri, with_attrs)| {
                let has_reach = attrs.iter().any(|a| matches!(a, PathAttr::MpReach(_)));
                if !with_attrs && !has_reach {
                    // A pure withdrawal.
                    return Update {
                        withdrawn,
                        ..Update::default()
                    };
                }
                // Classic NLRI needs NEXT_HOP to decode without errors.
                let has_nh = attrs.iter().any(|a| matches!(a, PathAttr::NextHop(_)));
                Update {
                    withdrawn,
                    nlri: if has_nh { nlri } else { Vec::new() },
                    attrs,
                    errors: Vec::new(),
                }
            })
    }

    fn capability() -> impl Strategy<Value = Capability> {
        prop_oneof![
            (any::<u16>(), any::<u8>())
                .prop_map(|(afi, safi)| Capability::Multiprotocol { afi, safi }),
            Just(Capability::RouteRefresh),
            any::<u32>().prop_map(Capability::FourOctetAs),
            (
                0u8..16,
                0u16..4096,
                prop::collection::vec(any::<(u16, u8, u8)>(), 0..4)
            )
                .prop_map(|(flags, restart_time, f)| Capability::GracefulRestart(
                    GracefulRestart {
                        flags,
                        restart_time,
                        families: f
                            .into_iter()
                            .map(|(afi, safi, flags)| GracefulRestartFamily { afi, safi, flags })
                            .collect(),
                    }
                )),
            // Codes pathosd does not interpret.
            (
                prop_oneof![Just(70u8), Just(71), 128u8..=255],
                prop::collection::vec(any::<u8>(), 0..20)
            )
                .prop_map(|(code, value)| Capability::Unknown { code, value }),
        ]
    }

    fn open() -> impl Strategy<Value = Open> {
        (
            any::<u32>(),
            prop_oneof![Just(0u16), 3u16..],
            1u32..,
            prop::collection::vec(capability(), 0..40),
        )
            .prop_map(|(asn, hold_time, id, caps)| {
                Open::new(asn, hold_time, Ipv4Addr::from(id), caps)
            })
    }

    fn notification() -> impl Strategy<Value = Notification> {
        prop_oneof![
            (
                any::<u8>(),
                any::<u8>(),
                prop::collection::vec(any::<u8>(), 0..100)
            )
                .prop_map(|(code, subcode, data)| Notification {
                    code,
                    subcode,
                    data
                }),
            ".{0,300}".prop_map(|s| Notification::administrative_shutdown(&s)),
        ]
    }

    proptest! {
        #[test]
        fn update_four_octet(u in update(true)) {
            let ctx = DecodeCtx { four_octet_as: true, ebgp: false };
            let m = Message::Update(u);
            let bytes = encode(&m, &ctx).unwrap();
            prop_assert_eq!(decode(&bytes, &ctx), Ok(m));
        }

        #[test]
        fn update_two_octet(u in update(false)) {
            let ctx = DecodeCtx { four_octet_as: false, ebgp: false };
            let m = Message::Update(u);
            let bytes = encode(&m, &ctx).unwrap();
            prop_assert_eq!(decode(&bytes, &ctx), Ok(m));
        }

        #[test]
        fn open_round_trip(o in open()) {
            let ctx = DecodeCtx::default();
            let m = Message::Open(o);
            if let Some(bytes) = encode(&m, &ctx) {
                prop_assert_eq!(decode(&bytes, &ctx), Ok(m));
            }
        }

        #[test]
        fn notification_round_trip(n in notification()) {
            let ctx = DecodeCtx::default();
            let m = Message::Notification(n.clone());
            let bytes = encode(&m, &ctx).unwrap();
            prop_assert_eq!(decode(&bytes, &ctx), Ok(m));
            if n.code == 6 && n.subcode == 2 && !n.data.is_empty() {
                prop_assert!(n.shutdown_communication().is_some());
            }
        }

        #[test]
        fn encode_updates_round_trip(
            v4 in prop::collection::vec(prefix4(), 0..300),
            v6 in prop::collection::vec(prefix6(), 0..300),
            w in prop::collection::vec(prop_oneof![prefix4(), prefix6()], 0..300),
            path in prop::collection::vec(any::<u32>(), 0..300),
            four in any::<bool>(),
        ) {
            let attrs = PathAttrs { as_path: path, ..vip_attrs() };
            let attrs6 = PathAttrs { next_hop: "2001:db8::1".parse().unwrap(), ..attrs.clone() };
            let mut routes: Vec<(Prefix, PathAttrs)> = v4.iter().map(|p| (*p, attrs.clone())).collect();
            routes.extend(v6.iter().map(|p| (*p, attrs6.clone())));
            let msgs = encode_ok(&routes, &w, four);
            let (ann, wd) = decode_all(&msgs, &DecodeCtx { four_octet_as: four, ebgp: true });
            let mut want = v4.clone();
            want.extend_from_slice(&v6);
            prop_assert_eq!(ann, want);
            let w4: Vec<Prefix> = w.iter().filter(|p| p.afi() == Afi::Ipv4).copied().collect();
            let w6: Vec<Prefix> = w.iter().filter(|p| p.afi() == Afi::Ipv6).copied().collect();
            prop_assert_eq!(wd, [w4, w6].concat());
        }
    }
}

// ===== live: BIRD parses what the encoder produces =====

/// Talks to a real BIRD over loopback with nothing but the codec and a
/// blocking socket: OPEN/KEEPALIVE exchange, thousands of routes in packed
/// UPDATEs, End-of-RIB, withdrawals and a Shutdown Communication, each
/// checked through `birdc`.
mod bird_live {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::process::Command;
    use std::time::{Duration, Instant};

    const LOCAL_AS: u32 = 4_200_000_002;
    const BIRD_AS: u32 = 65010;

    struct Bird {
        dir: PathBuf,
        ctl: PathBuf,
        pid: Option<i32>,
    }

    impl Bird {
        fn birdc(&self, args: &[&str]) -> String {
            let out = Command::new("birdc")
                .arg("-s")
                .arg(&self.ctl)
                .args(args)
                .output()
                .expect("birdc runs");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    }

    impl Drop for Bird {
        fn drop(&mut self) {
            let _ = Command::new("birdc")
                .arg("-s")
                .arg(&self.ctl)
                .arg("down")
                .output();
            if let Some(pid) = self.pid {
                // Only the BIRD this test started, by its pidfile.
                let _ = Command::new("kill").arg(pid.to_string()).output();
            }
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    /// Polls `f` every 50 ms until it returns Some or `secs` pass.
    fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = f() {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn start_bird(bird_ip: Ipv4Addr, our_ip: Ipv4Addr, port: u16) -> Bird {
        let dir = std::env::temp_dir().join(format!("pathosd-wire-bird-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let conf = format!(
            "log \"{log}\" all;\n\
             router id {bird_ip};\n\
             protocol device {{ }}\n\
             protocol bgp pathosd {{\n\
               local {bird_ip} port {port} as {BIRD_AS};\n\
               neighbor {our_ip} as {LOCAL_AS};\n\
               multihop; strict bind on; passive on; hold time 90;\n\
               ipv4 {{ import all; export none; }};\n\
               ipv6 {{ import all; export none; }};\n\
             }}\n",
            log = dir.join("bird.log").display()
        );
        let conf_path = dir.join("bird.conf");
        fs::write(&conf_path, conf).unwrap();
        let ctl = dir.join("bird.ctl");
        let pidfile = dir.join("bird.pid");
        let status = Command::new("bird")
            .arg("-c")
            .arg(&conf_path)
            .arg("-s")
            .arg(&ctl)
            .arg("-P")
            .arg(&pidfile)
            .status()
            .expect("bird (Debian bird2) is installed: scripts/install-test-deps.sh");
        assert!(status.success(), "bird failed to start");
        let mut bird = Bird {
            dir,
            ctl,
            pid: None,
        };
        bird.pid = Some(wait_for(10, "bird pidfile", || {
            fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
        }));
        wait_for(10, "bird control socket", || {
            bird.birdc(&["show", "status"])
                .contains("Daemon is up")
                .then_some(())
        });
        bird
    }

    struct Peer {
        sock: TcpStream,
        buf: Vec<u8>,
        ctx: DecodeCtx,
    }

    impl Peer {
        fn send(&mut self, bytes: &[u8]) {
            self.sock.write_all(bytes).unwrap();
        }

        /// Next message, skipping KEEPALIVEs unless asked for one.
        fn recv(&mut self) -> Message {
            loop {
                if let Some(len) = frame(&self.buf).unwrap() {
                    let msg: Vec<u8> = self.buf.drain(..len).collect();
                    return decode(&msg, &self.ctx).unwrap();
                }
                let mut chunk = [0u8; 4096];
                let n = self
                    .sock
                    .read(&mut chunk)
                    .expect("read within the socket timeout");
                assert!(n > 0, "BIRD closed the connection");
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }
    }

    fn route_count(bird: &Bird) -> usize {
        // "N of M routes for K networks in table masterX", one line per table.
        bird.birdc(&["show", "route", "count"])
            .lines()
            .filter_map(|l| l.split(" of ").next()?.trim().parse::<usize>().ok())
            .sum()
    }

    /// Connects to BIRD from `our_ip` and brings the session up (RFC 4271
    /// §8.2.2 OpenSent → OpenConfirm → Established).
    fn establish(bird: &Bird, bird_ip: Ipv4Addr, our_ip: Ipv4Addr, port: u16) -> Peer {
        let sock = wait_for(10, "BIRD listening", || {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
            s.bind(&SocketAddr::from((our_ip, 0)).into()).ok()?;
            s.connect_timeout(
                &SocketAddr::from((bird_ip, port)).into(),
                Duration::from_secs(2),
            )
            .ok()?;
            Some(TcpStream::from(s))
        });
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut peer = Peer {
            sock,
            buf: Vec::new(),
            ctx: DecodeCtx::default(),
        };

        // OPEN exchange (RFC 4271 §8.2.2 OpenSent → OpenConfirm → Established).
        let ours = Open::pathosd(
            LOCAL_AS,
            90,
            our_ip,
            &[Afi::Ipv4, Afi::Ipv6],
            true,
            false,
            None,
        );
        peer.send(&encode(&Message::Open(ours.clone()), &peer.ctx).unwrap());
        let Message::Open(theirs) = peer.recv() else {
            panic!("expected OPEN from BIRD");
        };
        assert_eq!(theirs.validate(LOCAL_AS, our_ip, BIRD_AS), Ok(()));
        assert_eq!(theirs.bgp_id, bird_ip);
        peer.ctx = DecodeCtx::negotiated(&ours, &theirs);
        assert!(peer.ctx.four_octet_as && peer.ctx.ebgp);
        peer.send(&encode_keepalive());
        assert_eq!(peer.recv(), Message::Keepalive);
        wait_for(10, "Established", || {
            bird.birdc(&["show", "protocols", "pathosd"])
                .contains("Established")
                .then_some(())
        });
        peer
    }

    #[test]
    fn bird_accepts_open_updates_and_shutdown_communication() {
        let n = (std::process::id() % 200) as u8 + 20;
        let bird_ip = Ipv4Addr::new(127, 77, n, 1);
        let our_ip = Ipv4Addr::new(127, 77, n, 2);
        let port = 20_000 + (std::process::id() % 20_000) as u16;
        let bird = start_bird(bird_ip, our_ip, port);

        let mut peer = establish(&bird, bird_ip, our_ip, port);

        // 4000 IPv4 /32 and 500 IPv6 /128 VIPs, packed.
        let attrs4 = PathAttrs {
            origin: Origin::Igp,
            as_path: vec![LOCAL_AS, LOCAL_AS],
            next_hop: IpAddr::V4(our_ip),
            med: Some(10),
            local_pref: None,
            communities: vec![Community(65010, 666), Community(65535, 0)],
            large_communities: vec![LargeCommunity(LOCAL_AS, 1, 2)],
            otc: None,
        };
        let attrs6 = PathAttrs {
            next_hop: "2001:db8::2".parse().unwrap(),
            ..attrs4.clone()
        };
        let v4: Vec<Prefix> = (0..4000u32)
            .map(|i| Prefix::new(IpAddr::V4(Ipv4Addr::from(0x0a4d_0000 + i)), 32).unwrap())
            .collect();
        let v6: Vec<Prefix> = (0..500u128)
            .map(|i| {
                let a = Ipv6Addr::from(0x2001_0db8_0077_0000_0000_0000_0000_0000u128 + i);
                Prefix::new(IpAddr::V6(a), 128).unwrap()
            })
            .collect();
        let mut routes: Vec<(Prefix, PathAttrs)> =
            v4.iter().map(|p| (*p, attrs4.clone())).collect();
        routes.extend(v6.iter().map(|p| (*p, attrs6.clone())));
        let msgs = encode_ok(&routes, &[], peer.ctx.four_octet_as);
        // 4000 /32 at 5 octets: 5 messages; 500 /128 at 17 octets: 3.
        assert!(msgs.len() <= 8, "{} UPDATEs", msgs.len());
        for m in &msgs {
            peer.send(m);
        }
        peer.send(&encode_end_of_rib(Afi::Ipv4));
        peer.send(&encode_end_of_rib(Afi::Ipv6));
        wait_for(20, "4500 routes in BIRD", || {
            (route_count(&bird) == 4500).then_some(())
        });

        let shown = bird.birdc(&["show", "route", "all", "10.77.0.5/32"]);
        for want in [
            "BGP.origin: IGP",
            "BGP.as_path: 4200000002 4200000002",
            "BGP.med: 10",
            "BGP.community: (65010,666) (65535,0)",
            "BGP.large_community: (4200000002, 1, 2)",
        ] {
            assert!(shown.contains(want), "{want:?} missing in:\n{shown}");
        }
        let shown6 = bird.birdc(&["show", "route", "all", "2001:db8:77::7/128"]);
        assert!(shown6.contains("BGP.next_hop: 2001:db8::2"), "{shown6}");

        // Withdraw the first 3000 IPv4 and all IPv6 routes.
        let mut gone: Vec<Prefix> = v4[..3000].to_vec();
        gone.extend_from_slice(&v6);
        for m in encode_ok(&[], &gone, peer.ctx.four_octet_as) {
            peer.send(&m);
        }
        wait_for(20, "1000 routes left", || {
            (route_count(&bird) == 1000).then_some(())
        });

        // RFC 9003 Shutdown Communication as BIRD reports it.
        let text = "pathosd wire test: maintenance ✓";
        peer.send(
            &encode(
                &Message::Notification(Notification::administrative_shutdown(text)),
                &peer.ctx,
            )
            .unwrap(),
        );
        let status = wait_for(10, "BIRD to see the NOTIFICATION", || {
            let s = bird.birdc(&["show", "protocols", "all", "pathosd"]);
            s.contains("Administrative shutdown").then_some(s)
        });
        assert!(status.contains(text), "shutdown message missing:\n{status}");
        let log = fs::read_to_string(bird.dir.join("bird.log")).unwrap_or_default();
        assert!(
            !log.contains("Malformed") && !log.contains("Invalid"),
            "BIRD complained:\n{log}"
        );
    }
}

/// RFC 9234 §5: routes sent to a Customer, Peer or RS-Client carry
/// ONLY_TO_CUSTOMER, optional transitive (flags 0xC0), type 35, 4 octets
/// holding the local AS, after LARGE_COMMUNITIES (type-code order).
#[test]
fn otc_is_encoded_optional_transitive_with_the_local_as() {
    let mut a = bird_a_attrs(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
    a.otc = Some(4_200_000_001);
    let msgs = encode_ok(&[(p("198.51.100.0/24"), a.clone())], &[], true);
    let [m] = msgs.as_slice() else {
        panic!("{msgs:?}")
    };
    let otc = [0xc0, 35, 4, 0xfa, 0x56, 0xea, 0x01];
    assert!(m.windows(otc.len()).any(|w| w == otc), "{m:?}");
    let Message::Update(u) = decode(m, &EBGP4).unwrap() else {
        panic!()
    };
    assert_eq!(u.attrs.last(), Some(&PathAttr::Otc(4_200_000_001)));
    a.otc = None;
    let m = &encode_ok(&[(p("198.51.100.0/24"), a)], &[], true)[0];
    assert!(!m.windows(2).any(|w| w == [0xc0, 35]));
}

/// RFC 8950 §3 Extended Next Hop Encoding capability (code 5): 6-octet
/// triples (NLRI AFI, NLRI SAFI, Next Hop AFI); an empty value or one not
/// a multiple of 6 is 2/0, as every malformed known capability.
#[test]
fn extended_next_hop_capability() {
    let id = [10, 0, 0, 1];
    for bad in [
        &[2, 2, 5, 0][..],
        &[2, 7, 5, 5, 0, 1, 0, 1, 0],
        &[2, 9, 5, 7, 0, 1, 0, 1, 0, 2, 0],
    ] {
        assert_eq!(
            err(&msg(1, &open_body(4, 90, id, bad)), &EBGP4),
            (2, 0, vec![]),
            "{bad:?}"
        );
    }
    let open = |params: &[u8]| match decode(&msg(1, &open_body(4, 90, id, params)), &EBGP4) {
        Ok(Message::Open(o)) => o,
        other => panic!("{other:?}"),
    };
    // IPv4 unicast with an IPv6 next hop, after an IPv4 multicast triple.
    let o = open(&[2, 14, 5, 12, 0, 1, 0, 2, 0, 2, 0, 1, 0, 1, 0, 2]);
    assert!(o.extended_next_hop_ipv4());
    assert!(!open(&[2, 8, 5, 6, 0, 1, 0, 2, 0, 2]).extended_next_hop_ipv4());
    assert!(!open(&[]).extended_next_hop_ipv4());
    // Ours, when enabled: exactly that triple, and it decodes back.
    let id4 = Ipv4Addr::new(10, 0, 0, 1);
    let ours = Open::pathosd(65001, 90, id4, &[Afi::Ipv4], false, true, None);
    assert!(ours
        .capabilities
        .contains(&Capability::ExtendedNextHop(vec![(1, 1, 2)])));
    let bytes = encode(&Message::Open(ours), &EBGP4).unwrap();
    let Ok(Message::Open(back)) = decode(&bytes, &EBGP4) else {
        panic!()
    };
    assert!(back.extended_next_hop_ipv4());
    let off = Open::pathosd(65001, 90, id4, &[Afi::Ipv4], false, false, None);
    assert!(!off.extended_next_hop_ipv4());
}

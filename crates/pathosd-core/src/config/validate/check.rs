//! The rules of a VIP's checks: what every check has (its timing, its type,
//! no block of another type), then its type's options. Each rule builds
//! what it checked into the check's [`CheckSpec`] ("parse, don't
//! validate"): the probe's target, datagram, gRPC path and status numbers
//! are read here, once. The http(s) options are in `http`.

use super::super::dns_name::DnsName;
use super::super::duration::Dur;
use super::super::field::{join, Errors, Quote};
use super::super::run::{CheckSpec, Degraded, GrpcSpec, ProbeSpec};
use super::super::schema::{
    Check, CheckType, DnsCheck, ExpectedAnswer, GrpcCheck, PingCheck, UdpCheck, GRPC_HEALTH_METHOD,
};
use super::super::target::{DnsTarget, Host, HostPort};
use super::http::http;
use super::values::{grpc_code, header, hex_bytes};
use crate::bgp::types::Prefix;

/// Check `c` of a VIP with prefix `vip`, at path `cp`, as it runs; None
/// when a rule it breaks leaves no spec to build (that rule's error is in
/// `errs`).
pub(crate) fn check(vip: &Prefix, cp: &str, c: Check, errs: &mut Errors) -> Option<CheckSpec> {
    timing(cp, &c, errs);
    let Some(kind) = c.kind else {
        if !errs.has(&join(cp, "type")) {
            errs.push_fmt(
                join(cp, "type"),
                format_args!("required (one of {})", CheckType::ALL.join(", ")),
            );
        }
        return None;
    };
    blocks(cp, &c, kind, errs);
    let name = c.effective_name();
    let (interval, timeout, rise, fall) = (c.interval, c.timeout, c.rise, c.fall);
    let fast_interval = c.fast_interval.unwrap_or(interval);
    let detailed_metrics = c.detailed_metrics;
    let degraded = degraded(cp, &c, errs);
    let probe = probe(vip, cp, kind, c, errs)?;
    Some(CheckSpec {
        name,
        interval: interval.get(),
        fast_interval: fast_interval.get(),
        timeout: timeout.get(),
        rise,
        fall,
        detailed_metrics,
        degraded,
        probe,
    })
}

/// `degraded_latency` and `degraded_hold_down`: a latency that a passing
/// probe can exceed (above 0, below the timeout, which fails the probe).
fn degraded(cp: &str, c: &Check, errs: &mut Errors) -> Option<Degraded> {
    let latency = c.degraded_latency?;
    let p = join(cp, "degraded_latency");
    if latency.is_zero() {
        errs.push(&p, "0s must be greater than 0");
        return None;
    }
    if latency >= c.timeout {
        errs.push_fmt(
            &p,
            format_args!("{latency} must be less than timeout {}", c.timeout),
        );
        return None;
    }
    Some(Degraded {
        latency: latency.get(),
        hold_down: c.degraded_hold_down.get(),
    })
}

/// `interval`, `fast_interval`, `timeout`, `rise` and `fall`.
fn timing(cp: &str, c: &Check, errs: &mut Errors) {
    let interval_p = join(cp, "interval");
    let timeout_p = join(cp, "timeout");
    if c.interval.is_zero() {
        errs.push(&interval_p, "0s must be greater than 0");
    }
    if c.timeout.is_zero() {
        errs.push(&timeout_p, "0s must be greater than 0");
    } else if c.timeout >= c.interval && !errs.has(&interval_p) && !errs.has(&timeout_p) {
        errs.push_fmt(
            &timeout_p,
            format_args!("{} must be less than interval {}", c.timeout, c.interval),
        );
    }
    // A fast run, like any run, ends by its timeout before the next is due.
    if let Some(fast) = c.fast_interval {
        let fast_p = join(cp, "fast_interval");
        if fast.is_zero() {
            errs.push(&fast_p, "0s must be greater than 0");
        } else if fast > c.interval && !errs.has(&interval_p) {
            errs.push_fmt(
                &fast_p,
                format_args!("{fast} must not be more than interval {}", c.interval),
            );
        } else if fast <= c.timeout && !errs.has(&timeout_p) {
            errs.push_fmt(
                &fast_p,
                format_args!("{fast} must be more than timeout {}", c.timeout),
            );
        }
    }
    for (key, n) in [("rise", c.rise), ("fall", c.fall)] {
        if n == 0 {
            errs.push(join(cp, key), "0 must be at least 1");
        }
    }
}

/// A block for another type is almost always a copy-paste slip: the probe
/// would silently ignore it.
fn blocks(cp: &str, c: &Check, kind: CheckType, errs: &mut Errors) {
    let blocks: [(&str, bool, bool); 8] = [
        (
            "http",
            c.http.is_some(),
            matches!(kind, CheckType::Http | CheckType::Https),
        ),
        ("dns", c.dns.is_some(), kind == CheckType::Dns),
        ("ping", c.ping.is_some(), kind == CheckType::Ping),
        ("tcp", c.tcp.is_some(), kind == CheckType::Tcp),
        ("udp", c.udp.is_some(), kind == CheckType::Udp),
        ("grpc", c.grpc.is_some(), kind == CheckType::Grpc),
        ("exec", c.exec.is_some(), kind == CheckType::Exec),
        ("ubus", c.ubus.is_some(), kind == CheckType::Ubus),
    ];
    for (key, present, applies) in blocks {
        if present && !applies {
            errs.push_fmt(
                join(cp, key),
                format_args!("a {key} block does not apply to a {kind} check"),
            );
        }
    }
}

/// The probe of a check of type `kind`, from its type's block (the block's
/// defaults when it is absent: a required option then breaks its rule).
fn probe(
    vip: &Prefix,
    cp: &str,
    kind: CheckType,
    c: Check,
    errs: &mut Errors,
) -> Option<ProbeSpec> {
    match kind {
        CheckType::Http | CheckType::Https => {
            if kind == CheckType::Https && !crate::TLS {
                errs.push_fmt(join(cp, "type"), format_args!("https {}", crate::NEEDS_TLS));
            }
            let options = c.http.unwrap_or_default();
            let target = http(&options, kind, vip, &join(cp, "http"), errs)?;
            Some(ProbeSpec::Http {
                https: target.https,
                options,
                target: Box::new(target),
            })
        }
        CheckType::Dns => dns(vip, &join(cp, "dns"), c.dns.unwrap_or_default(), errs),
        CheckType::Ping => {
            let timeout_ok = !errs.has(&join(cp, "timeout"));
            let options = c.ping.unwrap_or_default();
            let dst = ping(
                vip,
                &join(cp, "ping"),
                &options,
                (c.timeout, timeout_ok),
                errs,
            )?;
            Some(ProbeSpec::Ping { options, dst })
        }
        CheckType::Tcp => {
            let options = c.tcp.unwrap_or_default();
            let t = &options;
            let target = host_port(vip, &join(cp, "tcp"), t.host.as_ref(), t.port, errs)?;
            Some(ProbeSpec::Tcp {
                options,
                target: Box::new(target),
            })
        }
        CheckType::Udp => udp(vip, &join(cp, "udp"), c.udp.unwrap_or_default(), errs),
        CheckType::Grpc => grpc(vip, &join(cp, "grpc"), *c.grpc.unwrap_or_default(), errs),
        CheckType::Exec => {
            let options = c.exec.unwrap_or_default();
            if options.command.trim().is_empty() {
                errs.push(join(cp, "exec.command"), "required");
            }
            Some(ProbeSpec::Exec(options))
        }
        CheckType::Ubus => {
            let options = c.ubus.unwrap_or_default();
            for (key, v) in [
                ("ubus.object", &options.object),
                ("ubus.method", &options.method),
                ("ubus.socket", &options.socket),
            ] {
                if v.trim().is_empty() {
                    errs.push(join(cp, key), "required");
                }
            }
            Some(ProbeSpec::Ubus(options))
        }
    }
}

/// The error of a check that needs a host the VIP prefix does not give.
pub(super) fn need_host(path: String, vip: &Prefix, errs: &mut Errors) {
    errs.push_fmt(
        path,
        format_args!("required because prefix {vip} is not a single address (/32 or /128)"),
    );
}

/// The host of a check: the configured one (not empty), else the VIP
/// address of a host prefix. A prefix that is missing or failed to decode
/// holds a placeholder host prefix (0.0.0.0/32): the host rules then stay
/// quiet.
fn host_or_vip(
    path: String,
    configured: Option<&String>,
    vip: &Prefix,
    errs: &mut Errors,
) -> Option<Host> {
    match configured {
        Some(h) if h.is_empty() => {
            errs.push(path, "must not be empty");
            None
        }
        Some(h) if !h.trim().is_empty() => Some(Host::parse(h)),
        _ if vip.is_host() => Some(Host::Ip(vip.addr())),
        _ => {
            need_host(path, vip, errs);
            None
        }
    }
}

/// `port` (required) and `host` of a tcp, udp or grpc block at `p`.
fn host_port(
    vip: &Prefix,
    p: &str,
    host: Option<&String>,
    port: u16,
    errs: &mut Errors,
) -> Option<HostPort> {
    if port == 0 {
        errs.push(join(p, "port"), "required (1..65535)");
    }
    let host = host_or_vip(join(p, "host"), host, vip, errs)?;
    Some(HostPort { host, port })
}

fn dns(vip: &Prefix, p: &str, options: Box<DnsCheck>, errs: &mut Errors) -> Option<ProbeSpec> {
    if options.names.is_empty() {
        errs.push(join(p, "names"), "at least one name is required");
    }
    let mut names = Vec::with_capacity(options.names.len());
    let mut names_ok = true;
    for (k, n) in options.names.iter().enumerate() {
        if n.trim().is_empty() {
            errs.push(format!("{p}.names[{k}]"), "must not be empty");
            names_ok = false;
            continue;
        }
        // The query is built from the labels read here: a name the probe
        // could not send is refused now.
        match DnsName::parse(n) {
            Ok(name) => names.push(name),
            Err(why) => {
                errs.push(
                    format!("{p}.names[{k}]"),
                    format!("{} is not a DNS name: {why}", Quote(n)),
                );
                names_ok = false;
            }
        }
    }
    let resolver = host_or_vip(join(p, "resolver"), options.resolver.as_ref(), vip, errs);
    if options.port == 0 {
        errs.push(join(p, "port"), "0 is not a port (1..65535)");
    }
    let answers = (options.expected_answers.iter())
        .map(|a| ExpectedAnswer::parse(a))
        .collect();
    let target = DnsTarget {
        resolver: HostPort {
            host: resolver?,
            port: options.port,
        },
        names: names_ok.then_some(names)?,
    };
    Some(ProbeSpec::Dns {
        options,
        target: Box::new(target),
        answers,
    })
}

/// The ping block's rules; the address the echo requests go to.
/// `timeout` is the check's, and whether it passed its rules.
fn ping(
    vip: &Prefix,
    p: &str,
    ping: &PingCheck,
    (timeout, timeout_ok): (Dur, bool),
    errs: &mut Errors,
) -> Option<std::net::IpAddr> {
    if !(1..=60).contains(&ping.count) {
        errs.push_fmt(
            join(p, "count"),
            format_args!("{} is not in 1..60", ping.count),
        );
    }
    if !(0.0..1.0).contains(&ping.max_loss_ratio) {
        errs.push_fmt(
            join(p, "max_loss_ratio"),
            format_args!("{} is not in [0, 1)", ping.max_loss_ratio),
        );
    }
    if ping.count > 1 && ping.interval.is_zero() {
        errs.push(join(p, "interval"), "0s must be greater than 0");
    } else if (1..=60).contains(&ping.count) && timeout_ok {
        // All echo requests must be sent before the check times out, or
        // the last ones are lost by construction.
        let gaps = ping.interval.get().saturating_mul(ping.count - 1);
        if Dur(gaps) >= timeout {
            errs.push_fmt(
                join(p, "interval"),
                format_args!(
                    "(count - 1) x interval = {} must be less than the check timeout {timeout}",
                    Dur(gaps),
                ),
            );
        }
    }
    match ping.dst_ip {
        Some(dst) => {
            if let Some(src) = ping.src_ip {
                if src.is_ipv4() != dst.is_ipv4() {
                    errs.push_fmt(
                        join(p, "src_ip"),
                        format_args!("{src} and dst_ip {dst} are of different address families"),
                    );
                }
            }
            Some(dst)
        }
        None if vip.is_host() => Some(vip.addr()),
        None => {
            need_host(join(p, "dst_ip"), vip, errs);
            None
        }
    }
}

fn udp(vip: &Prefix, p: &str, options: Box<UdpCheck>, errs: &mut Errors) -> Option<ProbeSpec> {
    let u = &options;
    let target = host_port(vip, p, u.host.as_ref(), u.port, errs);
    let datagram = match (&u.payload, &u.payload_hex) {
        (Some(_), Some(_)) => {
            errs.push(join(p, "payload_hex"), "cannot be combined with payload");
            None
        }
        (None, Some(hex)) => {
            let bytes = hex_bytes(hex);
            if bytes.is_none() {
                errs.push_fmt(
                    join(p, "payload_hex"),
                    format_args!(
                        "{} is not hex (an even number of 0-9a-f digits)",
                        Quote(hex)
                    ),
                );
            }
            bytes
        }
        (Some(text), None) => Some(text.as_bytes().to_vec()),
        (None, None) => Some(vec![0]),
    };
    Some(ProbeSpec::Udp {
        target: Box::new(target?),
        datagram: datagram?,
        options,
    })
}

fn grpc(vip: &Prefix, p: &str, g: GrpcCheck, errs: &mut Errors) -> Option<ProbeSpec> {
    let target = host_port(vip, p, g.host.as_ref(), g.port, errs);
    grpc_tls(p, &g, errs);
    let path = grpc_path(p, g.method.as_deref(), errs);
    if g.ok_codes.is_empty() {
        errs.push(join(p, "ok_codes"), "at least one code is required");
    }
    let mut ok_codes = Vec::with_capacity(g.ok_codes.len());
    let mut codes_ok = true;
    for (k, code) in g.ok_codes.iter().enumerate() {
        match grpc_code(code) {
            Some(n) => ok_codes.push(n),
            None => {
                errs.push_fmt(
                    format!("{p}.ok_codes[{k}]"),
                    format_args!(
                        "{} is not a gRPC status code such as OK or NOT_FOUND",
                        Quote(code)
                    ),
                );
                codes_ok = false;
            }
        }
    }
    for (k, val) in &g.metadata {
        header(&join(&join(p, "metadata"), k), k, val, errs);
    }
    let target = target?;
    let server_name = match &g.tls_server_name {
        Some(n) if !n.is_empty() => Host::parse(n),
        _ => target.host.clone(),
    };
    Some(ProbeSpec::Grpc(Box::new(GrpcSpec {
        target,
        path: path?,
        ok_codes: codes_ok.then_some(ok_codes)?,
        server_name,
        options: g,
    })))
}

/// The TLS options of a grpc block: only with `tls`, and not both ways of
/// trusting the server.
fn grpc_tls(p: &str, g: &GrpcCheck, errs: &mut Errors) {
    if g.tls && !crate::TLS {
        errs.push_fmt(join(p, "tls"), format_args!("true {}", crate::NEEDS_TLS));
    }
    if !g.tls {
        for (key, set) in [
            ("tls_insecure", g.tls_insecure),
            ("tls_ca_cert", g.tls_ca_cert.is_some()),
            ("tls_server_name", g.tls_server_name.is_some()),
        ] {
            if set {
                errs.push(join(p, key), "has no effect unless tls is true");
            }
        }
    } else if g.tls_insecure && g.tls_ca_cert.is_some() {
        errs.push(
            join(p, "tls_insecure"),
            "cannot be combined with tls_ca_cert",
        );
    }
}

/// The request path of a grpc check: `method` with its leading `/`, else
/// the health check's.
fn grpc_path(p: &str, method: Option<&str>, errs: &mut Errors) -> Option<String> {
    let Some(written) = method else {
        return Some(GRPC_HEALTH_METHOD.to_string());
    };
    let m = written.strip_prefix('/').unwrap_or(written);
    let ok = match m.split_once('/') {
        Some((svc, meth)) => {
            !svc.is_empty()
                && !meth.is_empty()
                && !meth.contains('/')
                && !m.chars().any(|c| c.is_whitespace())
        }
        None => false,
    };
    if !ok {
        errs.push_fmt(
            join(p, "method"),
            format_args!(
                "{} is not a method such as /pkg.Service/Method",
                Quote(written)
            ),
        );
        return None;
    }
    Some(format!("/{m}"))
}

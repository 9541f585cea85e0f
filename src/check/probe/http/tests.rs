use super::*;

/// keep_alive: a connection idle for 90 s or more is not reused (the
/// specification's idle limit); one idle for less is.
#[test]
fn kept_connection_is_dropped_after_90_s_idle() {
    let since = Instant::now();
    let at = |s: u64| since + Duration::from_secs(s);
    assert_eq!(within_idle_limit(Some(((), since)), at(0)), Some(()));
    assert_eq!(within_idle_limit(Some(((), since)), at(89)), Some(()));
    assert_eq!(within_idle_limit(Some(((), since)), at(90)), None);
    assert_eq!(within_idle_limit(Some(((), since)), at(3600)), None);
    assert_eq!(within_idle_limit(None::<((), Instant)>, at(1)), None);
}

/// The probe of an http check of type `kind` with the options `http`
/// on the VIP `vip`, as validation resolves it.
fn probe_of(
    vip: &str,
    kind: crate::config::CheckType,
    http: HttpCheck,
) -> Result<HttpProbe, String> {
    let vip: crate::bgp::types::Prefix = vip.parse().unwrap();
    let c = crate::config::Check {
        kind: Some(kind),
        http: Some(Box::new(http)),
        ..crate::config::Check::default()
    };
    let spec = crate::config::run::check_spec(c, &vip).expect("a valid check");
    let crate::config::ProbeSpec::Http {
        options, target, ..
    } = &spec.probe
    else {
        panic!("{:?}", spec.probe)
    };
    HttpProbe::new(options, target, Duration::from_secs(1))
}

/// Through an http:// proxy the head carries the absolute URL (RFC 9112
/// §3.2.2), Host from the URL and the Basic credentials.
#[test]
fn absolute_form_request() {
    let head = |url: &str, port: Option<u16>| {
        let http = HttpCheck {
            url: url.into(),
            port,
            proxy: Some("http://probe:s%40cret@proxy.example:3128".into()),
            ..HttpCheck::default()
        };
        let p = probe_of("10.0.0.0/8", crate::config::CheckType::Http, http).expect("probe");
        let Client::Plain(plain) = &p.client else {
            panic!("not the async path")
        };
        assert_eq!(
            plain.proxy.as_ref().map(|h| h.to_string()).as_deref(),
            Some("proxy.example:3128")
        );
        String::from_utf8_lossy(&plain.request).into_owned()
    };
    assert_eq!(
        head("http://web.example/healthz?full=1", None),
        "GET http://web.example/healthz?full=1 HTTP/1.1\r\n\
         Host: web.example\r\n\
         Proxy-Authorization: Basic cHJvYmU6c0BjcmV0\r\n\
         User-Agent: pathosd-check/1.0\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    // The target's authority is the Host (RFC 9112 §3.2), as written.
    for (url, port, start) in [
        (
            "http://web.example:80/x",
            None,
            "GET http://web.example:80/x HTTP/1.1\r\nHost: web.example:80\r\n",
        ),
        (
            "http://web.example:8080/x",
            None,
            "GET http://web.example:8080/x HTTP/1.1\r\nHost: web.example:8080\r\n",
        ),
        // `port` moves the request, the URL's authority stays the Host.
        (
            "http://web.example/x",
            Some(8080),
            "GET http://web.example:8080/x HTTP/1.1\r\nHost: web.example\r\n",
        ),
    ] {
        let h = head(url, port);
        assert!(h.starts_with(start), "{url} {port:?}: {h}");
    }
}

/// An https target is refused by a build without TLS (the config
/// validation names the option first; this is the probe's own guard).
#[test]
fn https_needs_the_tls_feature() {
    let build = |url: &str, kind| {
        let http = HttpCheck {
            url: url.into(),
            ..HttpCheck::default()
        };
        probe_of("192.0.2.10/32", kind, http)
    };
    use crate::config::CheckType;
    assert!(build("http://web.example/healthz", CheckType::Http).is_ok());
    // Type https with a bare path on the VIP address.
    for r in [
        build("https://web.example/healthz", CheckType::Http),
        build("/healthz", CheckType::Https),
    ] {
        if crate::TLS {
            assert!(r.is_ok(), "{:?}", r.err());
        } else {
            let e = r.unwrap_err();
            assert!(e.contains(crate::NEEDS_TLS), "{e}");
        }
    }
}

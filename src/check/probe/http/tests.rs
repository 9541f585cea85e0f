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

/// What ureq's proxy reads back: scheme, host, port, user, password.
#[cfg(feature = "tls")]
fn ureq_parts(p: &ureq::Proxy) -> (bool, String, u16, String, String) {
    (
        p.protocol() == ureq::ProxyProtocol::Https,
        p.host().to_string(),
        p.port(),
        p.username().unwrap_or_default().to_string(),
        p.password().unwrap_or_default().to_string(),
    )
}

/// Whether two hosts of a URL are the same IP address, each written its
/// own way (brackets around an IPv6 address, or not).
#[cfg(feature = "tls")]
fn same_ip(a: &str, b: &str) -> bool {
    let ip = |h: &str| {
        h.trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
    };
    matches!((ip(a), ip(b)), (Ok(x), Ok(y)) if x == y)
}

/// ureq's proxy is built from every proxy URL validation accepts, and
/// it is the proxy the URL names: the one ureq read from the URL itself
/// when ureq could (the probes did so before validation read it).
#[cfg(feature = "tls")]
fn ureq_agrees(url: &str) -> Result<(), String> {
    let Ok(p) = Proxy::parse(url) else {
        return Ok(());
    };
    let built = ureq_proxy(&p).map_err(|e| format!("{url}: {e}"))?;
    let creds = p
        .credentials
        .clone()
        .unwrap_or(crate::config::proxy::Credentials {
            user: String::new(),
            password: String::new(),
        });
    let want = (
        p.https,
        p.at.host.for_url(),
        p.at.port,
        creds.user,
        creds.password,
    );
    if ureq_parts(&built) != want {
        return Err(format!(
            "{url}: built {:?}, read {want:?}",
            ureq_parts(&built)
        ));
    }
    if let Ok(own) = ureq::Proxy::new(url) {
        // ureq keeps an IP literal as written ("[::0]"), validation as the
        // address it is ("[::]"): the same host.
        let mut own = ureq_parts(&own);
        if same_ip(&own.1, &want.1) {
            own.1.clone_from(&want.1);
        }
        if own != want {
            return Err(format!("{url}: ureq read {own:?}, validation {want:?}"));
        }
    }
    Ok(())
}

#[cfg(feature = "tls")]
#[test]
fn ureq_builds_every_proxy_validation_accepts() {
    for url in [
        "http://p.example:3128",
        "https://p.example",
        "http://p.example/",
        "http://[::1]:8080",
        "http://[2001:db8::1]",
        "http://[::0]",
        "http://10.0.0.1:3128/x?y",
        "http://Aladdin:open%20sesame@p:1",
        "http://u:p%2540%3a@p:1",
        "http://u@p:1",
        "http://u:@p:1",
        "http://u@x:y@p:1",
        "http://!$&'()*+,;=:%zz@p_1.x~y-z:65535",
    ] {
        Proxy::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        ureq_agrees(url).unwrap();
    }
}

#[cfg(feature = "tls")]
proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(2000))]
    /// Random URLs made of the pieces a proxy URL has, and of the
    /// characters that break one.
    #[test]
    fn ureq_agrees_on_random_proxy_urls(
        scheme in "(http|https)://",
        userinfo in "([a-zA-Z0-9%:@!$&'()*+,;=._~ /\\-]{0,12}@)?",
        host in "([a-z0-9._~-]{0,10}|[0-9]{1,3}(\\.[0-9]{1,3}){3}|\\[[0-9a-f:.]{0,16}\\]|[a-z%\\[\\] é]{1,6})",
        port in "(:[0-9]{0,6})?",
        tail in "(/[a-z?#]{0,4})?",
    ) {
        let url = format!("{scheme}{userinfo}{host}{port}{tail}");
        if let Err(e) = ureq_agrees(&url) {
            proptest::prop_assert!(false, "{}", e);
        }
    }
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
        let plain = p.plain.as_ref().expect("the async path");
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

//! UCI input end to end: a file as LuCI saves it (through libuci, so with
//! `'\''` escapes, and with a multi-line value) converts to exactly the
//! config its hand-written JSON twin describes, and mistakes are reported
//! by section, option and line.

use pathosd::config::convert::to_json;
use pathosd::config::{check_str as load_str, Format};

/// What libuci writes for a config edited in LuCI: `package`, every value in
/// single quotes, `'` as `'\''`, line breaks kept inside the quotes.
const LUCI_SAVED: &str = r#"
package pathosd

config pathosd 'main'
	option enabled '1'
	option asn '65001'
	option router_id '192.168.1.1'
	option local_address '127.0.0.2'
	option listen_port '-1'
	option hold_time '9s'
	option log_level 'debug'
	option log_syslog '1'

config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
	option auth_password 'it'\''s a "secret"'
	option enable_multihop '1'
	option multihop_ttl '2'
	option error_wait_min '500ms'
	option error_wait_max '30s'

config neighbor 'old'
	option enabled '0'
	option address '192.0.2.1'

config vip 'web'
	option prefix '192.168.1.80/32'
	option checks_policy 'web_http && !maintenance'
	option fail_action 'lower_priority'
	option as_path_prepend '2'
	list community '65000:100'
	list large_community '65000:1:100'
	option lower_priority_as_path_prepend '4'
	list lower_priority_community '65000:666'
	option lower_priority_file '/tmp/web.drain'

config check 'web_http'
	option vip 'web'
	option type 'http'
	option host '127.0.0.1'
	option url '/cgi-bin/luci/'
	list header 'X-Note: it'\''s fine'
	list header 'Host: router.lan'
	list response_code '200'
	list response_code '300-399'
	option response_text 'OpenWrt'
	option interval '2s'
	option timeout '500ms'
	option rise '2'
	option fall '3'

config check 'maintenance'
	option vip 'web'
	option type 'exec'
	option command '/bin/sh'
	list arg '-c'
	list arg 'test -e /tmp/maintenance &&
  exit 1
exit 0'

config vip 'dns'
	option prefix '192.168.1.53/32'
	option fail_action 'withdraw'
	list service 'dnsmasq'
	list interface 'lan'
	list interface 'wan'

config check
	option vip 'dns'
	option type 'dns'
	list query 'openwrt.lan.'
	option resolver '127.0.0.1'
	option expected_rcode 'NOERROR'
"#;

const JSON_TWIN: &str = r#"{
  "schema": "v1",
  "router": {"asn": 65001, "router_id": "192.168.1.1", "local_address": "127.0.0.2"},
  "bgp": {
    "listen_port": -1,
    "hold_time": "9s",
    "neighbors": [{
      "name": "bird", "address": "127.0.0.1", "peer_asn": 65000,
      "auth_password": "it's a \"secret\"", "enable_multihop": true, "multihop_ttl": 2,
      "error_wait_min": "500ms", "error_wait_max": "30s"
    }]
  },
  "logging": {"level": "debug", "syslog": true},
  "vips": [
    {
      "name": "web",
      "prefix": "192.168.1.80/32",
      "checks_policy": "web_http && !maintenance",
      "policy": {
        "fail_action": "lower_priority",
        "announce": {"as_path_prepend": 2, "communities": ["65000:100"], "large_communities": ["65000:1:100"]},
        "lower_priority": {"as_path_prepend": 4, "communities": ["65000:666"]},
        "lower_priority_file": "/tmp/web.drain"
      },
      "checks": [
        {
          "name": "web_http", "type": "http", "interval": "2s", "timeout": "500ms", "rise": 2, "fall": 3,
          "http": {
            "host": "127.0.0.1", "url": "/cgi-bin/luci/",
            "headers": {"X-Note": "it's fine", "Host": "router.lan"},
            "response_codes": [200, "300-399"], "response_text": "OpenWrt"
          }
        },
        {
          "name": "maintenance", "type": "exec",
          "exec": {"command": "/bin/sh", "args": ["-c", "test -e /tmp/maintenance &&\n  exit 1\nexit 0"]}
        }
      ]
    },
    {
      "name": "dns",
      "prefix": "192.168.1.53/32",
      "services": ["dnsmasq"],
      "interfaces": ["lan", "wan"],
      "policy": {"fail_action": "withdraw"},
      "check": {"type": "dns", "dns": {"names": ["openwrt.lan."], "resolver": "127.0.0.1", "expected_rcode": "NOERROR"}}
    }
  ]
}"#;

/// The errors loading UCI text `src` gives, as the daemon prints them; none
/// when it loads.
fn uci_errors(src: &str) -> Vec<String> {
    match load_str(src, Some(Format::Uci), &no_env) {
        Ok(_) => Vec::new(),
        Err(e) => e.iter().map(|e| e.to_string()).collect(),
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn luci_saved_file_converts_to_its_json_twin() {
    let from_uci = load_str(LUCI_SAVED, None, &no_env).unwrap_or_else(|e| panic!("{e:?}"));
    let from_json = load_str(JSON_TWIN, None, &no_env).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(from_uci, from_json);
    assert_eq!(to_json(&from_uci), to_json(&from_json));
    // Spot checks of the escapes, so a shared bug in both paths shows too.
    let n = &from_uci.bgp.neighbors;
    assert_eq!(n.len(), 1, "the disabled neighbor is skipped");
    assert_eq!(n[0].auth_password.as_deref(), Some("it's a \"secret\""));
    assert_eq!(n[0].error_wait_min, pathosd::config::Dur::ms(500));
    assert_eq!(n[0].error_wait_max, pathosd::config::Dur::secs(30));
    let checks = from_uci.vips[0].checks.as_ref().unwrap();
    let http = checks[0].http.as_ref().unwrap();
    assert_eq!(http.headers["X-Note"], "it's fine");
    let args = &checks[1].exec.as_ref().unwrap().args;
    assert_eq!(args[1], "test -e /tmp/maintenance &&\n  exit 1\nexit 0");
    let dns = &from_uci.vips[1];
    assert_eq!(dns.services.as_deref().unwrap(), &["dnsmasq"]);
    assert_eq!(dns.interfaces.as_deref().unwrap(), &["lan", "wan"]);
    // An anonymous check is named after its type.
    assert_eq!(
        from_uci.vips[1].check.as_ref().unwrap().effective_name(),
        "dns"
    );
}

#[test]
fn format_can_be_forced() {
    let e = load_str(LUCI_SAVED, Some(Format::Json), &no_env).unwrap_err();
    assert!(e[0].message.starts_with("invalid JSON: "), "{e:?}");
}

#[test]
fn uci_errors_name_section_option_and_line() {
    let src = "\
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'
	option hold_time '2s'
config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
	option passive '1'
config vip 'web'
	option prefix '10.0.0.1/32'
	list community '65001:1'
	list community '65001:99999'
config check 'a'
	option vip 'web'
	option type 'tcp'
	option port '80'
	option timeout '2s'
config check 'b'
	option vip 'web'
	option type 'tcp'
	option port '81'
	option name 'a'
config check
	option vip 'ghost'
	option type 'tcp'
";
    let errs = uci_errors(src);
    assert_eq!(
        errs,
        vec![
            "@check[2] option vip (line 24): no vip section named \"ghost\"",
            "vip 'web' list community (line 12): \"65001:99999\" is not a community \"asn:value\" with 16-bit parts",
            "pathosd 'main' option hold_time (line 4): 2s must be 0 or at least 3s",
            "check 'a' option timeout (line 17): 2s must be less than interval 1s",
            "check 'b' option name (line 22): duplicate check name \"a\" (also check 'a' (line 13)); two checks of the same type need explicit names",
        ]
    );
}

#[test]
fn uci_error_wait_errors_name_the_option() {
    let src = "\
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'
config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
	option error_wait_min '5s'
	option error_wait_max '2s'
config neighbor 'other'
	option address '127.0.0.3'
	option peer_asn '65000'
	option error_wait_max '10ms'
config vip 'web'
	option prefix '10.0.0.1/32'
	option always '1'
";
    let errs = uci_errors(src);
    assert_eq!(
        errs,
        vec![
            "neighbor 'bird' option error_wait_min (line 7): 5s must not be more than error_wait_max 2s",
            "neighbor 'other' option error_wait_max (line 12): 10ms is less than 100ms (a refused peer would be redialled in a busy loop)",
        ]
    );
}

#[test]
fn uci_syntax_errors_have_lines() {
    let e = load_str(
        "config vip 'web'\n\toption prefix '10.0.0.1/32\n",
        Some(Format::Uci),
        &no_env,
    )
    .unwrap_err();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].to_string(), "line 2: unterminated ' quote");
}

/// The init script and LuCI read the switch as `pathosd.main.enabled`. A
/// file the init script reads as having no switch (no `config pathosd
/// 'main'`: removed with `uci delete pathosd.main`, renamed, anonymous) is
/// one the daemon refuses too, so that the init script refuses it as
/// invalid instead of reading it as disabled.
#[test]
fn only_config_pathosd_main_is_the_global_section() {
    let main = LUCI_SAVED.replace("config pathosd 'main'", "config pathosd 'MAIN'");
    assert_eq!(uci_errors(LUCI_SAVED), Vec::<String>::new());
    let named = "the pathosd section must be named 'main' (config pathosd 'main'): \
                 the init script and LuCI read its option enabled there";
    assert_eq!(
        uci_errors(&main),
        [format!("pathosd 'MAIN' (line 4): {named}")]
    );
    let anonymous = LUCI_SAVED.replace("config pathosd 'main'", "config pathosd");
    assert_eq!(
        uci_errors(&anonymous),
        [format!("@pathosd[0] (line 4): {named}")]
    );
    // `uci delete pathosd.main`: the section and its options are gone.
    let start = LUCI_SAVED.find("config pathosd").unwrap();
    let end = LUCI_SAVED.find("config neighbor").unwrap();
    let deleted = format!("{}{}", &LUCI_SAVED[..start], &LUCI_SAVED[end..]);
    let got = uci_errors(&deleted);
    assert_eq!(
        got.first().map(String::as_str),
        Some(
            "config pathosd 'main': missing (it holds asn, router_id and the other global \
             settings, and the init script's option enabled)"
        ),
        "{got:?}"
    );
    assert_eq!(uci_errors("package pathosd\n")[0], got[0]);
    // An empty file, or one of comments only, as before.
    for empty in ["", "# pathosd\n\n# nothing here\n"] {
        assert_eq!(
            uci_errors(empty),
            ["the config is empty (nothing but whitespace and comments)"]
        );
    }
}

#[test]
fn placeholders_expand_in_uci_too() {
    let src = "config pathosd 'main'\n\toption router_id '%{RID}'\n\toption asn '%%{ASN}'\n";
    let env = |n: &str| (n == "RID").then(|| "10.9.9.9".to_string());
    let errs: Vec<String> = load_str(src, None, &env)
        .unwrap_err()
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        errs[0],
        "pathosd 'main' option asn (line 3): \"%{ASN}\" is not an integer in 0..=4294967295"
    );
    let missing = load_str(src, None, &|_| None).unwrap_err();
    assert_eq!(
        missing[0].to_string(),
        "expanding environment placeholders: missing environment variables for placeholders: RID"
    );
}

/// A ping or http check written without any of its block's options (both
/// blocks are optional) is validated into a check that holds the block's
/// defaults, so the probe takes it as is; `convert` prints the filled
/// block and its output loads back to the same config.
#[test]
fn checks_without_options_convert_with_their_blocks_defaults() {
    let src = "config pathosd 'main'\n\toption asn '65001'\n\toption router_id '10.9.9.9'\n\
        config neighbor 'r'\n\toption address '127.0.0.1'\n\toption peer_asn '65000'\n\
        config vip 'v'\n\toption prefix '10.9.9.80/32'\n\
        config check 'p'\n\toption vip 'v'\n\toption type 'ping'\n\
        config check 'w'\n\toption vip 'v'\n\toption type 'http'\n";
    let c = load_str(src, Some(Format::Uci), &no_env).unwrap_or_else(|e| panic!("{e:?}"));
    let checks = c.vips[0].checks.as_ref().unwrap();
    assert_eq!(
        (checks[0].ping.as_deref(), checks[1].http.as_deref()),
        (None, None)
    );
    let json = to_json(&c);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let out = &v["vips"][0]["checks"];
    assert_eq!(out[0]["ping"]["count"], 1, "{json}");
    assert_eq!(out[1]["http"]["url"], "/", "{json}");
    // What runs is the same: the blocks' defaults either way.
    let run = |t: &str, f| pathosd::config::load_str(t, Some(f), &no_env).unwrap();
    assert_eq!(run(&json, Format::Json), run(src, Format::Uci));
}

/// A proxy URL the probes could not connect with and a DNS name the dns
/// probe could not send are config errors at their option, naming the
/// value, in JSON and in UCI alike (they used to fail only when
/// the probe was built, and the check never started).
#[test]
fn unusable_proxies_and_dns_names_are_config_errors() {
    let long_label = "a".repeat(64);
    let json = serde_json::json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": "10.0.0.1"},
        "bgp": {"neighbors": [{"name": "bird", "address": "127.0.0.1", "peer_asn": 65000}]},
        "vips": [
            {"name": "web", "prefix": "10.0.0.1/32", "checks": [
                {"name": "a", "type": "http", "http": {"url": "http://web.example/", "proxy": "http://"}},
                {"name": "b", "type": "http", "http": {"url": "http://web.example/", "proxy": "http://p:99999"}},
                {"name": "c", "type": "http", "http": {"url": "http://web.example/", "proxy": "http://u:p w@p:3128"}}
            ]},
            {"name": "dns", "prefix": "10.0.0.53/32", "check": {"type": "dns", "dns": {
                "names": ["ok.example.", format!("{long_label}.example"), "bad\\1.example", "end\\"]}}}
        ]
    });
    let uci = format!(
        "\
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'
config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
config vip 'web'
	option prefix '10.0.0.1/32'
config check 'a'
	option vip 'web'
	option type 'http'
	option url 'http://web.example/'
	option proxy 'http://'
config check 'b'
	option vip 'web'
	option type 'http'
	option url 'http://web.example/'
	option proxy 'http://p:99999'
config check 'c'
	option vip 'web'
	option type 'http'
	option url 'http://web.example/'
	option proxy 'http://u:p w@p:3128'
config vip 'dns'
	option prefix '10.0.0.53/32'
config check 'd'
	option vip 'dns'
	option type 'dns'
	list query 'ok.example.'
	list query '{long_label}.example'
	list query 'bad\\1.example'
	list query 'end\\'
"
    );
    let errors = |src: &str, f| -> Vec<String> {
        load_str(src, Some(f), &no_env)
            .unwrap_err()
            .iter()
            .map(|e| e.to_string())
            .collect()
    };
    let proxy = |p: &str, why: &str| format!("{p:?} is not a usable proxy URL: {why}");
    let a = proxy("http://", "no host");
    let b = proxy("http://p:99999", "the port \"99999\" is not in 1..65535");
    let c = proxy(
        "http://u:p w@p:3128",
        "the user or password has ' ', which must be percent-encoded (RFC 3986 §3.2.1)",
    );
    // Long values are quoted by their first 64 bytes.
    let long = format!(
        "{long_label:?}… (72 bytes) is not a DNS name: \
         label {long_label:?} is 64 octets, more than 63 (RFC 1035 §2.3.4)"
    );
    let escape = r#""bad\\1.example" is not a DNS name: label "bad\\1" has a \ and a digit that are not \DDD, three digits (RFC 1035 §5.1)"#;
    let lone = r#""end\\" is not a DNS name: label "end\\" ends in a lone \ (RFC 1035 §5.1)"#;
    assert_eq!(
        errors(&json.to_string(), Format::Json),
        vec![
            format!("vips[0].checks[0].http.proxy: {a}"),
            format!("vips[0].checks[1].http.proxy: {b}"),
            format!("vips[0].checks[2].http.proxy: {c}"),
            format!("vips[1].check.dns.names[1]: {long}"),
            format!("vips[1].check.dns.names[2]: {escape}"),
            format!("vips[1].check.dns.names[3]: {lone}"),
        ]
    );
    assert_eq!(
        errors(&uci, Format::Uci),
        vec![
            format!("check 'a' option proxy (line 13): {a}"),
            format!("check 'b' option proxy (line 18): {b}"),
            format!("check 'c' option proxy (line 23): {c}"),
            format!("check 'd' list query (line 30): {long}"),
            format!("check 'd' list query (line 31): {escape}"),
            format!("check 'd' list query (line 32): {lone}"),
        ]
    );
}

/// The `otel` block from UCI: every option of `config pathosd` that maps to
/// it, a header whose value is an environment placeholder (an API key kept
/// out of the file), and the run config each signal resolves to.
#[test]
fn otel_options_convert_to_the_otel_block() {
    let src = "\
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'
	option log_otel_level 'warn'
	option otel_endpoint 'http://127.0.0.1:4318'
	list otel_header 'X-Api-Key: %{OTEL_KEY}'
	list otel_header 'X-Team: edge'
	option otel_service_name 'edge-router'
	option otel_metrics_interval '15s'
	list otel_metrics_header 'X-Team: metrics'
	option otel_traces_enabled '0'
	option otel_logs_endpoint 'http://127.0.0.2:4318/custom/logs'
	option otel_logs_insecure '1'
config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
config vip 'web'
	option prefix '10.0.0.1/32'
	option always '1'
";
    let env = |n: &str| (n == "OTEL_KEY").then(|| "s3cret".to_string());
    let twin = r#"{"schema": "v1",
  "router": {"asn": 65001, "router_id": "10.0.0.1"},
  "bgp": {"neighbors": [{"name": "bird", "address": "127.0.0.1", "peer_asn": 65000}]},
  "logging": {"otel_level": "warn"},
  "otel": {"endpoint": "http://127.0.0.1:4318", "service_name": "edge-router",
           "headers": {"X-Api-Key": "s3cret", "X-Team": "edge"},
           "metrics": {"interval": "15s", "headers": {"X-Team": "metrics"}},
           "traces": {"enabled": false},
           "logs": {"endpoint": "http://127.0.0.2:4318/custom/logs", "insecure": true}},
  "vips": [{"name": "web", "prefix": "10.0.0.1/32", "always": true}]}"#;
    let from_uci = load_str(src, None, &env).unwrap_or_else(|e| panic!("{e:?}"));
    let from_json = load_str(twin, None, &no_env).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(from_uci, from_json);
    // `convert`'s output loads back to the same config.
    let json = to_json(&from_uci);
    assert_eq!(
        load_str(&json, Some(Format::Json), &no_env).unwrap(),
        from_uci
    );

    let run = pathosd::config::load_str(src, None, &env).unwrap_or_else(|e| panic!("{e:?}"));
    let o = &run.otel;
    assert_eq!(o.service_name, "edge-router");
    assert_eq!(o.metrics_interval, std::time::Duration::from_secs(15));
    assert_eq!(o.log_level, Some(pathosd::config::LogLevel::Warn));
    let m = o.metrics.as_ref().expect("metrics on");
    assert_eq!(m.url, "http://127.0.0.1:4318/v1/metrics");
    assert_eq!(
        m.headers,
        vec![
            ("X-Api-Key".to_string(), "s3cret".to_string()),
            ("X-Team".to_string(), "metrics".to_string()),
        ],
        "the signal's header wins"
    );
    assert!(!m.insecure);
    assert_eq!(o.traces, None, "traces switched off");
    let l = o.logs.as_ref().expect("logs on");
    assert_eq!(l.url, "http://127.0.0.2:4318/custom/logs");
    assert!(l.insecure);
}

#[test]
fn otel_errors_name_the_option() {
    let src = "\
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'
	option otel_endpoint 'ftp://127.0.0.1:4318'
	option otel_service_name ' '
	option otel_metrics_endpoint 'http://127.0.0.1:4318'
	option otel_metrics_interval '100ms'
	list otel_header 'Bad Name: 1'
config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
config vip 'web'
	option prefix '10.0.0.1/32'
	option always '1'
";
    let errs = uci_errors(src);
    assert_eq!(
        errs,
        vec![
            "pathosd 'main' option otel_endpoint (line 4): \"ftp://127.0.0.1:4318\": unsupported scheme \"ftp\" (http://, https://, grpc:// or grpcs://)",
            "pathosd 'main' list otel_header (line 8): \"Bad Name\" is not a valid header name",
            "pathosd 'main' option otel_service_name (line 5): must not be empty when an endpoint is set",
            "pathosd 'main' option otel_metrics_interval (line 7): 100ms is shorter than 1s",
        ]
    );
}

/// A neighbor's BFD block as options of its section: `bfd` turns it on,
/// the `bfd_*` options are the block's fields, and an error names the
/// option and its line.
#[test]
fn uci_bfd_options_are_the_neighbors_bfd_block() {
    let src = "\
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'
	option local_address '127.0.0.2'
config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
	option bfd '1'
	option bfd_desired_minimum_tx_interval '100ms'
	option bfd_required_minimum_receive '150ms'
	option bfd_detection_multiplier '4'
	option bfd_multihop '1'
config vip 'web'
	option prefix '10.0.0.1/32'
	option always '1'
";
    let checked = load_str(src, Some(Format::Uci), &no_env).unwrap_or_else(|e| panic!("{e:?}"));
    let json: serde_json::Value = serde_json::from_str(&to_json(&checked)).unwrap();
    assert_eq!(
        json["bgp"]["neighbors"][0]["bfd"],
        serde_json::json!({
            "enabled": true,
            "desired_minimum_tx_interval": "100ms",
            "required_minimum_receive": "150ms",
            "detection_multiplier": 4,
            "multihop": true
        })
    );
    let run = pathosd::config::load_str(src, Some(Format::Uci), &no_env)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let bfd = run.neighbors[0].bfd.unwrap();
    assert_eq!(bfd.timers.desired_min_tx.get(), 100_000);
    assert_eq!(bfd.timers.required_min_rx, 150_000);
    assert_eq!(bfd.timers.detect_mult.get(), 4);

    let bad = src.replace(
        "bfd_detection_multiplier '4'",
        "bfd_detection_multiplier '1'",
    );
    let errs = uci_errors(&bad);
    assert_eq!(
        errs,
        vec!["neighbor 'bird' option bfd_detection_multiplier (line 11): 1 must be at least 2 (one lost packet must not take the session down)"]
    );
}

/// `option graceful_shutdown` is `bgp.graceful_shutdown` (off unless set);
/// a value that is no boolean is an error naming the option, its line and
/// the value.
#[test]
fn graceful_shutdown_option_converts_and_bad_values_name_the_option() {
    let src = |v: &str| {
        format!(
            "\
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'
{v}config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
config vip 'web'
	option prefix '10.0.0.1/32'
	option always '1'
"
        )
    };
    let off = load_str(&src(""), Some(Format::Uci), &no_env).unwrap();
    assert!(!off.bgp.graceful_shutdown);
    let on = load_str(
        &src("\toption graceful_shutdown '1'\n"),
        Some(Format::Uci),
        &no_env,
    )
    .unwrap();
    assert!(on.bgp.graceful_shutdown);
    // `pathosd convert` writes it in the bgp block.
    let json: serde_json::Value = serde_json::from_str(&to_json(&on)).unwrap();
    assert_eq!(json["bgp"]["graceful_shutdown"], serde_json::json!(true));
    let errs = uci_errors(&src("\toption graceful_shutdown 'maybe'\n"));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("pathosd 'main' option graceful_shutdown (line 4): ")
            && errs[0].contains("maybe"),
        "{errs:?}"
    );
}

/// A vip section's prefixes: `option prefix` is the one prefix, `list
/// prefix` several (the JSON list); an error in an item names its line.
#[test]
fn list_prefix_is_the_vips_prefix_list() {
    let head = "\
config pathosd 'main'
	option asn '65001'
	option router_id '10.0.0.1'
	option local_address_ipv6 'fd00::ff'
config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
config vip 'web'
	option always '1'
";
    let uci = format!("{head}\tlist prefix '10.0.0.1/32'\n\tlist prefix 'fd00::1/128'\n");
    let json = r#"{"schema": "v1",
        "router": {"asn": 65001, "router_id": "10.0.0.1", "local_address_ipv6": "fd00::ff"},
        "bgp": {"neighbors": [{"name": "bird", "address": "127.0.0.1", "peer_asn": 65000}]},
        "vips": [{"name": "web", "always": true, "prefix": ["10.0.0.1/32", "fd00::1/128"]}]}"#;
    let from_uci = load_str(&uci, None, &no_env).unwrap_or_else(|e| panic!("{e:?}"));
    let from_json = load_str(json, None, &no_env).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(from_uci, from_json);
    assert_eq!(from_uci.vips[0].prefix.more.len(), 1);
    let errs = uci_errors(&format!(
        "{head}\tlist prefix '10.0.0.1/32'\n\tlist prefix 'fd00::1/129'\n"
    ));
    assert_eq!(
        errs,
        ["vip 'web' list prefix (line 11): \"fd00::1/129\" is not a valid prefix (prefix length 129 exceeds 128)"]
    );
}

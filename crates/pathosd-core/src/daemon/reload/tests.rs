use super::*;
use crate::config::load::{load_str, Format};
use serde_json::{json, Value};

fn base() -> Value {
    json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": "10.0.0.1", "local_address": "127.0.0.1"},
        "bgp": {"neighbors": [
            {"name": "a", "address": "127.0.0.2", "peer_asn": 65000},
            {"name": "b", "address": "127.0.0.3", "peer_asn": 65000}
        ]},
        "vips": [
            {"name": "web", "prefix": "10.1.0.1/32",
             "check": {"type": "tcp", "tcp": {"port": 80}}},
            {"name": "dns", "prefix": "10.1.0.2/32",
             "checks": [{"name": "u", "type": "udp", "udp": {"port": 53}},
                        {"name": "t", "type": "tcp", "tcp": {"port": 53}}]}
        ]
    })
}

fn cfg(v: &Value) -> RunConfig {
    load_str(&v.to_string(), Some(Format::Json), &|_| None).unwrap_or_else(|e| panic!("{e:?}"))
}

/// The plan of `base()` against `base()` edited by `edit`.
fn plan(edit: impl FnOnce(&mut Value)) -> ReloadPlan {
    let old = base();
    let mut new = old.clone();
    edit(&mut new);
    diff(&cfg(&old), &cfg(&new))
}

fn kept(attributes: bool, timing: bool) -> VipChange {
    VipChange::Kept { attributes, timing }
}

#[test]
fn same_config_changes_nothing() {
    let p = plan(|_| {});
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(p.vips.len(), 2);
    assert_eq!(p.neighbors.len(), 2);
}

#[test]
fn timing_keeps_the_vip() {
    for (field, value) in [
        ("interval", json!("2s")),
        ("fast_interval", json!("500ms")),
        ("timeout", json!("200ms")),
        ("rise", json!(3)),
        ("fall", json!(1)),
    ] {
        let p = plan(|c| c["vips"][0]["check"][field] = value.clone());
        assert_eq!(p.vip("web"), &kept(false, true), "{field}");
        assert_eq!(p.vip("dns"), &VipChange::Unchanged, "{field}");
    }
    // One check of several.
    let p = plan(|c| c["vips"][1]["checks"][1]["interval"] = json!("5s"));
    assert_eq!(p.vip("dns"), &kept(false, true));
}

#[test]
fn attributes_keep_the_vip() {
    let edits: [fn(&mut Value); 8] = [
        |c| c["vips"][0]["policy"] = json!({"announce": {"communities": ["65001:7"]}}),
        |c| c["vips"][0]["policy"] = json!({"announce": {"large_communities": ["1:2:3"]}}),
        |c| c["vips"][0]["policy"] = json!({"announce": {"as_path_prepend": 2}}),
        |c| c["vips"][0]["policy"] = json!({"lower_priority": {"as_path_prepend": 1}}),
        |c| c["vips"][0]["policy"] = json!({"fail_action": "withdraw"}),
        |c| c["vips"][0]["policy"] = json!({"drain_time": "5s"}),
        |c| c["vips"][0]["policy"] = json!({"lower_priority_file": "/tmp/x"}),
        |c| c["vips"][0]["check"]["detailed_metrics"] = json!(true),
    ];
    for (i, e) in edits.into_iter().enumerate() {
        assert_eq!(plan(e).vip("web"), &kept(true, false), "edit {i}");
    }
    let p = plan(|c| {
        c["vips"][0]["policy"] = json!({"recovery_hold": "3s"});
        c["vips"][0]["check"]["interval"] = json!("3s");
    });
    assert_eq!(p.vip("web"), &kept(true, true));
}

/// A `Vip` holds its policy only when it is not the default, and the
/// checks_policy "all" as a borrowed text: spelling the defaults out is
/// the same VIP, and a policy set back to the default is a change.
#[test]
fn defaults_spelled_out_are_the_same_vip() {
    let p = plan(|c| {
        c["vips"][0]["policy"] = json!({"fail_action": "lower_priority",
            "announce": {"as_path_prepend": 0}, "drain_time": "30s"});
        c["vips"][0]["checks_policy"] = json!("all");
        c["vips"][1]["checks_policy"] = json!("all");
    });
    assert!(p.is_empty(), "{p:?}");
    let mut old = base();
    old["vips"][0]["policy"] = json!({"announce": {"as_path_prepend": 2}});
    let p = diff(&cfg(&old), &cfg(&base()));
    assert_eq!(p.vip("web"), &kept(true, false));
    assert_eq!(p.vip("dns"), &VipChange::Unchanged);
    let mut old = base();
    old["vips"][1]["checks_policy"] = json!("any");
    let p = diff(&cfg(&old), &cfg(&base()));
    assert_eq!(p.vip("dns"), &VipChange::Restarted("checks_policy"));
}

#[test]
fn identity_restarts_the_vip() {
    type Edit = fn(&mut Value);
    let cases: [(Edit, &str); 9] = [
        (|c| c["vips"][0]["prefix"] = json!("10.1.0.9/32"), "prefix"),
        (
            |c| c["vips"][1]["checks_policy"] = json!("any"),
            "checks_policy",
        ),
        (
            |c| c["vips"][0]["require_local_address"] = json!(true),
            "require_local_address",
        ),
        (
            |c| c["vips"][0]["check"]["tcp"]["port"] = json!(81),
            "checks",
        ),
        (|c| c["vips"][0]["check"]["name"] = json!("web80"), "checks"),
        (
            |c| c["vips"][0]["check"] = json!({"type": "udp", "udp": {"port": 80}}),
            "checks",
        ),
        (
            |c| {
                let t = c["vips"][1]["checks"][1].take();
                c["vips"][1]["checks"] = json!([t]);
            },
            "checks",
        ),
        // Renamed in place: the checks_policy names another check.
        (|c| c["vips"][1]["checks"][0]["name"] = json!("v"), "checks"),
        (
            |c| {
                c["vips"][0].as_object_mut().map(|o| o.remove("check"));
                c["vips"][0]["always"] = json!(true);
            },
            "always",
        ),
    ];
    for (edit, what) in cases {
        let p = plan(edit);
        let name = if what == "checks_policy" || p.vip("dns") != &VipChange::Unchanged {
            "dns"
        } else {
            "web"
        };
        assert_eq!(p.vip(name), &VipChange::Restarted(what), "{p:?}");
    }
}

/// The log lines of a reload name each class once, with its members.
#[test]
fn the_report_names_each_class_once() {
    let p = plan(|c| {
        c["vips"][0]["name"] = json!("www");
        c["vips"][1]["checks"][1]["interval"] = json!("5s");
        c["bgp"]["neighbors"][0]["hold_time"] = json!("30s");
        c["logging"]["level"] = json!("debug");
    });
    assert_eq!(
        p.report(),
        vec![
            "VIPs kept, new timing: dns",
            "VIPs added: www",
            "VIPs removed: web",
            "neighbors restarted: a",
            "logging.level changed: applied",
        ]
    );
    let p = plan(|c| c["vips"][1]["checks_policy"] = json!("any"));
    assert_eq!(
        p.report(),
        vec![
            "VIPs restarted withdrawn (check identity changed): dns (checks_policy)",
            "VIPs unchanged: web",
        ]
    );
}

/// A class with many members is cut at a name, within what logd keeps
/// of a line, and says how many more there are: 1,000 added VIPs made a
/// line that logd cut mid-name at 1 KiB.
#[test]
fn a_long_report_line_ends_at_a_name_and_counts_the_rest() {
    let p = plan(|c| {
        for i in 0..1_000 {
            c["vips"].as_array_mut().unwrap().push(json!({
                "name": format!("vip-number-{i:04}"),
                "prefix": format!("10.2.{}.{}/32", i / 256, i % 256),
                "always": true
            }));
        }
    });
    let lines = p.report();
    let added = lines
        .iter()
        .find(|l| l.starts_with("VIPs added: "))
        .unwrap();
    assert!(added.len() <= REPORT_LINE_MAX, "{}", added.len());
    let (names, more) = added["VIPs added: ".len()..]
        .rsplit_once(", … and ")
        .unwrap();
    let names: Vec<&str> = names.split(", ").collect();
    assert!(
        names.iter().all(|n| n.len() == "vip-number-0000".len()),
        "{added}"
    );
    assert_eq!(names[0], "vip-number-0000");
    assert_eq!(more, format!("{} more", 1_000 - names.len()));
    // The next name would not have fitted with the count after it.
    let longer = format!(
        "VIPs added: {}, vip-number-{:04}, … and {} more",
        names.join(", "),
        names.len(),
        1_000 - names.len() - 1
    );
    assert!(longer.len() > REPORT_LINE_MAX, "{longer}");
    // A short class is whole.
    assert_eq!(
        report_line("VIPs removed", &["a", "b"]),
        "VIPs removed: a, b"
    );
}

#[test]
fn vips_added_and_removed() {
    let p = plan(|c| {
        c["vips"][0]["name"] = json!("www");
    });
    assert_eq!(
        p.vips,
        vec![
            ("www".to_string(), VipChange::Added),
            ("dns".to_string(), VipChange::Unchanged),
            ("web".to_string(), VipChange::Removed),
        ]
    );
}

#[test]
fn neighbors() {
    let p = plan(|c| c["bgp"]["neighbors"][0]["hold_time"] = json!("30s"));
    assert_eq!(p.neighbor("a"), NeighborChange::Restarted);
    assert_eq!(p.neighbor("b"), NeighborChange::Unchanged);
    let p = plan(|c| c["bgp"]["neighbors"][1]["required"] = json!(false));
    assert_eq!(p.neighbor("b"), NeighborChange::Required);
    // Settings every session is built from restart every session.
    for edit in [
        (|c: &mut Value| c["router"]["router_id"] = json!("10.0.0.2")) as fn(&mut Value),
        |c| c["router"]["asn"] = json!(65002),
        |c| c["bgp"]["hold_time"] = json!("9s"),
        |c| c["bgp"]["graceful_restart"] = json!(false),
    ] {
        let p = plan(edit);
        assert_eq!(p.neighbor("a"), NeighborChange::Restarted, "{p:?}");
        assert_eq!(p.neighbor("b"), NeighborChange::Restarted, "{p:?}");
    }
    let p = plan(|c| {
        c["bgp"]["neighbors"][1]["name"] = json!("c");
    });
    assert_eq!(
        p.neighbors,
        vec![
            ("a".to_string(), NeighborChange::Unchanged),
            ("c".to_string(), NeighborChange::Added),
            ("b".to_string(), NeighborChange::Removed),
        ]
    );
}

/// What a setting changed alone must give.
#[derive(Debug)]
enum Want {
    Live(&'static str),
    Restart(&'static str),
    Vip(&'static str, VipChange),
    Neighbor(&'static str, NeighborChange),
    /// A setting every session is built from.
    AllNeighbors,
    /// Renamed: the old one removed, a new one added.
    VipRenamed,
    NeighborRenamed,
}
use Want::*;

/// A setting's path in the schema, its change to the base config, and
/// what the plan must say.
type Row = (&'static str, fn(&mut Value), Want);

fn restarted(what: &'static str) -> VipChange {
    VipChange::Restarted(what)
}

fn nb(c: &mut Value) -> &mut Value {
    &mut c["bgp"]["neighbors"][0]
}

fn web(c: &mut Value) -> &mut Value {
    &mut c["vips"][0]
}

fn chk(c: &mut Value) -> &mut Value {
    &mut c["vips"][0]["check"]
}

/// The rows of `schema` and the HTTP API's and ubus' settings (`api`).
fn api_rows() -> Vec<Row> {
    vec![
        ("schema", |_| {}, Live("")), // only "v1" is valid: nothing to change
        (
            "api.idle_timeout",
            |c| c["api"]["idle_timeout"] = json!("9s"),
            Live("api.idle_timeout"),
        ),
        (
            "api.listen",
            |c| c["api"]["listen"] = json!("127.0.0.1:1"),
            Live("api.listen"),
        ),
        (
            "api.read_header_timeout",
            |c| c["api"]["read_header_timeout"] = json!("9s"),
            Live("api.read_header_timeout"),
        ),
        (
            "api.read_timeout",
            |c| c["api"]["read_timeout"] = json!("9s"),
            Live("api.read_timeout"),
        ),
        (
            "api.token",
            |c| c["api"]["token"] = json!("0123456789abcdef"),
            Live("api.token"),
        ),
        (
            "api.ubus_socket",
            |c| c["api"]["ubus_socket"] = json!("/tmp/u"),
            Restart("api.ubus_socket"),
        ),
        (
            "api.write_timeout",
            |c| c["api"]["write_timeout"] = json!("9s"),
            Live("api.write_timeout"),
        ),
    ]
}

/// The rows of the global BGP settings (`bgp` but its neighbors).
fn bgp_rows() -> Vec<Row> {
    vec![
        (
            "bgp.graceful_restart",
            |c| c["bgp"]["graceful_restart"] = json!(false),
            AllNeighbors,
        ),
        (
            "bgp.hold_time",
            |c| c["bgp"]["hold_time"] = json!("9s"),
            AllNeighbors,
        ),
        (
            "bgp.keepalive_time",
            |c| c["bgp"]["keepalive_time"] = json!("2s"),
            AllNeighbors,
        ),
        (
            "bgp.listen_address",
            |c| c["bgp"]["listen_address"] = json!("127.0.0.9"),
            Restart("bgp.listen_address"),
        ),
        (
            "bgp.listen_port",
            |c| c["bgp"]["listen_port"] = json!(1179),
            Restart("bgp.listen_address"),
        ),
        (
            "bgp.shutdown_drain",
            |c| c["bgp"]["shutdown_drain"] = json!("2s"),
            Live("bgp.shutdown_drain"),
        ),
        (
            "bgp.graceful_shutdown",
            |c| c["bgp"]["graceful_shutdown"] = json!(true),
            Live("bgp.graceful_shutdown"),
        ),
    ]
}

/// The hooks' runner keeps its directory, timeout and queue from its start.
fn hooks_rows() -> Vec<Row> {
    vec![
        (
            "hooks.dir",
            |c| c["hooks"]["dir"] = json!("/etc/pathosd/hooks"),
            Restart("hooks"),
        ),
        (
            "hooks.timeout",
            |c| c["hooks"]["timeout"] = json!("5s"),
            Restart("hooks"),
        ),
        (
            "hooks.queue",
            |c| c["hooks"]["queue"] = json!(16),
            Restart("hooks"),
        ),
    ]
}

/// The rows of the log's settings (`logging`).
fn logging_rows() -> Vec<Row> {
    vec![
        (
            "logging.level",
            |c| c["logging"]["level"] = json!("debug"),
            Live("logging.level"),
        ),
        (
            "logging.otel_level",
            |c| c["logging"]["otel_level"] = json!("warn"),
            Live("otel"),
        ),
        // Off, as the base config (no endpoint) is: nothing changes.
        (
            "logging.syslog",
            |c| c["logging"]["syslog"] = json!(false),
            Restart("logging.syslog"),
        ),
        (
            "logging.timestamps",
            |c| c["logging"]["timestamps"] = json!(true),
            Restart("logging.timestamps"),
        ),
    ]
}

/// The rows of the exporter's settings (`otel`) but those of traces and logs.
fn otel_rows() -> Vec<Row> {
    vec![
        (
            "otel.enabled",
            |c| c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "enabled": false}),
            Live(""),
        ),
        (
            "otel.endpoint",
            |c| c["otel"]["endpoint"] = json!("http://127.0.0.1:4318"),
            Live("otel"),
        ),
        (
            "otel.insecure",
            |c| c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "insecure": true}),
            Live("otel"),
        ),
        (
            "otel.headers",
            |c| c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "headers": {"X-Key": "k"}}),
            Live("otel"),
        ),
        (
            "otel.service_name",
            |c| c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "service_name": "edge"}),
            Live("otel"),
        ),
        (
            "otel.metrics.enabled",
            |c| {
                c["otel"] =
                    json!({"endpoint": "http://127.0.0.1:4318", "metrics": {"enabled": false}})
            },
            Live("otel"),
        ),
        (
            "otel.metrics.endpoint",
            |c| c["otel"] = json!({"metrics": {"endpoint": "http://127.0.0.1:4318"}}),
            Live("otel"),
        ),
        (
            "otel.metrics.insecure",
            |c| {
                c["otel"] =
                    json!({"endpoint": "http://127.0.0.1:4318", "metrics": {"insecure": true}})
            },
            Live("otel"),
        ),
        (
            "otel.metrics.headers",
            |c| c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "metrics": {"headers": {"X-Key": "k"}}}),
            Live("otel"),
        ),
        (
            "otel.metrics.interval",
            |c| {
                c["otel"] =
                    json!({"endpoint": "http://127.0.0.1:4318", "metrics": {"interval": "10s"}})
            },
            Live("otel"),
        ),
    ]
}

/// The rows of the exporter's settings of traces and logs.
fn otel_signal_rows() -> Vec<Row> {
    vec![
        (
            "otel.traces.enabled",
            |c| {
                c["otel"] =
                    json!({"endpoint": "http://127.0.0.1:4318", "traces": {"enabled": false}})
            },
            Live("otel"),
        ),
        (
            "otel.traces.endpoint",
            |c| c["otel"] = json!({"traces": {"endpoint": "http://127.0.0.1:4318"}}),
            Live("otel"),
        ),
        (
            "otel.traces.insecure",
            |c| {
                c["otel"] =
                    json!({"endpoint": "http://127.0.0.1:4318", "traces": {"insecure": true}})
            },
            Live("otel"),
        ),
        (
            "otel.traces.headers",
            |c| {
                c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "traces": {"headers": {"X-Key": "k"}}})
            },
            Live("otel"),
        ),
        (
            "otel.traces.sample_ratio",
            |c| {
                c["otel"] =
                    json!({"endpoint": "http://127.0.0.1:4318", "traces": {"sample_ratio": 0.5}})
            },
            Live("otel"),
        ),
        (
            "otel.logs.enabled",
            |c| {
                c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "logs": {"enabled": false}})
            },
            Live("otel"),
        ),
        (
            "otel.logs.endpoint",
            |c| c["otel"] = json!({"logs": {"endpoint": "http://127.0.0.1:4318"}}),
            Live("otel"),
        ),
        (
            "otel.logs.insecure",
            |c| {
                c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "logs": {"insecure": true}})
            },
            Live("otel"),
        ),
        (
            "otel.logs.headers",
            |c| {
                c["otel"] = json!({"endpoint": "http://127.0.0.1:4318", "logs": {"headers": {"X-Key": "k"}}})
            },
            Live("otel"),
        ),
    ]
}

/// The rows of the router's settings (`router`).
fn router_rows() -> Vec<Row> {
    vec![
        (
            "router.asn",
            |c| c["router"]["asn"] = json!(65002),
            AllNeighbors,
        ),
        (
            "router.local_address",
            |c| c["router"]["local_address"] = json!("127.0.0.9"),
            AllNeighbors,
        ),
        (
            "router.local_address_ipv6",
            |c| c["router"]["local_address_ipv6"] = json!("::1"),
            AllNeighbors,
        ),
        (
            "router.router_id",
            |c| c["router"]["router_id"] = json!("10.0.0.2"),
            AllNeighbors,
        ),
        // Only what validation accepts: the VIP runs the same either way.
    ]
}

/// The rows of a neighbor's RFC 8950, RFC 9234 and RFC 9687 settings.
fn neighbor_rfc_rows() -> Vec<Row> {
    vec![
        (
            "bgp.neighbors[].extended_next_hop",
            |c| nb(c)["extended_next_hop"] = json!(true),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].role",
            |c| nb(c)["role"] = json!("customer"),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].require_role",
            |c| {
                nb(c)["role"] = json!("customer");
                nb(c)["require_role"] = json!(true)
            },
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].send_hold_time",
            |c| nb(c)["send_hold_time"] = json!("20m"),
            Neighbor("a", NeighborChange::Restarted),
        ),
    ]
}

/// The rows of a neighbor's session settings.
fn neighbor_rows() -> Vec<Row> {
    vec![
        (
            "bgp.neighbors[].address",
            |c| nb(c)["address"] = json!("127.0.0.4"),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].auth_password",
            |c| nb(c)["auth_password"] = json!("secret"),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].enable_multihop",
            |c| nb(c)["enable_multihop"] = json!(true),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].error_wait_max",
            |c| nb(c)["error_wait_max"] = json!("30s"),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].error_wait_min",
            |c| nb(c)["error_wait_min"] = json!("2s"),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].graceful_restart",
            |c| nb(c)["graceful_restart"] = json!(false),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].hold_time",
            |c| nb(c)["hold_time"] = json!("9s"),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].keepalive_time",
            |c| nb(c)["keepalive_time"] = json!("2s"),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].local_address",
            |c| nb(c)["local_address"] = json!("127.0.0.9"),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].multihop_ttl",
            |c| {
                nb(c)["enable_multihop"] = json!(true);
                nb(c)["multihop_ttl"] = json!(9);
            },
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].name",
            |c| nb(c)["name"] = json!("z"),
            NeighborRenamed,
        ),
        (
            "bgp.neighbors[].passive",
            |c| nb(c)["passive"] = json!(true),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].peer_asn",
            |c| nb(c)["peer_asn"] = json!(65009),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].port",
            |c| nb(c)["port"] = json!(1179),
            Neighbor("a", NeighborChange::Restarted),
        ),
        (
            "bgp.neighbors[].required",
            |c| nb(c)["required"] = json!(false),
            Neighbor("a", NeighborChange::Required),
        ),
        (
            "bgp.neighbors[].ttl_security",
            |c| nb(c)["ttl_security"] = json!(true),
            Neighbor("a", NeighborChange::Restarted),
        ),
    ]
}

/// The rows of a neighbor's BFD settings.
fn bfd_rows() -> Vec<Row> {
    vec![
        (
            "bgp.neighbors[].bfd.enabled",
            |c| nb(c)["bfd"] = json!({"enabled": true}),
            Neighbor("a", NeighborChange::Bfd),
        ),
        (
            "bgp.neighbors[].bfd.desired_minimum_tx_interval",
            |c| nb(c)["bfd"] = json!({"enabled": true, "desired_minimum_tx_interval": "1s"}),
            Neighbor("a", NeighborChange::Bfd),
        ),
        (
            "bgp.neighbors[].bfd.required_minimum_receive",
            |c| nb(c)["bfd"] = json!({"enabled": true, "required_minimum_receive": "1s"}),
            Neighbor("a", NeighborChange::Bfd),
        ),
        (
            "bgp.neighbors[].bfd.detection_multiplier",
            |c| nb(c)["bfd"] = json!({"enabled": true, "detection_multiplier": 5}),
            Neighbor("a", NeighborChange::Bfd),
        ),
        (
            "bgp.neighbors[].bfd.multihop",
            |c| nb(c)["bfd"] = json!({"enabled": true, "multihop": false}),
            Neighbor("a", NeighborChange::Bfd),
        ),
    ]
}

/// The rows of a VIP's own settings.
fn vip_rows() -> Vec<Row> {
    vec![
        (
            "vips[].allow_default_route",
            |c| web(c)["allow_default_route"] = json!(true),
            Live(""),
        ),
        (
            "vips[].always",
            |c| {
                web(c).as_object_mut().map(|o| o.remove("check"));
                web(c)["always"] = json!(true);
            },
            Vip("web", restarted("always")),
        ),
        (
            "vips[].checks_policy",
            |c| c["vips"][1]["checks_policy"] = json!("any"),
            Vip("dns", restarted("checks_policy")),
        ),
        (
            "vips[].local_interface",
            |c| {
                web(c)["require_local_address"] = json!(true);
                web(c)["local_interface"] = json!("lo");
            },
            Vip("web", restarted("require_local_address")),
        ),
        ("vips[].name", |c| web(c)["name"] = json!("www"), VipRenamed),
        (
            "vips[].services",
            |c| web(c)["services"] = json!(["uhttpd"]),
            Vip("web", restarted("services")),
        ),
        (
            "vips[].interfaces",
            |c| web(c)["interfaces"] = json!(["wan"]),
            Vip("web", restarted("interfaces")),
        ),
        (
            "vips[].prefix",
            |c| web(c)["prefix"] = json!("10.1.0.9/32"),
            Vip("web", restarted("prefix")),
        ),
        (
            "vips[].require_local_address",
            |c| web(c)["require_local_address"] = json!(true),
            Vip("web", restarted("require_local_address")),
        ),
    ]
}

/// The rows of a VIP's MULTI_EXIT_DISC and LOCAL_PREF.
fn preference_rows() -> Vec<Row> {
    vec![
        (
            "vips[].policy.announce.med",
            |c| web(c)["policy"] = json!({"announce": {"med": 10}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.announce.local_pref",
            |c| web(c)["policy"] = json!({"announce": {"local_pref": 200}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.lower_priority.med",
            |c| web(c)["policy"] = json!({"lower_priority": {"med": 10}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.lower_priority.local_pref",
            |c| web(c)["policy"] = json!({"lower_priority": {"local_pref": 50}}),
            Vip("web", kept(true, false)),
        ),
    ]
}

/// The rows of a VIP's `policy`.
fn policy_rows() -> Vec<Row> {
    vec![
        (
            "vips[].policy.announce.as_path_prepend",
            |c| web(c)["policy"] = json!({"announce": {"as_path_prepend": 2}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.announce.communities",
            |c| web(c)["policy"] = json!({"announce": {"communities": ["65001:7"]}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.announce.large_communities",
            |c| web(c)["policy"] = json!({"announce": {"large_communities": ["1:2:3"]}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.drain_time",
            |c| web(c)["policy"] = json!({"drain_time": "5s"}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.drain_until_flows_below",
            |c| web(c)["policy"] = json!({"drain_until_flows_below": 3}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.fail_action",
            |c| web(c)["policy"] = json!({"fail_action": "withdraw"}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.lower_priority.as_path_prepend",
            |c| web(c)["policy"] = json!({"lower_priority": {"as_path_prepend": 1}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.lower_priority.communities",
            |c| web(c)["policy"] = json!({"lower_priority": {"communities": ["65001:8"]}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.lower_priority.large_communities",
            |c| web(c)["policy"] = json!({"lower_priority": {"large_communities": ["1:2:4"]}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.lower_priority_file",
            |c| web(c)["policy"] = json!({"lower_priority_file": "/tmp/x"}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.recovery_hold",
            |c| web(c)["policy"] = json!({"recovery_hold": "3s"}),
            Vip("web", kept(true, false)),
        ),
        // A kept VIP keeps its penalty; the new parameters apply to it.
        (
            "vips[].policy.damping.enabled",
            |c| web(c)["policy"] = json!({"damping": {"enabled": true}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.damping.half_life",
            |c| web(c)["policy"] = json!({"damping": {"half_life": "1m"}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.damping.suppress",
            |c| web(c)["policy"] = json!({"damping": {"suppress": 3000}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.damping.reuse",
            |c| web(c)["policy"] = json!({"damping": {"reuse": 500}}),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].policy.damping.max_suppress",
            |c| web(c)["policy"] = json!({"damping": {"max_suppress": "30m"}}),
            Vip("web", kept(true, false)),
        ),
    ]
}

/// The rows of a VIP's check.
fn check_rows() -> Vec<Row> {
    vec![
        (
            "vips[].check.detailed_metrics",
            |c| chk(c)["detailed_metrics"] = json!(true),
            Vip("web", kept(true, false)),
        ),
        (
            "vips[].check.fall",
            |c| chk(c)["fall"] = json!(1),
            Vip("web", kept(false, true)),
        ),
        (
            "vips[].check.fast_interval",
            |c| chk(c)["fast_interval"] = json!("500ms"),
            Vip("web", kept(false, true)),
        ),
        (
            "vips[].check.interval",
            |c| chk(c)["interval"] = json!("2s"),
            Vip("web", kept(false, true)),
        ),
        (
            "vips[].check.name",
            |c| chk(c)["name"] = json!("n"),
            Vip("web", restarted("checks")),
        ),
        (
            "vips[].check.degraded_latency",
            |c| chk(c)["degraded_latency"] = json!("50ms"),
            Vip("web", kept(false, true)),
        ),
        (
            "vips[].check.degraded_hold_down",
            |c| {
                chk(c)["degraded_latency"] = json!("50ms");
                chk(c)["degraded_hold_down"] = json!("5s");
            },
            Vip("web", kept(false, true)),
        ),
        (
            "vips[].check.rise",
            |c| chk(c)["rise"] = json!(4),
            Vip("web", kept(false, true)),
        ),
        (
            "vips[].check.timeout",
            |c| chk(c)["timeout"] = json!("300ms"),
            Vip("web", kept(false, true)),
        ),
        (
            "vips[].check.type",
            |c| *chk(c) = json!({"type": "udp", "udp": {"port": 80}}),
            Vip("web", restarted("checks")),
        ),
        (
            "vips[].check.tcp",
            |c| chk(c)["tcp"]["send"] = json!("x"),
            Vip("web", restarted("checks")),
        ),
        (
            "vips[].check.udp",
            |c| c["vips"][1]["checks"][0]["udp"]["payload"] = json!("x"),
            Vip("dns", restarted("checks")),
        ),
        (
            "vips[].check.http",
            |c| *chk(c) = json!({"type": "http", "http": {"url": "/x"}}),
            Vip("web", restarted("checks")),
        ),
        (
            "vips[].check.dns",
            |c| *chk(c) = json!({"type": "dns", "dns": {"names": ["a.example"]}}),
            Vip("web", restarted("checks")),
        ),
        (
            "vips[].check.ping",
            |c| *chk(c) = json!({"type": "ping", "ping": {"privileged": true}}),
            Vip("web", restarted("checks")),
        ),
        (
            "vips[].check.grpc",
            |c| *chk(c) = json!({"type": "grpc", "grpc": {"port": 50051}}),
            Vip("web", restarted("checks")),
        ),
        (
            "vips[].check.exec",
            |c| *chk(c) = json!({"type": "exec", "exec": {"command": "/bin/true"}}),
            Vip("web", restarted("checks")),
        ),
        (
            "vips[].check.ubus",
            |c| {
                *chk(c) = json!({"type": "ubus",
                                 "ubus": {"object": "system", "method": "info"}})
            },
            Vip("web", restarted("checks")),
        ),
    ]
}

/// The settings the schema lists, sorted.
fn schema_settings() -> Vec<String> {
    // The settings the schema lists: its leaves, `checks[]` folded into
    // `check` (the same check type), a probe block as one setting.
    let text = include_str!("../../../../../schema/pathosd-config-v1.schema.json");
    let schema: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    let mut leaves = Vec::new();
    // Bounded: the schema is four levels deep at most.
    let mut stack = vec![(String::new(), &schema, 0u8)];
    while let Some((path, node, depth)) = stack.pop() {
        assert!(depth < 8, "{path}");
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                stack.push((p, v, depth + 1));
            }
        } else if let Some(items) = node.get("items").filter(|i| i.get("properties").is_some()) {
            stack.push((format!("{path}[]"), items, depth + 1));
        } else {
            let path = path.replace("vips[].checks[].", "vips[].check.");
            // `vips[].check.http.url` → `vips[].check.http`.
            let block = path
                .strip_prefix("vips[].check.")
                .and_then(|rest| rest.split_once('.'))
                .map(|(probe, _)| format!("vips[].check.{probe}"));
            leaves.push(block.unwrap_or(path));
        }
    }
    leaves.sort();
    leaves.dedup();
    leaves
}

/// The plan of `edit` alone is what `want` says.
fn check_row(path: &str, edit: fn(&mut Value), want: Want) {
    let p = plan(edit);
    let vip_row = matches!(want, Vip(..) | VipRenamed);
    match want {
        Live("") => assert!(p.is_empty(), "{path}: {p:?}"),
        Live(k) => assert_eq!(
            (live(&p).as_slice(), p.needs_restart.as_slice()),
            (&[k][..], &[][..]),
            "{path}"
        ),
        Restart(k) => assert_eq!(
            (live(&p).as_slice(), p.needs_restart.as_slice()),
            (&[][..], &[k][..]),
            "{path}"
        ),
        Vip(v, c) => {
            assert_eq!(p.vip(v), &c, "{path}: {p:?}");
            assert!(
                p.vips
                    .iter()
                    .all(|(n, c)| n == v || *c == VipChange::Unchanged),
                "{path}: {p:?}"
            );
        }
        Neighbor(n, c) => {
            assert_eq!(p.neighbor(n), c, "{path}: {p:?}");
            assert_eq!(p.neighbor("b"), NeighborChange::Unchanged, "{path}");
        }
        AllNeighbors => assert!(
            p.neighbors
                .iter()
                .all(|(_, c)| *c == NeighborChange::Restarted),
            "{path}: {p:?}"
        ),
        VipRenamed => assert_eq!(
            (p.vip("www"), p.vip("web")),
            (&VipChange::Added, &VipChange::Removed),
            "{path}"
        ),
        NeighborRenamed => assert_eq!(
            (p.neighbor("z"), p.neighbor("a")),
            (NeighborChange::Added, NeighborChange::Removed),
            "{path}"
        ),
    }
    if !vip_row {
        assert!(
            p.vips.iter().all(|(_, c)| *c == VipChange::Unchanged),
            "{path}: {p:?}"
        );
    }
}

/// Every setting is applied live or reported as needing a restart. Every setting the JSON Schema lists
/// (`schema/pathosd-config-v1.schema.json`), changed alone, gives a plan
/// of the class docs/config.md's Reload table gives it; none is silently
/// ignored. A new config field fails here until it has a row (and a rule
/// in `diff` and the docs). A probe block's options (`check.http.url`,
/// ...) are one row per type: `identity` compares every field of a check
/// but its timing and `detailed_metrics`, so each of them is identity.
#[test]
fn every_setting_of_the_schema_has_a_reload_rule() {
    let rows: Vec<Row> = [
        api_rows(),
        bgp_rows(),
        logging_rows(),
        hooks_rows(),
        otel_rows(),
        otel_signal_rows(),
        router_rows(),
        neighbor_rows(),
        neighbor_rfc_rows(),
        bfd_rows(),
        vip_rows(),
        policy_rows(),
        preference_rows(),
        check_rows(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let leaves = schema_settings();
    let mut listed: Vec<String> = rows.iter().map(|(p, _, _)| p.to_string()).collect();
    listed.sort();
    assert_eq!(
        leaves, listed,
        "a setting without a reload rule here (or a row for none)"
    );

    for (path, edit, want) in rows {
        check_row(path, edit, want);
    }
}

/// The paths of the settings the plan changes live.
fn live(p: &ReloadPlan) -> Vec<&'static str> {
    p.live.iter().map(|c| c.path()).collect()
}

#[test]
fn global_settings_live_or_after_a_restart() {
    let p = plan(|c| {
        c["api"] = json!({"listen": "127.0.0.1:1", "ubus_socket": "/tmp/u", "token": "0123456789abcdef",
                          "idle_timeout": "9s"});
        c["logging"] = json!({"level": "debug", "syslog": false, "timestamps": true});
        c["bgp"]["listen_port"] = json!(1179);
        c["bgp"]["shutdown_drain"] = json!("2s");
    });
    assert_eq!(
        p.needs_restart,
        vec![
            "bgp.listen_address",
            "api.ubus_socket",
            "logging.syslog",
            "logging.timestamps"
        ]
    );
    assert_eq!(
        p.live,
        vec![
            LiveChange::LogLevel,
            LiveChange::ShutdownDrain,
            LiveChange::Api(ApiSetting::Listen),
            LiveChange::Api(ApiSetting::IdleTimeout),
            LiveChange::Api(ApiSetting::Token),
        ]
    );
    // VIPs and sessions are not touched by any of them.
    assert!(p.vips.iter().all(|(_, c)| *c == VipChange::Unchanged));
    assert!(p
        .neighbors
        .iter()
        .all(|(_, c)| *c == NeighborChange::Unchanged));
    // The effective listen address counts: local_address moves it.
    let p = plan(|c| c["router"]["local_address"] = json!("127.0.0.9"));
    assert!(p.needs_restart.contains(&"bgp.listen_address"), "{p:?}");
}

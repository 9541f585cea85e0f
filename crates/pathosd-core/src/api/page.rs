//! `GET /`: a small self-contained status page. The tables are rendered here
//! so the page works without JavaScript; a short inline script then refreshes
//! them from `/status` and turns the "Trigger check" forms into fetches. The
//! fetch sends `X-Requested-With` (and the token, asked for on a 401), as
//! `api::access` requires of every change; the script-less form POST is a
//! simple request and is refused. No external assets: the router may have no
//! route to the internet.

use super::model::{CheckView, PeerView, Snapshot, VipView};
use crate::time::utc_timestamp;
use std::fmt::Write;

/// Escapes text for HTML element content and double-quoted attributes. VIP
/// names, check details and peer errors are user or peer data.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Percent-encodes a path segment (RFC 3986 unreserved characters stay).
pub fn pct(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            o.push(char::from(b));
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:1em 2em;color:#222}\
table{border-collapse:collapse;margin-bottom:1.5em}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
th{background:#eee}.b{padding:1px 7px;border-radius:8px;color:#fff;font-weight:600}\
.announced,.established,.healthy{background:#2a7}.pessimized{background:#d90}\
.withdrawn,.unhealthy,.down{background:#c33}small{color:#666}#msg{white-space:pre-wrap}";

// Mirrors the server-side rendering from /status; text goes through e() so
// JSON strings can never become markup.
const SCRIPT: &str = r#"
const e=s=>String(s==null?'':s).replace(/[&<>"']/g,c=>'&#'+c.charCodeAt(0)+';');
const bd=(c,t)=>'<span class="b '+e(c)+'">'+e(t)+'</span>';
function chk(c){return '<div>'+e(c.name)+' <small>'+e(c.type)+'</small> '+bd(c.health_name,c.health_name)+' '+e(c.consecutive_ok)+'/'+e(c.consecutive_fail)+' <small>'+e(c.last_check_detail)+'</small></div>'}
function vip(v){return '<tr><td>'+e(v.name)+'</td><td>'+(v.prefixes||[v.prefix]).map(e).join('<br>')+'</td><td>'+bd(v.state_name,v.state_name)+'</td><td>'+bd(v.health_name,v.health_name)+'</td><td>'+e(v.as_path_prepend)+'</td><td>'+(v.drain?'yes':'no')+'</td><td>'+v.checks.map(chk).join('')+'</td><td>'+e(v.last_transition_time)+' <small>'+e(v.last_transition_reason)+'</small></td><td><form method="post" action="/api/v1/vips/'+encodeURIComponent(v.name)+'/check"><button>Trigger check</button></form></td></tr>'}
function peer(p){return '<tr><td>'+e(p.name)+'</td><td>'+e(p.address)+'</td><td>'+e(p.peer_asn)+'</td><td>'+bd(p.session_state=='established'?'established':'down',p.session_state)+'</td><td>'+e(p.uptime_seconds)+'</td><td>'+e(p.advertised)+'</td><td><small>'+e(p.last_error||p.notification_received||p.notification_sent)+'</small></td></tr>'}
function post(u){const h={'X-Requested-With':'pathosd'};const t=sessionStorage.getItem('pathosd-token');if(t)h.Authorization='Bearer '+t;return fetch(u,{method:'POST',headers:h})}
function bind(){document.querySelectorAll('form').forEach(f=>f.onsubmit=async ev=>{ev.preventDefault();let r=await post(f.action);if(r.status==401){const t=prompt('API token (api.token)');if(t){sessionStorage.setItem('pathosd-token',t);r=await post(f.action)}}document.getElementById('msg').textContent=await r.text();load()})}
async function load(){try{const s=await(await fetch('/status')).json();
document.getElementById('vips').innerHTML=s.vips.map(vip).join('');
document.getElementById('peers').innerHTML=s.peers.map(peer).join('');
document.getElementById('up').textContent=s.uptime_seconds;bind()}catch(x){}}
bind();setInterval(load,5000);
"#;

fn badge(o: &mut String, class: &str, text: &str) {
    let _ = write!(o, "<span class=\"b {}\">{}</span>", esc(class), esc(text));
}

fn check_row(o: &mut String, c: &CheckView) {
    let h = if c.healthy { "healthy" } else { "unhealthy" };
    let _ = write!(o, "<div>{} <small>{}</small> ", esc(&c.name), esc(&c.kind));
    badge(o, h, h);
    let detail = c.last.as_ref().map_or("", |r| r.detail.as_str());
    let _ = write!(
        o,
        " {}/{} <small>{}</small></div>",
        c.consecutive_ok,
        c.consecutive_fail,
        esc(detail)
    );
}

pub(crate) fn vip_row(o: &mut String, v: &VipView) {
    let _ = write!(o, "<tr><td>{}</td><td>{}", esc(&v.name), esc(&v.prefix));
    for p in &v.more_prefixes {
        let _ = write!(o, "<br>{}", esc(p));
    }
    o.push_str("</td><td>");
    badge(o, v.state, v.state);
    o.push_str("</td><td>");
    let h = if v.healthy { "healthy" } else { "unhealthy" };
    badge(o, h, h);
    let _ = write!(
        o,
        "</td><td>{}</td><td>{}</td><td>",
        v.as_path_prepend,
        if v.drain_file || v.drain_api {
            "yes"
        } else {
            "no"
        }
    );
    for c in &v.checks {
        check_row(o, c);
    }
    o.push_str("</td><td>");
    if let Some((t, r)) = &v.last_transition {
        let _ = write!(o, "{} <small>{}</small>", utc_timestamp(*t), esc(r));
    }
    let _ = write!(
        o,
        "</td><td><form method=\"post\" action=\"/api/v1/vips/{}/check\"><button>Trigger check</button></form></td></tr>",
        esc(&pct(&v.name))
    );
}

fn peer_row(o: &mut String, p: &PeerView) {
    let _ = write!(
        o,
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>",
        esc(&p.name),
        p.address,
        p.peer_asn
    );
    let class = if p.state == "established" {
        "established"
    } else {
        "down"
    };
    badge(o, class, &p.state);
    let err = p
        .last_error
        .as_deref()
        .or(p.notification_received.as_deref())
        .or(p.notification_sent.as_deref())
        .unwrap_or("");
    let up = p
        .established_for
        .map_or(String::new(), |d| d.as_secs().to_string());
    let _ = write!(
        o,
        "</td><td>{up}</td><td>{}</td><td><small>{}</small></td></tr>",
        p.advertised,
        esc(err)
    );
}

/// The page up to the VIPs' rows: `api::stream` writes the rows a few at
/// a time, then [`tail`].
pub(crate) fn head(o: &mut String, s: &Snapshot) {
    let _ = write!(
        o,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
<title>pathosd {rid}</title><style>{STYLE}</style></head><body>\
<h1>pathosd</h1><p>router {rid}, AS {asn}, version {ver}, up <span id=\"up\">{up}</span> s</p>\
<h2>VIPs</h2><table><thead><tr><th>name</th><th>prefix</th><th>state</th><th>health</th><th>prepend</th>\
<th>drain</th><th>checks (ok/fail, detail)</th><th>last transition</th><th></th></tr></thead><tbody id=\"vips\">",
        rid = esc(&s.router_id),
        asn = s.asn,
        ver = esc(s.version),
        up = s.uptime.as_secs(),
    );
}

/// The page after the VIPs' rows: the peers and the script.
pub(crate) fn tail(o: &mut String, s: &Snapshot) {
    o.push_str(
        "</tbody></table><h2>BGP peers</h2><table><thead><tr><th>name</th><th>address</th><th>AS</th>\
<th>state</th><th>uptime (s)</th><th>advertised</th><th>last error</th></tr></thead><tbody id=\"peers\">",
    );
    for p in &s.peers {
        peer_row(o, p);
    }
    let _ = writeln!(
        o,
        "</tbody></table><pre id=\"msg\"></pre><p><small><a href=\"/status\">/status</a> \
<a href=\"/metrics\">/metrics</a> <a href=\"/readyz\">/readyz</a></small></p>\
<script>{SCRIPT}</script></body></html>"
    );
}

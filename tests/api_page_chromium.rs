//! The status page in headless Chromium (Debian's chromium): the DOM it builds
//! shows the VIP names and states, user data stays text, and the inline script
//! re-renders the tables from /status.

#[path = "api_fixture.rs"]
mod fixture;

use fixture::*;
use pathosd::api::http::{serve, Handler, Response};
use pathosd::check::CheckResult;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs chromium --dump-dom on `url`, killed after a bounded time.
fn dump_dom(tag: &str, url: &str, extra: &[&str]) -> String {
    let dir = TempDir(
        std::env::temp_dir().join(format!("pathosd-chromium-{}-{tag}", std::process::id())),
    );
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let out = dir.0.join("dom.html");
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", dir.0.display()))
        .args(extra)
        .arg("--dump-dom")
        .arg(url)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium (Debian package chromium)");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "chromium exited with {st}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(&out).unwrap()
}

fn server(n: u8) -> (Owner, SocketAddr) {
    let owner = start_owner(Duration::from_millis(1));
    let addr = start_http(test_ip(n), owner.ctl.clone(), limits(10_000));
    (owner, addr)
}

/// Dumped at the load event, before the script's first refresh: what the
/// server rendered (headless --dump-dom itself needs script enabled, so a
/// script-less browser is approximated by this).
#[test]
fn server_rendered_page_shows_vips_and_states() {
    let (_owner, addr) = server(1);
    let dom = dump_dom("ssr", &format!("http://{addr}/"), &[]);
    assert!(dom.contains("<td>web</td>"), "{dom}");
    assert!(dom.contains("<td>db</td>"));
    assert!(dom.contains("<span class=\"b announced\">announced</span>"));
    assert!(dom.contains("<span class=\"b withdrawn\">withdrawn</span>"));
    assert!(dom.contains("<span class=\"b pessimized\">pessimized</span>"));
    assert!(dom.contains("<td>frr</td>"));
    assert!(dom.contains("Trigger check"));
    // User data became text, not elements.
    assert!(dom.contains("&lt;b&gt;evil&lt;/b&gt;&amp;\"x'"), "{dom}");
    assert!(!dom.contains("<b>evil</b>"));
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn script_rerenders_tables_from_status() {
    let (owner, addr) = server(2);
    // The page itself is snapshot 0; the script's /status fetches see the change.
    // db's check passes its rise (three times), which announces it.
    let mut changed = false;
    *owner.on_snapshot.lock().unwrap() = Some(Box::new(move |o, served| {
        if served >= 1 && !changed {
            changed = true;
            let now = o.now();
            for _ in 0..3 {
                let ok = CheckResult::pass("re-rendered by script");
                o.report("db", "tcp", ok, now);
            }
            o.driver.peers[1].state = "established".into();
        }
    }));
    let dom = dump_dom(
        "js",
        &format!("http://{addr}/"),
        &["--virtual-time-budget=12000"],
    );
    assert!(dom.contains("re-rendered by script"), "{dom}");
    assert!(
        !dom.contains("class=\"b withdrawn\""),
        "db is announced now: {dom}"
    );
    assert!(dom.contains("<td>db</td>"));
    assert!(dom.contains("<span class=\"b announced\">announced</span>"));
    assert!(dom.contains("&lt;b&gt;evil&lt;/b&gt;&amp;\"x'"), "{dom}");
    assert!(!dom.contains("<b>evil</b>"));
    assert!(!dom.contains("<script>alert(1)</script>"));
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

/// Serves the real routes, with a script added to the page at `/` that
/// clicks the first "Trigger check" button once the page has loaded: the
/// page's own fetch, as a user's click sends it, must pass the access rules.
fn server_clicking(n: u8) -> (Owner, SocketAddr) {
    let owner = start_owner(Duration::from_millis(1));
    let inner = pathosd::api::routes::handler(owner.ctl.clone());
    let handler: Handler = Arc::new(move |req| {
        let page = req.path == "/";
        let inner = inner.clone();
        Box::pin(async move {
            let mut r = inner(req).await;
            // The fixture's page is one piece: written whole.
            assert!(r.body.is_none(), "the page of three VIPs is streamed");
            if page {
                let html = String::from_utf8(r.response.body).unwrap().replace(
                    "</body>",
                    "<script>addEventListener('load',()=>document.querySelector('form button').click())</script></body>",
                );
                r.response.body = html.into_bytes();
            }
            r
        })
    });
    let listener = pathosd::api::http::listen(SocketAddr::from((test_ip(n), 0))).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || pathosd::rt::block_on(serve(listener, handler, limits(10_000))));
    (owner, addr)
}

#[test]
fn trigger_button_passes_the_access_rules() {
    let (owner, addr) = server_clicking(3);
    let dom = dump_dom(
        "click",
        &format!("http://{addr}/"),
        &["--virtual-time-budget=4000"],
    );
    assert_eq!(owner.log.triggers.load(Ordering::SeqCst), 1, "{dom}");
    // The answer is shown on the page.
    assert!(dom.contains("\"vip\": \"web\""), "{dom}");
}

/// A page on another origin that posts to the API as soon as it loads: a
/// cross-site form (a simple request) and a script's fetch with a custom
/// header (which needs a CORS preflight the API never grants). Neither may
/// drain the VIP nor trigger a check.
#[test]
fn cross_site_page_cannot_drain_or_trigger() {
    let (owner, api) = server(4);
    let evil_page = format!(
        "<!doctype html><html><body>\
         <iframe name=sink></iframe>\
         <form id=f method=post target=sink action=\"http://{api}/api/v1/vips/web/drain\"></form>\
         <p id=out>pending</p>\
         <script>\
         document.getElementById('f').submit();\
         fetch('http://{api}/api/v1/vips/web/check',{{method:'POST',headers:{{'X-Requested-With':'x'}}}})\
           .then(r=>r.text()).then(t=>document.getElementById('out').textContent='answered '+t,\
                 e=>document.getElementById('out').textContent='blocked '+e);\
         </script></body></html>"
    );
    let handler: Handler = Arc::new(move |_req| {
        let page = evil_page.clone();
        Box::pin(async move { Response::new(200, "text/html; charset=utf-8", page).into() })
    });
    let listener = pathosd::api::http::listen(SocketAddr::from((test_ip(5), 0))).unwrap();
    let evil = listener.local_addr().unwrap();
    std::thread::spawn(move || pathosd::rt::block_on(serve(listener, handler, limits(10_000))));
    let dom = dump_dom(
        "evil",
        &format!("http://{evil}/"),
        &["--virtual-time-budget=4000"],
    );
    assert!(dom.contains("blocked "), "the fetch must fail: {dom}");
    assert!(!owner.drain_api("web"), "{dom}");
    assert_eq!(owner.log.triggers.load(Ordering::SeqCst), 0, "{dom}");
}

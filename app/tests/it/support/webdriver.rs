//! A small WebDriver client for the page's browser tests: Debian's `chromedriver`
//! started on a free port (its process group killed on drop) driving a headless
//! `chromium` with a fresh profile, over the HTTP client the tests already use.
//!
//! Hand-written rather than `thirtyfour` or `fantoccini`: the tests need a dozen
//! commands, and those crates would add their own dependency trees to a workspace
//! built on two cores. Every command has a time limit, and waits poll the DOM until
//! a deadline (never a fixed sleep).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_peers::PeerProcess;

/// The W3C key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long one WebDriver command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a wait for the page polls before it fails.
pub const WAIT: Duration = Duration::from_secs(15);

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// `chromedriver` and a browser session of it.
pub struct Browser {
    client: reqwest::Client,
    session: String,
    base: String,
    _driver: PeerProcess,
    _profile: tempfile::TempDir,
}

/// An element of the page.
#[derive(Clone, Debug)]
pub struct Element(String);

/// Whether Debian's chromium and chromedriver are installed: `false` (with a
/// `PEER-SKIP` line) only where skipping is allowed; a missing browser fails the
/// test otherwise, and always under `CI=true`.
pub fn browser_installed(test: &str) -> bool {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
        .into_iter()
        .filter(|path| !Path::new(path).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        test_peers::skipping_allowed(),
        "test {test} needs {} (Debian's chromium and chromium-driver): run tests/peers/install.sh as root \
         (or set MECATED_SKIP_PEERS=1 locally to skip; never under CI=true)",
        missing.join(" and ")
    );
    let line = format!("PEER-SKIP {test} chromium\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    false
}

/// Where the tests save screenshots: `target/studio-screenshots/`.
pub fn screenshot_dir() -> PathBuf {
    let dir = test_peers::repo_root().join("target/studio-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Browser {
    /// Starts chromedriver and a headless chromium of `width`×`height` pixels.
    pub async fn start(width: u32, height: u32) -> Self {
        let driver = PeerProcess::start(|port| {
            let mut command = Command::new(CHROMEDRIVER);
            command.arg(format!("--port={port}"));
            command
        })
        .unwrap_or_else(|error| panic!("chromedriver did not start: {error}"));
        let profile = tempfile::tempdir().unwrap();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(COMMAND_TIMEOUT)
            .build()
            .unwrap();
        let base = driver.base_url();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        }}});
        let answer = command(&client, "POST", &format!("{base}/session"), Some(capabilities)).await;
        let session = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session in {answer}"))
            .to_owned();
        Self {
            client,
            session,
            base,
            _driver: driver,
            _profile: profile,
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        command(&self.client, method, &url, body).await
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url }))).await;
    }

    /// Reloads the page.
    pub async fn refresh(&self) {
        self.call("POST", "/refresh", Some(json!({}))).await;
    }

    /// Every element matching `css`.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        let found = self
            .call(
                "POST",
                "/elements",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|e| Element(e[ELEMENT].as_str().unwrap().to_owned()))
            .collect()
    }

    /// Waits until `css` matches at least `count` elements; returns them.
    pub async fn wait_for_count(&self, css: &str, count: usize) -> Vec<Element> {
        let deadline = Instant::now() + WAIT;
        loop {
            let found = self.find_all(css).await;
            if found.len() >= count {
                return found;
            }
            if Instant::now() > deadline {
                let shot = self.screenshot("timeout").await;
                panic!(
                    "waited {WAIT:?} for {count} × {css:?}, found {} (screenshot {})",
                    found.len(),
                    shot.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for the first element matching `css`.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.wait_for_count(css, 1).await.remove(0)
    }

    /// Waits until the script `condition` (a function body returning a boolean)
    /// holds in the page; `what` names it in the failure.
    pub async fn wait_until(&self, what: &str, condition: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            if self.execute(condition, json!([])).await == json!(true) {
                return;
            }
            if Instant::now() > deadline {
                let shot = self.screenshot("timeout").await;
                panic!("waited {WAIT:?} for {what} (screenshot {})", shot.display());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clicks `element`.
    pub async fn click(&self, element: &Element) {
        self.call("POST", &format!("/element/{}/click", element.0), Some(json!({})))
            .await;
    }

    /// Types `text` into `element`.
    pub async fn type_text(&self, element: &Element, text: &str) {
        self.call(
            "POST",
            &format!("/element/{}/value", element.0),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// The rendered text of `element`.
    pub async fn text(&self, element: &Element) -> String {
        let value = self
            .call("GET", &format!("/element/{}/text", element.0), None)
            .await;
        value.as_str().unwrap_or_default().to_owned()
    }

    /// Runs the function body `script` with `args`; its return value.
    pub async fn execute(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
        .await
    }

    /// Runs the function body `script`, which calls its last argument with the
    /// result; that result.
    pub async fn execute_async(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/async",
            Some(json!({ "script": script, "args": args })),
        )
        .await
    }

    /// Saves a screenshot as `target/studio-screenshots/<name>.png`; its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        use base64::Engine as _;
        let data = self.call("GET", "/screenshot", None).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .unwrap_or_default();
        let path = screenshot_dir().join(format!("{name}.png"));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// The browser's console entries of level `SEVERE` so far (errors).
    pub async fn console_errors(&self) -> Vec<String> {
        let entries = self
            .call("POST", "/se/log", Some(json!({"type": "browser"})))
            .await;
        entries
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .filter(|entry| entry["level"] == "SEVERE")
                    .map(|entry| entry["message"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Runs axe-core (from the npm peers) on the page; its `serious` and `critical`
    /// violations as `id: help (targets)`. `None` when the peer is skipped.
    pub async fn accessibility_violations(&self, test: &str) -> Option<Vec<String>> {
        let axe = test_peers::npm_file(test, "axe-core/axe.min.js")?;
        let source = std::fs::read_to_string(axe).unwrap();
        self.execute(&source, json!([])).await;
        let outcome = self
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, {resultTypes: ['violations']})
                    .then((r) => done(r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                        targets: v.nodes.map((n) => n.target.join(' '))}))))
                    .catch((e) => done({error: String(e)}));",
                json!([]),
            )
            .await;
        assert!(outcome.get("error").is_none(), "axe failed: {outcome}");
        Some(
            outcome
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| v["impact"] == "serious" || v["impact"] == "critical")
                .map(|v| format!("{}: {} ({})", v["id"], v["help"], v["targets"]))
                .collect(),
        )
    }

    /// Ends the browser session (the driver dies on drop).
    pub async fn quit(self) {
        let url = format!("{}/session/{}", self.base, self.session);
        let _ = self.client.delete(url).send().await;
    }
}

/// One WebDriver command; its `value` (a WebDriver error fails the test).
async fn command(client: &reqwest::Client, method: &str, url: &str, body: Option<Value>) -> Value {
    let mut request = client.request(method.parse().unwrap(), url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|error| panic!("WebDriver {method} {url} failed: {error}"));
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    assert!(
        status.is_success(),
        "WebDriver {method} {url} answered {status}: {answer}"
    );
    answer["value"].clone()
}

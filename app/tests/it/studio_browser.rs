//! The page of `mecated serve` (Mecatl Studio) in a real headless chromium, driven
//! over WebDriver against an in-process server with a scripted model: sessions,
//! prompts, approvals, the streamed answer, the audit and its chart, the pickers, a
//! reload, stop and the queue, the token login and a foreign origin, an MCP
//! server's question as a form, a `Parallel` tree with a branch cancelled, a session
//! outliving a restart of `serve` (store directory and PostgreSQL), accessibility
//! (axe-core) and console errors. Screenshots go to `target/studio-screenshots/`.

use std::time::Duration;

use adapter_llm::{MockScript, MockTurn};
use app::{AppConfig, MemorySetting, ModelConfig, StoreConfig};
use engine_ports::{MemoryWrite, ToolCall};
use reqwest::StatusCode;
use serde_json::json;

use crate::support::http::TestServer;
use crate::support::serve::ServeProcess;
use crate::support::webdriver::{Browser, browser_installed};
use crate::support::{Scratch, config, one_call_model};

/// Desktop size the issue asks the page to be readable at.
const DESKTOP: (u32, u32) = (1280, 800);

fn script(turns: Vec<MockTurn>) -> ModelConfig {
    ModelConfig::MockScript(MockScript::new(turns))
}

fn stored(scratch: &Scratch, model: ModelConfig) -> AppConfig {
    let mut cfg = config(scratch);
    cfg.model = model;
    cfg.store = StoreConfig::Dir {
        path: scratch.path("store"),
        sync: adapter_jsonlstore::SyncPolicy::default(),
    };
    cfg
}

/// The new-session button once the page has shown itself (the first listing done).
const NEW_SESSION: &str = "#app:not([hidden]) [data-testid=new-session]";

/// A script for `[data-testid=message-assistant]` containing `text`.
fn answer_shown(text: &str) -> String {
    format!(
        "return [...document.querySelectorAll('[data-testid=message-assistant]')]\
         .some((e) => e.textContent.includes({}));",
        json!(text)
    )
}

const RUN_ENDED: &str = "return document.getElementById('stop').disabled \
     && [...document.querySelectorAll('.notice')].some((e) => e.textContent.startsWith('Run ended'));";

async fn send(browser: &Browser, text: &str) {
    let input = browser.wait_for("[data-testid=prompt-input]").await;
    browser.type_text(&input, text).await;
    browser.click(&browser.wait_for("[data-testid=send]").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_drives_a_session_through_approvals_the_audit_and_a_reload() {
    const TEST: &str = "the_page_drives_a_session_through_approvals_the_audit_and_a_reload";
    if !browser_installed(TEST) {
        return;
    }
    let scratch = Scratch::new();
    let mut cfg = stored(
        &scratch,
        script(vec![
            MockTurn::text("Writing the file.").with_call(ToolCall::new(
                "w1",
                "Write",
                r#"{"path":"out.txt","content":"hello"}"#,
            )),
            MockTurn::text("The file is written."),
            MockTurn::text("Trying again.").with_call(ToolCall::new(
                "w2",
                "Write",
                r#"{"path":"denied.txt","content":"no"}"#,
            )),
            MockTurn::text("Not written then."),
        ]),
    );
    cfg.memory.project = MemorySetting::InMemory;
    let server = TestServer::start(cfg).await;
    server.built.host().memory_scopes()[0]
        .store
        .put(MemoryWrite {
            key: "build-cmd".to_owned(),
            value: "just ci".to_owned(),
            description: "how to build".to_owned(),
            expected_version: None,
            writer: "test".to_owned(),
        })
        .await
        .unwrap();
    let browser = Browser::start(DESKTOP.0, DESKTOP.1).await;
    browser.goto(&server.url("/")).await;

    // Create a session; it is listed.
    browser.click(&browser.wait_for(NEW_SESSION).await).await;
    browser.wait_for("[data-testid=session-item]").await;
    let sessions = server.get("/v1/sessions").await;
    let id = sessions.body["sessions"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Prompt, approve once: the answer streams in and the file is written.
    send(&browser, "write out.txt").await;
    browser
        .click(&browser.wait_for("[data-testid=approve-once]").await)
        .await;
    browser
        .wait_until(
            "the answer after the approval",
            &answer_shown("The file is written."),
        )
        .await;
    browser.wait_until("the run's end", RUN_ENDED).await;
    assert_eq!(
        std::fs::read_to_string(scratch.ws().join("out.txt")).unwrap(),
        "hello"
    );
    let cards = browser.find_all("[data-testid=tool-card][data-status=ok]").await;
    assert_eq!(cards.len(), 1);
    assert!(browser.text(&cards[0]).await.contains("Write"));

    // Prompt again, deny: nothing is written and the card says so.
    send(&browser, "write denied.txt").await;
    browser.click(&browser.wait_for("[data-testid=deny]").await).await;
    browser
        .wait_until("the answer after the denial", &answer_shown("Not written then."))
        .await;
    browser
        .wait_for("[data-testid=tool-card][data-status=denied]")
        .await;
    assert!(!scratch.ws().join("denied.txt").exists());
    assert!(!browser.find_all("[data-testid=event]").await.is_empty());

    // The audit: both calls with who decided, and the latency chart drawn.
    browser
        .click(&browser.wait_for("[data-testid=audit-tab]").await)
        .await;
    let rows = browser.wait_for_count("[data-testid=audit-row]", 2).await;
    let first = browser.text(&rows[0]).await;
    let second = browser.text(&rows[1]).await;
    assert!(
        first.contains("Write") && first.contains("allow_once") && first.contains("user"),
        "{first}"
    );
    assert!(second.contains("deny") && second.contains("user"), "{second}");
    browser.wait_for("[data-testid=latency-chart] svg rect.p50").await;
    let axis = browser
        .execute(
            "return document.querySelector('[data-testid=latency-chart] svg').textContent;",
            json!([]),
        )
        .await;
    assert!(axis.as_str().unwrap().contains("run time (ms)"), "{axis}");
    browser.screenshot("audit").await;

    // The mode picker changes the session's mode.
    browser.click(&browser.wait_for("#tab-run").await).await;
    browser
        .click(
            &browser
                .wait_for("[data-testid=mode-select] option[value=plan]")
                .await,
        )
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let view = server.get(&format!("/v1/sessions/{id}")).await;
        if view.body["mode"] == "plan" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "mode not changed: {view:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !browser
            .find_all("[data-testid=model-select] option")
            .await
            .is_empty()
    );

    // A reload keeps the session and replays its history from the store.
    browser.refresh().await;
    browser
        .wait_until("the replayed answer", &answer_shown("The file is written."))
        .await;
    assert_eq!(browser.find_all("[data-testid=tool-card]").await.len(), 2);
    let selected = browser
        .find_all("[data-testid=session-item][aria-current=true]")
        .await;
    assert_eq!(selected.len(), 1);
    browser.screenshot("studio").await;

    // State: MCP status and memory facts, one forgotten.
    browser.click(&browser.wait_for("#tab-state").await).await;
    browser.wait_for("[data-testid=mcp-status]").await;
    let fact = browser.wait_for("[data-testid=memory-item]").await;
    assert!(browser.text(&fact).await.contains("build-cmd"));
    browser
        .click(&browser.wait_for("[data-testid=memory-item] button").await)
        .await;
    browser
        .wait_until(
            "the fact to be forgotten",
            "return document.querySelectorAll('[data-testid=memory-item]').length === 0;",
        )
        .await;
    let memory = server.get("/v1/memory").await;
    assert_eq!(memory.body["scopes"][0]["facts"], json!([]));

    // Accessible, and nothing went wrong in the console.
    browser.click(&browser.wait_for("#tab-run").await).await;
    if let Some(violations) = browser.accessibility_violations(TEST).await {
        assert!(violations.is_empty(), "axe: {violations:#?}");
    }
    let errors = browser.console_errors().await;
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    browser.quit().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_prompt_is_sent_when_the_run_ends_and_stop_cancels_a_run() {
    const TEST: &str = "a_queued_prompt_is_sent_when_the_run_ends_and_stop_cancels_a_run";
    if !browser_installed(TEST) {
        return;
    }
    let scratch = Scratch::new();
    let server = TestServer::start(stored(
        &scratch,
        script(vec![
            MockTurn::text("first answer").with_delay(Duration::from_millis(1500)),
            MockTurn::text("second answer"),
            MockTurn::text("never shown").with_delay(Duration::from_secs(60)),
        ]),
    ))
    .await;
    let browser = Browser::start(390, 844).await;
    browser.goto(&server.url("/")).await;
    browser.click(&browser.wait_for(NEW_SESSION).await).await;
    browser.wait_for("[data-testid=session-item]").await;

    send(&browser, "one").await;
    browser
        .wait_until(
            "the run to start",
            "return !document.getElementById('stop').disabled;",
        )
        .await;
    send(&browser, "two").await;
    let queued = browser.wait_for("#queued").await;
    assert_eq!(browser.text(&queued).await, "1 queued");
    browser
        .wait_until("the queued prompt's answer", &answer_shown("second answer"))
        .await;
    browser.wait_until("the second run's end", RUN_ENDED).await;

    send(&browser, "three").await;
    browser
        .wait_until(
            "the third run to start",
            "return !document.getElementById('stop').disabled;",
        )
        .await;
    browser.click(&browser.wait_for("[data-testid=stop]").await).await;
    browser
        .wait_until(
            "the cancelled result",
            "return [...document.querySelectorAll('.notice')].some((e) => e.textContent.startsWith('Run ended: cancelled'));",
        )
        .await;
    browser.screenshot("phone").await;
    let errors = browser.console_errors().await;
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    browser.quit().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_login_opens_the_page_and_a_foreign_origin_is_refused() {
    const TEST: &str = "a_token_login_opens_the_page_and_a_foreign_origin_is_refused";
    if !browser_installed(TEST) {
        return;
    }
    let scratch = Scratch::new();
    let server =
        TestServer::start_with(config(&scratch), "127.0.0.1:0".parse().unwrap(), Some("s3cr3t")).await;
    let browser = Browser::start(DESKTOP.0, DESKTOP.1).await;
    browser.goto(&server.url("/")).await;
    let token = browser.wait_for("#login:not([hidden]) #login-token").await;
    browser.type_text(&token, "wrong").await;
    browser.click(&browser.wait_for("#login-form button").await).await;
    browser
        .wait_until(
            "the refusal",
            "return document.getElementById('login-error').textContent.includes('wrong token');",
        )
        .await;
    let token = browser.wait_for("#login-token").await;
    browser
        .execute("document.getElementById('login-token').value = '';", json!([]))
        .await;
    browser.type_text(&token, "s3cr3t").await;
    browser.click(&browser.wait_for("#login-form button").await).await;
    browser
        .click(
            &browser
                .wait_for("#app:not([hidden]) [data-testid=new-session]")
                .await,
        )
        .await;
    browser.wait_for("[data-testid=session-item]").await;
    let cookie_seen = browser.execute("return document.cookie;", json!([])).await;
    assert_eq!(cookie_seen, json!(""), "the login cookie is HttpOnly");

    // A page of another origin (localhost is not 127.0.0.1 to the browser) cannot
    // use the API: its preflight is refused.
    let port = server.addr.port();
    browser.goto(&format!("http://localhost:{port}/")).await;
    browser.wait_for("#login-token").await;
    let outcome = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             fetch(arguments[0], {method: 'POST', credentials: 'include',
                 headers: {'content-type': 'application/json'}, body: '{}'})
               .then((r) => done('status ' + r.status))
               .catch((e) => done('refused: ' + e.name));",
            json!([format!("http://127.0.0.1:{port}/v1/sessions")]),
        )
        .await;
    assert_eq!(outcome, json!("refused: TypeError"), "{outcome}");
    let sessions = server.get("/v1/sessions").await;
    assert_eq!(sessions.status, StatusCode::OK);
    assert_eq!(sessions.body["sessions"].as_array().unwrap().len(), 1);
    browser.screenshot("login").await;
    browser.quit().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_question_is_a_form_from_its_schema_answered_in_the_page() {
    const TEST: &str = "an_mcp_servers_question_is_a_form_from_its_schema_answered_in_the_page";
    if !browser_installed(TEST) {
        return;
    }
    let Some(peer) = test_peers::elicit_server(TEST) else {
        return;
    };
    let scratch = Scratch::new();
    let mut cfg = stored(&scratch, one_call_model("mcp__py__ask_name", "{}"));
    cfg.mcp.servers = vec![crate::support::http_server(
        "py",
        &format!("{}/mcp", peer.base_url()),
    )];
    let server = TestServer::start(cfg).await;
    let browser = Browser::start(DESKTOP.0, DESKTOP.1).await;
    browser.goto(&server.url("/")).await;
    browser.click(&browser.wait_for(NEW_SESSION).await).await;
    browser.wait_for("[data-testid=session-item]").await;
    send(&browser, "who am I?").await;
    browser
        .click(&browser.wait_for("[data-testid=approve-once]").await)
        .await;

    // The form follows the server's schema: a required text `name`, a number `age`.
    let form = browser.wait_for("[data-testid=elicitation] form").await;
    assert!(browser.text(&form).await.contains("Your name"));
    let kinds = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=elicitation] input')]\
             .map((i) => [i.name, i.type, i.required]);",
            json!([]),
        )
        .await;
    assert_eq!(
        kinds,
        json!([["name", "text", true], ["age", "number", false]]),
        "{kinds}"
    );
    let name = browser
        .wait_for("[data-testid=elicitation] input[name=name]")
        .await;
    browser.type_text(&name, "Ada").await;
    let age = browser
        .wait_for("[data-testid=elicitation] input[name=age]")
        .await;
    browser.type_text(&age, "36").await;
    browser.screenshot("elicitation").await;
    browser
        .click(
            &browser
                .wait_for("[data-testid=elicitation] button[type=submit]")
                .await,
        )
        .await;

    // The server got the answer: the tool's result says so, and the form is closed.
    browser
        .wait_until(
            "the tool's result",
            "return [...document.querySelectorAll('[data-testid=tool-card][data-status=ok]')]\
             .some((e) => e.textContent.includes('hello Ada, age 36'));",
        )
        .await;
    let answered = browser.wait_for("[data-testid=elicitation] .verdict").await;
    assert_eq!(browser.text(&answered).await, "Answered: accept");
    assert!(
        browser
            .find_all("[data-testid=elicitation] form")
            .await
            .is_empty()
    );
    browser.wait_until("the run's end", RUN_ENDED).await;
    let errors = browser.console_errors().await;
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    browser.quit().await;
    server.stop().await;
}

/// The text of the branch `index` of the `Parallel` tree under the card of `call`.
fn branch(call: &str, index: u64) -> String {
    format!("[data-testid=tool-card][data-call={call}] .tree li.parallel li[data-child$='-{index}']")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_call_is_a_tree_of_branches_with_their_own_steps_and_its_cancel_stops_the_running_branch()
{
    const TEST: &str =
        "a_parallel_call_is_a_tree_of_branches_with_their_own_steps_and_its_cancel_stops_the_running_branch";
    if !browser_installed(TEST) {
        return;
    }
    let scratch = Scratch::new();
    let script = MockScript::new([
        MockTurn::text("Two ways at once.").with_call(ToolCall::new(
            "c1",
            "Parallel",
            json!({"tasks": ["ALPHA reads", "BETA thinks long"]}).to_string(),
        )),
        MockTurn::text("Both branches are back."),
    ])
    .with_child(
        "ALPHA",
        [
            MockTurn::text("").with_call(ToolCall::new("r", "Read", r#"{"path":"README.md"}"#)),
            MockTurn::text("alpha read the readme"),
        ],
    )
    .with_child(
        "BETA",
        [MockTurn::text("too late").with_delay(Duration::from_secs(60))],
    );
    let mut cfg = stored(&scratch, ModelConfig::MockScript(script));
    cfg.delegation.fork_dir = Some(scratch.path("forks"));
    let server = TestServer::start(cfg).await;
    let browser = Browser::start(DESKTOP.0, DESKTOP.1).await;
    browser.goto(&server.url("/")).await;
    browser.click(&browser.wait_for(NEW_SESSION).await).await;
    browser.wait_for("[data-testid=session-item]").await;
    send(&browser, "try both").await;
    browser
        .click(&browser.wait_for("[data-testid=approve-once]").await)
        .await;

    // Under the call: the Parallel node, then each branch with its own events.
    let root = browser
        .wait_for("[data-testid=tool-card][data-call=c1] .tree li.parallel")
        .await;
    assert!(
        browser
            .text(&root)
            .await
            .contains("Parallel (2 branches, join all)"),
        "{}",
        browser.text(&root).await
    );
    browser
        .wait_until(
            "branch 0 to end",
            &format!(
                "const b = document.querySelector({}); return b !== null \
                 && b.querySelector('.badge').textContent === 'end_turn';",
                json!(branch("c1", 0))
            ),
        )
        .await;
    let alpha = browser.text(&browser.wait_for(&branch("c1", 0)).await).await;
    assert!(alpha.starts_with("Branch 0"), "{alpha}");
    assert!(alpha.contains("Read") && alpha.contains("README.md"), "{alpha}");
    assert!(alpha.contains("alpha read the readme"), "{alpha}");
    let beta = browser.text(&browser.wait_for(&branch("c1", 1)).await).await;
    assert!(beta.starts_with("Branch 1") && beta.contains("running"), "{beta}");
    browser.screenshot("parallel").await;

    // Cancel the Parallel node: the running branch stops, the finished one keeps its
    // answer, and the run goes on to its own.
    browser
        .click(
            &browser
                .wait_for("[data-testid=tool-card][data-call=c1] .tree li.parallel > .child-head button")
                .await,
        )
        .await;
    browser
        .wait_until(
            "the answer after the call",
            &answer_shown("Both branches are back."),
        )
        .await;
    browser.wait_until("the run's end", RUN_ENDED).await;
    let beta = browser.text(&browser.wait_for(&branch("c1", 1)).await).await;
    assert!(beta.contains("cancel"), "{beta}");
    let result = browser
        .text(
            &browser
                .wait_for("[data-testid=tool-card][data-call=c1] .result")
                .await,
        )
        .await;
    assert!(result.contains("=== branch-0 [OK] ==="), "{result}");
    assert!(result.contains("=== branch-1 [FAILED] ==="), "{result}");
    let errors = browser.console_errors().await;
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    browser.quit().await;
    server.stop().await;
}

/// Creates a session in the page, prompts it and waits for the answer; then the
/// process is killed and started again on the same store, and a fresh page lists the
/// session with its title and model and replays its history, prompt included.
async fn a_session_outlives_a_restart(test: &str, store: &[&str], envs: &[(&str, &str)]) {
    let scratch = Scratch::new();
    let script = json!({"turns": [{"text": "Hello from the first serve."}]});
    let mut first = ServeProcess::start(&scratch, &script, store, envs).await;
    let browser = Browser::start(DESKTOP.0, DESKTOP.1).await;
    browser.goto(&format!("{}/", first.base)).await;
    browser.click(&browser.wait_for(NEW_SESSION).await).await;
    browser.wait_for("[data-testid=session-item]").await;
    send(&browser, "Greet me please\nand say which serve you are").await;
    browser
        .wait_until("the first answer", &answer_shown("Hello from the first serve."))
        .await;
    browser.wait_until("the run's end", RUN_ENDED).await;
    let id = first.get("/v1/sessions").await.body["sessions"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    first.kill().await;

    let idle = json!({"turns": [{"text": "not asked"}]});
    let second = ServeProcess::start(&scratch, &idle, store, envs).await;
    let listed = second.get("/v1/sessions").await;
    assert_eq!(
        listed.body["sessions"][0]["session_id"],
        id.as_str(),
        "{listed:?}"
    );
    assert_eq!(
        listed.body["sessions"][0]["title"], "Greet me please",
        "{listed:?}"
    );
    assert_eq!(listed.body["sessions"][0]["model"], "mock", "{listed:?}");
    browser.goto(&format!("{}/", second.base)).await;
    let item = browser
        .wait_for("#app:not([hidden]) [data-testid=session-item]")
        .await;
    let text = browser.text(&item).await;
    assert!(
        text.contains("Greet me please") && text.contains("mock"),
        "{text}"
    );
    browser.click(&item).await;
    browser
        .wait_until(
            "the replayed answer",
            &answer_shown("Hello from the first serve."),
        )
        .await;
    let prompts = browser
        .execute(
            "return [...document.querySelectorAll('#transcript .bubble.user')].map((e) => e.textContent);",
            json!([]),
        )
        .await;
    assert_eq!(
        prompts,
        json!(["Greet me please\nand say which serve you are"]),
        "{test}"
    );
    let title = browser.text(&browser.wait_for("#session-title").await).await;
    assert_eq!(title, "Greet me please");
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_outlives_a_restart_of_serve_on_a_store_dir() {
    const TEST: &str = "a_session_outlives_a_restart_of_serve_on_a_store_dir";
    if !browser_installed(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    a_session_outlives_a_restart(TEST, &["--store-dir", &store], &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_outlives_a_restart_of_serve_on_postgresql() {
    const TEST: &str = "a_session_outlives_a_restart_of_serve_on_postgresql";
    if !browser_installed(TEST) {
        return;
    }
    let Some(cluster) = test_peers::PgCluster::shared(TEST) else {
        return;
    };
    let database = cluster.fresh_database("app");
    let url = cluster.url_without_password(&database);
    a_session_outlives_a_restart(
        TEST,
        &["--store-url", &url],
        &[("PGPASSWORD", cluster.password())],
    )
    .await;
}

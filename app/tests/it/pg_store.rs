//! `mecated` on PostgreSQL (`--store-url`), as separate processes on one database:
//! a session created on one replica is listed, loaded and prompted on another; two
//! replicas prompting one session at once give exactly one 409; a replica killed
//! mid-prompt frees the session after the lease TTL; a run goes on through a
//! database restart; an unreachable database is exit 1 naming the host, never the
//! password; a session unloaded by one replica (`--max-live-sessions`) is prompted
//! on the other and loaded back. Every replica takes the password from `PGPASSWORD`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use test_peers::PgCluster;

use crate::support::http::{SseReader, answer};
use crate::support::serve::ServeProcess;
use crate::support::{Scratch, mecated, mecated_command};
use tokio::io::{AsyncBufReadExt as _, BufReader};

const LIMIT: Duration = Duration::from_secs(60);

/// A `mecated serve --store-url` process on `database` of `cluster`, with the mock
/// `script` and extra flags; returned once it listens.
struct Replica;

impl Replica {
    async fn start(
        scratch: &Scratch,
        cluster: &PgCluster,
        database: &str,
        script: &Value,
        extra: &[&str],
    ) -> ServeProcess {
        let url = cluster.url_without_password(database);
        let mut args = vec!["--store-url", url.as_str()];
        args.extend_from_slice(extra);
        ServeProcess::start(scratch, script, &args, &[("PGPASSWORD", cluster.password())]).await
    }
}

/// A database of its own on the binary's shared cluster.
fn database(test: &str) -> Option<(&'static PgCluster, String)> {
    let cluster = PgCluster::shared(test)?;
    let name = cluster.fresh_database("app");
    Some((cluster, name))
}

/// The `seq`s the database holds for `session`, in append order.
fn logged_seqs(cluster: &PgCluster, database: &str, session: &str) -> Vec<u64> {
    let out = cluster.psql(
        database,
        &format!("SELECT seq FROM mecated_events WHERE session_id = '{session}' ORDER BY pos"),
    );
    out.lines().map(|line| line.parse().unwrap()).collect()
}

fn strictly_increasing(seqs: &[u64]) -> bool {
    seqs.windows(2).all(|w| w[0] < w[1])
}

/// Reads a prompt's whole event stream; the last event is `result`.
async fn finished(response: reqwest::Response) -> Vec<(u64, Value)> {
    assert_eq!(response.status(), StatusCode::OK);
    let events = tokio::time::timeout(LIMIT, SseReader::new(response).rest())
        .await
        .expect("the run ended in time");
    assert_eq!(events.last().unwrap().1["type"], "result", "{events:?}");
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_created_on_one_replica_is_listed_loaded_and_prompted_on_another() {
    let Some((cluster, db)) =
        database("a_session_created_on_one_replica_is_listed_loaded_and_prompted_on_another")
    else {
        return;
    };
    let scratch = Scratch::new();
    // Each prompt reads the README and answers (the mock plays the turn after the
    // session's earlier answers, so the two prompts use turns 0-1 and 2-3).
    let read = json!({"id": "r", "name": "Read", "args": {"path": "README.md"}});
    let usage = json!({"input_tokens": 100, "output_tokens": 10});
    let script = json!({"turns": [
        {"text": "reading", "tool_calls": [read]}, {"text": "first answer", "usage": usage},
        {"text": "reading again", "tool_calls": [read]}, {"text": "second answer", "usage": usage},
    ]});
    // The session runs on a model it picked, whose price is known.
    let prices = scratch.write(
        "prices.json",
        r#"{"models": {"other": {"input": 4.0, "output": 20.0}}}"#,
    );
    let prices = prices.display().to_string();
    let extra = ["--models", "other", "--model-prices", prices.as_str()];
    let a = Replica::start(&scratch, cluster, &db, &script, &extra).await;
    let b = Replica::start(&scratch, cluster, &db, &script, &extra).await;

    let id = a.create_with(json!({"model": "other"})).await;
    let listed = b.get("/v1/sessions").await;
    let ids: Vec<&str> = listed.body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id.as_str()], "{listed:?}");
    let summary = b.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(summary.status, StatusCode::OK, "{summary:?}");
    assert_eq!(summary.body["state"], "idle");

    let on_b = finished(b.prompt(&id, "read it").await).await;
    assert_eq!(on_b.last().unwrap().1["stop"], "end_turn", "{on_b:?}");
    assert_eq!(on_b.last().unwrap().1["text"], "first answer");
    let on_a = finished(a.prompt(&id, "again").await).await;
    assert_eq!(
        on_a.last().unwrap().1["text"],
        "second answer",
        "A sees B's turns"
    );
    let summary = b.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(summary.body["turns"], 4, "{summary:?}");
    assert_eq!(summary.body["tool_calls"], 2, "{summary:?}");
    // Its model, usage and cost live with it in the database.
    assert_eq!(summary.body["model"], "other", "{summary:?}");
    assert_eq!(
        summary.body["usage"],
        json!({"input_tokens": 200, "output_tokens": 20}),
        "{summary:?}"
    );
    let cost = (200.0 * 4.0 + 20.0 * 20.0) / 1_000_000.0;
    assert!(
        (summary.body["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-12,
        "{summary:?}"
    );

    // One log of strictly increasing seqs holding exactly both streams; both
    // replicas' audit records landed.
    let seqs = logged_seqs(cluster, &db, &id);
    let streamed: Vec<u64> = on_b.iter().chain(&on_a).map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, streamed);
    assert!(strictly_increasing(&seqs), "{seqs:?}");
    let records = cluster.psql(
        &db,
        &format!("SELECT record->>'tool' FROM mecated_tool_calls WHERE session_id = '{id}' ORDER BY pos"),
    );
    assert_eq!(records, "Read\nRead");
    for replica in [&a, &b] {
        assert!(
            !replica.stderr().contains(cluster.password()),
            "the password never shows"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_prompts_on_two_replicas_get_exactly_one_409() {
    let Some((cluster, db)) = database("concurrent_prompts_on_two_replicas_get_exactly_one_409") else {
        return;
    };
    let scratch = Scratch::new();
    let script = json!({"turns": [{"delay_ms": 1500, "text": "slow answer"}]});
    let a = Replica::start(&scratch, cluster, &db, &script, &[]).await;
    let b = Replica::start(&scratch, cluster, &db, &script, &[]).await;
    let id = a.create().await;

    let (on_a, on_b) = tokio::join!(a.prompt(&id, "go"), b.prompt(&id, "go"));
    let mut statuses = [on_a.status(), on_b.status()];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::CONFLICT]);
    let (winner, loser) = if on_a.status() == StatusCode::OK {
        (on_a, on_b)
    } else {
        (on_b, on_a)
    };
    let refused = answer(loser).await;
    assert_eq!(
        refused.error(),
        format!("session {id:?} already has a run in progress")
    );
    let events = finished(winner).await;
    assert_eq!(events.last().unwrap().1["stop"], "end_turn");
    assert_eq!(
        logged_seqs(cluster, &db, &id),
        events.iter().map(|(s, _)| *s).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_prompt_frees_the_session_after_the_lease_ttl() {
    let Some((cluster, db)) = database("a_replica_killed_mid_prompt_frees_the_session_after_the_lease_ttl")
    else {
        return;
    };
    let scratch = Scratch::new();
    let hang = json!({"turns": [{"text": "thinking"}, {"delay_ms": 30000, "text": "never"}]});
    let quick = json!({"turns": [{"text": "first"}, {"text": "after the crash"}]});
    let ttl = ["--store-lease-ttl", "2"];
    let mut a = Replica::start(&scratch, cluster, &db, &hang, &ttl).await;
    let b = Replica::start(&scratch, cluster, &db, &quick, &ttl).await;
    let id = a.create().await;
    let first = finished(a.prompt(&id, "one").await).await;
    assert_eq!(first.last().unwrap().1["text"], "thinking");

    // A holds the session inside its slow turn (its client stays connected: leaving
    // would cancel the run), then dies without a word.
    let mut stream = SseReader::new(a.prompt(&id, "two").await);
    stream.until("turn.start").await;
    let busy = answer(b.prompt(&id, "too early").await).await;
    assert_eq!(busy.status, StatusCode::CONFLICT, "{busy:?}");
    a.kill().await;
    let killed = Instant::now();
    drop(stream);

    let events = loop {
        let response = b.prompt(&id, "after").await;
        if response.status() == StatusCode::OK {
            break finished(response).await;
        }
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "the lease never expired"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "{:?}",
        killed.elapsed()
    );
    assert_eq!(events.last().unwrap().1["stop"], "end_turn", "{events:?}");
    // B numbers after everything A logged, its crashed run included.
    let seqs = logged_seqs(cluster, &db, &id);
    assert!(strictly_increasing(&seqs), "{seqs:?}");
    assert_eq!(seqs.last(), events.last().map(|(seq, _)| seq));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_goes_on_through_a_database_restart() {
    let Some(mut cluster) = PgCluster::start("a_run_goes_on_through_a_database_restart") else {
        return;
    };
    let scratch = Scratch::new();
    let script = json!({"turns": [
        {"text": "reading", "tool_calls": [{"id": "r", "name": "Read", "args": {"path": "README.md"}}]},
        {"delay_ms": 2000, "text": "done after the restart"},
    ]});
    let script = scratch.write("restart.json", &script.to_string());
    let mut command = mecated_command(scratch.dir.path());
    command
        .args([
            "run",
            "--workspace",
            &scratch.ws().display().to_string(),
            "--toolhive=false",
        ])
        .args([
            "--mock-script",
            &script.display().to_string(),
            "--audit",
            "required",
        ])
        .args(["--store-url", &cluster.url_without_password("postgres")])
        .args(["--session", "through-a-restart", "--output", "jsonl", "read it"])
        .env("PGPASSWORD", cluster.password())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    // Restart the database while the model "thinks" after the tool result.
    tokio::time::timeout(LIMIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let event: Value = serde_json::from_str(&line).unwrap();
            let done = event["type"] == "tool.result";
            printed.push(event);
            if done {
                return;
            }
        }
        panic!("the run ended before its tool result: {printed:?}");
    })
    .await
    .unwrap();
    tokio::task::block_in_place(|| cluster.restart());
    while let Some(line) = lines.next_line().await.unwrap() {
        printed.push(serde_json::from_str(&line).unwrap());
    }
    let output = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let last = printed.last().unwrap();
    assert_eq!(last["stop"], "end_turn", "{printed:?}");
    let seqs: Vec<u64> = printed.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        logged_seqs(&cluster, "postgres", "through-a-restart"),
        seqs,
        "every event landed once"
    );
}

/// The store's time limit for one operation (`PgStoreOptions::timeout`, 10 s, plus the
/// client's 1 s grace): a database that stays away longer fails the run.
const STORE_LIMIT: Duration = Duration::from_secs(11);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_ends_the_run_and_the_process_within_one_store_time_limit() {
    let Some(mut cluster) = PgCluster::start("a_database_outage_ends_the_run") else {
        return;
    };
    let scratch = Scratch::new();
    let script = json!({"turns": [
        {"text": "reading", "tool_calls": [{"id": "r", "name": "Read", "args": {"path": "README.md"}}]},
        {"delay_ms": 200, "text": "an answer nobody can store"},
    ]});
    let script = scratch.write("outage.json", &script.to_string());
    let mut command = mecated_command(scratch.dir.path());
    command
        .args([
            "run",
            "--workspace",
            &scratch.ws().display().to_string(),
            "--toolhive=false",
        ])
        .args(["--mock-script", &script.display().to_string()])
        .args(["--store-url", &cluster.url_without_password("postgres")])
        .args(["--session", "through-an-outage", "--output", "jsonl", "read it"])
        .env("PGPASSWORD", cluster.password())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(LIMIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "tool.result" {
                return;
            }
        }
        panic!("the run ended before its tool result");
    })
    .await
    .unwrap();
    // The database goes away for good while the model answers.
    tokio::task::block_in_place(|| cluster.kill());
    let gone = Instant::now();
    let mut printed = Vec::new();
    let output = tokio::time::timeout(LIMIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            printed.push((gone.elapsed(), line));
        }
        child.wait_with_output().await.unwrap()
    })
    .await
    .expect("the process exits during an outage");
    let exited = gone.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("127.0.0.1:{}", cluster.port())),
        "names the server: {stderr}"
    );
    // One store time limit for the operation that meets the outage, then the rest of the
    // shutdown (final save, lease release) fails fast instead of waiting its own limit.
    assert!(
        exited < STORE_LIMIT + Duration::from_secs(4),
        "exited {exited:?} after the database went away; printed {printed:?}; {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_exit_1_naming_the_host_without_the_password() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let port = test_peers::free_port();
    for (url, env) in [
        (format!("postgres://mecated:hunter2@127.0.0.1:{port}/app"), vec![]),
        (
            format!("postgres://mecated@127.0.0.1:{port}/app"),
            vec![("PGPASSWORD", "hunter2")],
        ),
    ] {
        for sub in ["run", "serve"] {
            let mut args = vec![
                sub,
                "--workspace",
                &ws,
                "--toolhive=false",
                "--mock",
                "--store-url",
                &url,
            ];
            if sub == "run" {
                args.push("hello");
            } else {
                args.extend(["--http-addr", "127.0.0.1:0"]);
            }
            let output = mecated(scratch.dir.path(), &args, env.as_slice()).await;
            assert_eq!(output.code, 1, "{sub}: {output:?}");
            let expected = format!(
                "error: the store at postgres://mecated@127.0.0.1:{port}/app (--store-url) cannot be opened: \
                 PostgreSQL at 127.0.0.1:{port}/app: cannot connect"
            );
            assert!(output.stderr.contains(&expected), "{sub}: {}", output.stderr);
            assert!(!output.stderr.contains("hunter2"), "{sub}: {}", output.stderr);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_flags_are_checked_before_anything_connects() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let both = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            &ws,
            "--mock",
            "--store-dir",
            "s",
            "--store-url",
            "postgres://u:hunter2@h/db",
            "hi",
        ],
        &[],
    )
    .await;
    assert_eq!(both.code, 2, "{both:?}");
    assert!(
        both.stderr
            .contains("'--store-dir <DIR>' cannot be used with '--store-url <URL>'"),
        "{both:?}"
    );
    assert!(!both.stderr.contains("hunter2"));
    let bad = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            &ws,
            "--mock",
            "--store-url",
            "postgres://u:hunter2@h/db?sslmode=strict",
            "hi",
        ],
        &[],
    )
    .await;
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains(
            "invalid value 'postgres://***@h/db?…' for '--store-url': sslmode=\"strict\" is not one of disable, allow, prefer, require, verify-ca, verify-full"
        ),
        "{bad:?}"
    );
    assert!(!bad.stderr.contains("hunter2"));
    let ttl_alone = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            &ws,
            "--mock",
            "--store-lease-ttl",
            "5",
            "hi",
        ],
        &[],
    )
    .await;
    assert_eq!(ttl_alone.code, 2, "{ttl_alone:?}");
    assert!(ttl_alone.stderr.contains("--store-url"), "{ttl_alone:?}");
}

/// How many rows `session` has in `mecated_events`, and how many statements wrote them
/// (one write id each).
fn rows_and_statements(cluster: &PgCluster, database: &str, session: &str) -> (u64, u64) {
    let out = cluster.psql(
        database,
        &format!("SELECT count(*) || ' ' || count(DISTINCT write_id) FROM mecated_events WHERE session_id = '{session}'"),
    );
    let (rows, statements) = out.trim().split_once(' ').unwrap();
    (rows.parse().unwrap(), statements.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_group_commits_its_events_unless_store_sync_is_always() {
    let Some((cluster, db)) = database("a_run_group_commits_its_events_unless_store_sync_is_always") else {
        return;
    };
    let scratch = Scratch::new();
    let script = json!({"turns": [
        {"text": "reading", "tool_calls": [
            {"id": "a", "name": "Read", "args": {"path": "README.md"}},
            {"id": "b", "name": "Read", "args": {"path": "README.md"}},
            {"id": "c", "name": "Read", "args": {"path": "README.md"}}
        ]},
        {"text": "done reading the same file three times"},
    ]});
    let script = scratch.write("grouped.json", &script.to_string());
    for (session, sync) in [("grouped", "batched"), ("one-by-one", "always")] {
        let workspace = scratch.ws().display().to_string();
        let script = script.display().to_string();
        let url = cluster.url_without_password(&db);
        let args = [
            "run",
            "--workspace",
            &workspace,
            "--toolhive=false",
            "--mock-script",
            &script,
            "--audit",
            "required",
            "--store-sync",
            sync,
            "--store-url",
            &url,
            "--session",
            session,
            "--output",
            "jsonl",
            "read it",
        ];
        let output = mecated(scratch.dir.path(), &args, &[("PGPASSWORD", cluster.password())]).await;
        assert_eq!(output.code, 0, "{}", output.stderr);
        let printed = output.stdout.lines().count() as u64;
        let seqs = logged_seqs(cluster, &db, session);
        assert!(strictly_increasing(&seqs), "{seqs:?}");
        let (rows, statements) = rows_and_statements(cluster, &db, session);
        assert_eq!(rows, printed, "every printed event landed once ({sync})");
        if sync == "always" {
            assert_eq!(statements, rows, "each event committed on its own");
        } else {
            assert!(statements < rows, "{rows} events in {statements} statements");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_unloaded_by_one_replica_is_prompted_on_the_other_and_loaded_back() {
    let Some((cluster, db)) =
        database("a_session_unloaded_by_one_replica_is_prompted_on_the_other_and_loaded_back")
    else {
        return;
    };
    let scratch = Scratch::new();
    // Each prompt plays the session's next turn.
    let script = json!({"turns": [{"text": "one"}, {"text": "two"}, {"text": "three"}]});
    let cap = ["--max-live-sessions", "1"];
    let a = Replica::start(&scratch, cluster, &db, &script, &cap).await;
    let b = Replica::start(&scratch, cluster, &db, &script, &cap).await;

    let id = a.create().await;
    let first = finished(a.prompt(&id, "first").await).await;
    assert_eq!(first.last().unwrap().1["text"], "one");
    // A second session on A unloads the first there (one live session at most).
    let other = a.create().await;
    let second = finished(b.prompt(&id, "second").await).await;
    assert_eq!(
        second.last().unwrap().1["text"],
        "two",
        "B loads it from the database"
    );
    let third = finished(a.prompt(&id, "third").await).await;
    assert_eq!(
        third.last().unwrap().1["text"],
        "three",
        "A loads it back with B's turn"
    );
    let on_other = finished(a.prompt(&other, "hello").await).await;
    assert_eq!(on_other.last().unwrap().1["text"], "one");

    let summary = b.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(summary.body["turns"], 3, "{summary:?}");
    let seqs = logged_seqs(cluster, &db, &id);
    let streamed: Vec<u64> = first
        .iter()
        .chain(&second)
        .chain(&third)
        .map(|(seq, _)| *seq)
        .collect();
    assert_eq!(seqs, streamed);
    assert!(strictly_increasing(&seqs), "{seqs:?}");
}

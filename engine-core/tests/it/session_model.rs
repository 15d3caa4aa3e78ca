//! A model per session: a session's chosen model is sent with every request of its
//! runs from the next run on (its context window and output limits follow it), is
//! kept in the snapshot, and its usage is counted per model.

use engine_core::{context_window_for, output_limits_for};
use engine_ports::testkit::ScriptedTurn;
use engine_ports::{EventKind, SessionId, Usage};

use crate::support::{catalog_of, config, harness, run_to_end};

fn init_model(events: &[engine_ports::Event]) -> String {
    events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::SessionInit { model, .. } => Some(model.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_sessions_chosen_model_is_sent_from_its_next_run_on_and_its_usage_counted_per_model() {
    let h = harness(
        catalog_of(Vec::new()),
        vec![
            ScriptedTurn::text("one").with_usage(100, 10),
            ScriptedTurn::text("two").with_usage(200, 20),
            ScriptedTurn::text("three").with_usage(300, 30),
        ],
        config(),
    );
    let session = SessionId::from("s");
    let events = run_to_end(&h.engine, "s", "first").await;
    assert_eq!(init_model(&events), "scripted");

    h.engine
        .set_model(&session, Some("gpt-4o-mini".to_owned()))
        .await
        .unwrap();
    assert_eq!(h.engine.session_model(&session).await.unwrap(), "gpt-4o-mini");
    let events = run_to_end(&h.engine, "s", "second").await;
    assert_eq!(init_model(&events), "gpt-4o-mini");
    // Another session still runs on the engine's model.
    run_to_end(&h.engine, "other", "hello").await;

    let requests = h.llm.requests();
    let models: Vec<&str> = requests.iter().map(|r| r.model.as_str()).collect();
    assert_eq!(models, ["scripted", "gpt-4o-mini", "scripted"]);
    // The output limit sent is the session model's.
    assert_eq!(
        requests[1].max_tokens,
        Some(output_limits_for("gpt-4o-mini").default)
    );
    assert_eq!(
        h.engine.context_window_of("gpt-4.1"),
        context_window_for("gpt-4.1")
    );

    let snapshot = h.engine.store().load(&session).await.unwrap();
    assert_eq!(snapshot.model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(snapshot.usage, Usage::new(300, 30));
    assert_eq!(snapshot.model_usage["scripted"], Usage::new(100, 10));
    assert_eq!(snapshot.model_usage["gpt-4o-mini"], Usage::new(200, 20));

    // Back to the engine's model.
    h.engine.set_model(&session, None).await.unwrap();
    assert_eq!(h.engine.session_model(&session).await.unwrap(), "scripted");
}

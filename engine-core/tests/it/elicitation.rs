//! A tool asking the user during a call: the question reaches the host as
//! `elicitation.request`, the host's answer (checked against the form) comes back to
//! the tool, and every answer the harness gives without the user — a headless run,
//! no answer in time, a question over the limits, a cancelled run — is a decline or
//! cancel with a reason that the call's result carries.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine_core::{
    AskRegistry, Dispatcher, ElicitationAnswerError, ElicitationRequest, ElicitationResponse, Environment,
    MAX_ELICITATION_MESSAGE_BYTES, MAX_ELICITATIONS_PER_CALL, Tool, ToolError,
};
use engine_ports::{
    ElicitationAction, Event, EventKind, PermissionMode, SessionId, ToolCall, ToolResult, ToolSpec,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{catalog_of, context, kinds};

/// Asks `times` questions (`message`, the name form) and answers with what it got.
struct Asking {
    message: String,
    times: usize,
}

fn name_form() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
}

#[async_trait]
impl Tool for Asking {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("Ask", "Asks the user.")
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let elicitor = env.elicitor().expect("every dispatched call has an elicitor");
        let mut answers = Vec::new();
        for _ in 0..self.times {
            let response = elicitor
                .elicit(
                    ElicitationRequest {
                        message: self.message.clone(),
                        requested_schema: name_form(),
                    },
                    cancel,
                )
                .await;
            let content = response.content.map(Value::Object).unwrap_or(Value::Null);
            answers.push(format!("{}:{content}", response.action.as_str()));
        }
        Ok(ToolResult::text(call.id().clone(), answers.join(" ")))
    }
}

fn asking(message: &str, times: usize) -> Arc<dyn Tool> {
    Arc::new(Asking {
        message: message.to_owned(),
        times,
    })
}

fn elicitation_results(events: &[Event]) -> Vec<(ElicitationAction, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ElicitationResult { action, reason, .. } => Some((*action, reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_headless_run_declines_with_a_clear_text_the_model_sees() {
    let (ctx, sink) = context(catalog_of(vec![asking("Your name?", 1)]), PermissionMode::Default);
    let outcome = Dispatcher::default()
        .dispatch(&ctx, &[ToolCall::new("c1", "Ask", "{}")])
        .await;
    let text = outcome.results[0].content();
    assert!(text.starts_with("decline:null\n[the server's question was declined: this run is headless (mecated run): nobody can answer"), "{text}");
    let events = sink.events(&SessionId::from("s1"));
    let order = kinds(&events);
    assert_eq!(
        order,
        [
            "tool.call",
            "elicitation.request",
            "elicitation.result",
            "tool.result"
        ]
    );
    let request = events.iter().find_map(|e| match &e.kind {
        EventKind::ElicitationRequest {
            elicitation_id,
            call_id,
            name,
            message,
            requested_schema,
        } => Some((
            elicitation_id.clone(),
            call_id.to_string(),
            name.clone(),
            message.clone(),
            requested_schema.clone(),
        )),
        _ => None,
    });
    assert_eq!(
        request,
        Some((
            "elicit-1-1-1".into(),
            "c1".into(),
            "Ask".into(),
            "Your name?".into(),
            name_form()
        ))
    );
    let results = elicitation_results(&events);
    assert_eq!(results[0].0, ElicitationAction::Decline);
    assert!(results[0].1.as_deref().unwrap().contains("headless"));
}

#[tokio::test]
async fn an_interactive_answer_reaches_the_tool_after_its_content_fits_the_form() {
    let (mut ctx, sink) = context(catalog_of(vec![asking("Your name?", 1)]), PermissionMode::Default);
    let asks = Arc::new(AskRegistry::new());
    ctx.asks = Some(Arc::clone(&asks));
    let answerer = {
        let asks = Arc::clone(&asks);
        async move {
            loop {
                if let Some(id) = asks.open_elicitation_ids().first().cloned() {
                    let wrong = asks.answer_elicitation(
                        &id,
                        ElicitationResponse::accept(json!({"name": 7}).as_object().unwrap().clone()),
                    );
                    assert_eq!(
                        wrong,
                        Err(ElicitationAnswerError::InvalidContent(
                            "content.name: expected a string, got 7".into()
                        ))
                    );
                    let right = asks.answer_elicitation(
                        &id,
                        ElicitationResponse::accept(json!({"name": "Ada"}).as_object().unwrap().clone()),
                    );
                    assert_eq!(right, Ok(()));
                    assert_eq!(
                        asks.answer_elicitation(&id, ElicitationResponse::decline()),
                        Err(ElicitationAnswerError::NotOpen(id.clone()))
                    );
                    return;
                }
                tokio::task::yield_now().await;
            }
        }
    };
    let dispatcher = Dispatcher::default();
    let calls = [ToolCall::new("c1", "Ask", "{}")];
    let (outcome, ()) = tokio::join!(dispatcher.dispatch(&ctx, &calls), answerer);
    assert_eq!(outcome.results[0].content(), r#"accept:{"name":"Ada"}"#);
    let results = elicitation_results(&sink.events(&SessionId::from("s1")));
    assert_eq!(results, [(ElicitationAction::Accept, None)]);
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_question_is_declined_after_the_timeout() {
    let (mut ctx, _sink) = context(catalog_of(vec![asking("Your name?", 1)]), PermissionMode::Default);
    ctx.asks = Some(Arc::new(AskRegistry::new()));
    let dispatcher = Dispatcher::new(engine_core::DispatchConfig {
        elicitation_timeout: Duration::from_secs(30),
        ..engine_core::DispatchConfig::default()
    });
    let outcome = dispatcher
        .dispatch(&ctx, &[ToolCall::new("c1", "Ask", "{}")])
        .await;
    assert_eq!(
        outcome.results[0].content(),
        "decline:null\n[the server's question was declined: nobody answered within 30 s]"
    );
}

#[tokio::test]
async fn questions_over_the_limits_are_declined_without_being_shown() {
    let long = "x".repeat(MAX_ELICITATION_MESSAGE_BYTES + 1);
    let (mut ctx, sink) = context(catalog_of(vec![asking(&long, 1)]), PermissionMode::Default);
    ctx.asks = Some(Arc::new(AskRegistry::new()));
    let outcome = Dispatcher::default()
        .dispatch(&ctx, &[ToolCall::new("c1", "Ask", "{}")])
        .await;
    assert!(
        outcome.results[0]
            .content()
            .contains("it was not shown to the user: its question is 4097 bytes, over the 4096-byte limit"),
        "{:?}",
        outcome.results[0]
    );
    let events = sink.events(&SessionId::from("s1"));
    assert!(!kinds(&events).contains(&"elicitation.request"), "never shown");

    // More questions than a call may ask: the ones past the limit are declined (here
    // headless, so all are, but only the late ones for the limit).
    let (ctx, _sink) = context(
        catalog_of(vec![asking("Again?", MAX_ELICITATIONS_PER_CALL + 1)]),
        PermissionMode::Default,
    );
    let outcome = Dispatcher::default()
        .dispatch(&ctx, &[ToolCall::new("c1", "Ask", "{}")])
        .await;
    let text = outcome.results[0].content();
    assert!(
        text.contains(&format!(
            "the server asked more than {MAX_ELICITATIONS_PER_CALL} questions during one call"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn cancelling_the_turn_cancels_a_waiting_question() {
    let (mut ctx, sink) = context(catalog_of(vec![asking("Your name?", 1)]), PermissionMode::Default);
    let asks = Arc::new(AskRegistry::new());
    ctx.asks = Some(Arc::clone(&asks));
    let cancel = ctx.cancel.clone();
    let canceller = async move {
        while asks.open_elicitation_ids().is_empty() {
            tokio::task::yield_now().await;
        }
        cancel.cancel();
    };
    let dispatcher = Dispatcher::default();
    let calls = [ToolCall::new("c1", "Ask", "{}")];
    let (outcome, ()) = tokio::join!(dispatcher.dispatch(&ctx, &calls), canceller);
    assert!(outcome.cancelled);
    let results = elicitation_results(&sink.events(&SessionId::from("s1")));
    assert_eq!(
        results,
        [(
            ElicitationAction::Cancel,
            Some("the run was cancelled".to_owned())
        )]
    );
}

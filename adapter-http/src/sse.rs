//! The prompt's event stream: a task drains the run and forwards each D11 event to
//! the SSE body (`id: <seq>`, `data: <event JSON>`); the client leaving cancels the
//! run, whose remaining events are still drained so its bookkeeping completes.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::HeaderValue;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse as _, Response};
use engine_core::Run;
use engine_ports::{Event, EventKind};
use futures::StreamExt as _;
use tokio::sync::mpsc;

/// Events buffered between the run and a slow client (the run then waits).
const BUFFER: usize = 64;

/// A channel for one run's events: the forwarder's end and the SSE response.
pub(crate) fn channel(keep_alive: Duration) -> (mpsc::Sender<Event>, Response) {
    let (tx, rx) = mpsc::channel::<Event>(BUFFER);
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        Some((Ok::<_, Infallible>(sse_event(&event)), rx))
    });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response();
    // Tell buffering proxies to pass the stream through as it comes.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    (tx, response)
}

fn sse_event(event: &Event) -> SseEvent {
    let data = serde_json::to_string(event).unwrap_or_else(|error| {
        tracing::warn!(seq = event.seq, %error, "an event did not serialize");
        serde_json::json!({"seq": event.seq, "type": event.kind.type_name()}).to_string()
    });
    SseEvent::default().id(event.seq.to_string()).data(data)
}

/// Forwards `run`'s events to `client` until `result`. When the client goes away
/// (its receiver dropped), the run is cancelled and drained without forwarding.
pub(crate) async fn forward(mut run: Run, client: mpsc::Sender<Event>) {
    let session = run.session_id().clone();
    let mut client = Some(client);
    loop {
        let next = match &client {
            Some(tx) => tokio::select! {
                event = run.next() => Some(event),
                () = tx.closed() => None,
            },
            None => Some(run.next().await),
        };
        let Some(event) = next else {
            tracing::info!(session_id = %session, "the SSE client went away: cancelling the run");
            run.cancel();
            client = None;
            continue;
        };
        let Some(event) = event else { break };
        let last = matches!(event.kind, EventKind::Result { .. });
        if let Some(tx) = &client
            && tx.send(event).await.is_err()
        {
            tracing::info!(session_id = %session, "the SSE client went away: cancelling the run");
            run.cancel();
            client = None;
        }
        if last {
            break;
        }
    }
}

//! One turn's calls, from the model's calls to their results: ids normalized,
//! `tool.call` for every call, every call resolved in the mode view, then segment
//! by segment (a batch of reads, or one call alone) each call through the gate in
//! call order, the ones it let through started, and every call finished in call
//! order; what the turn's `ToolSearch` results hydrate is collected on the way.

use std::sync::Arc;

use engine_ports::{EventKind, ToolCall, ToolResult};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::call_ids::normalized;
use super::execution::Batch;
use super::finish::{complete, launch};
use super::gate::{self, ParsedCall, Target};
use super::segments::segments;
use super::{DispatchConfig, TurnContext, TurnOutcome, cancelled_result};
use crate::disclosure::TurnHydration;

pub(super) async fn run_turn(config: DispatchConfig, ctx: &TurnContext, calls: &[ToolCall]) -> TurnOutcome {
    let calls = normalized(calls, ctx.turn);
    let calls = &*calls;
    let parsed: Vec<ParsedCall<'_>> = calls.iter().map(ParsedCall::new).collect();
    let enqueue = ctx.clock.as_ref().map(|clock| clock.now());
    if ctx.events.is_active() {
        for call in &parsed {
            ctx.events
                .emit(EventKind::ToolCall {
                    call_id: call.call().id().clone(),
                    name: call.call().name().to_owned(),
                    args: call.value(),
                })
                .await;
        }
    }

    let targets = gate::resolve_all(ctx, calls);
    let batchable: Vec<bool> = targets.iter().map(Target::batchable).collect();

    let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
    let mut hydration = TurnHydration::default();
    let mut grace_deadline: Option<Instant> = None;
    // One batch and one set of slots for the whole turn: a segment starts once the
    // one before it has finished every call (an aborted call only after the turn was
    // cancelled, when no later call starts), so they are free again.
    let slots = Arc::new(Semaphore::new(config.max_parallel_reads.get()));
    let batch = Batch::new(calls.len());

    // Emptied by every segment, so the turn allocates them once.
    let mut decisions = Vec::with_capacity(calls.len());
    let mut running = Vec::with_capacity(calls.len());

    for segment in segments(&batchable) {
        for index in segment.clone() {
            decisions.push(gate::decide(ctx, index, &parsed[index], &targets[index]).await);
        }

        // The segment's calls run together on this task (see `execution`); each is
        // finished in call order while the later ones go on.
        running.extend(
            decisions.drain(..).zip(segment.clone()).map(|(decision, index)| {
                launch(ctx, config, &batch, &slots, decision, &parsed[index], index)
            }),
        );

        for (run, index) in running.drain(..).zip(segment) {
            let completing = std::pin::pin!(complete(
                ctx,
                config,
                &mut grace_deadline,
                enqueue,
                &parsed[index],
                run
            ));
            let result = batch.alongside(completing).await;
            if targets[index].is_search() {
                hydration.add_search_result(&ctx.catalog, &result);
            }
            results[index] = Some(result);
        }
    }

    let results = results
        .into_iter()
        .zip(calls)
        .map(|(result, call)| result.unwrap_or_else(|| cancelled_result(call)))
        .collect();
    TurnOutcome {
        results,
        hydrated: hydration.into_names(),
        cancelled: ctx.cancel.is_cancelled(),
    }
}

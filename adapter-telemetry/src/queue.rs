//! [`QueueProcessor`]: the bounded queue between ended spans and the exporter.
//!
//! A span ends inline in the run's task; [`QueueProcessor::on_end`] only tries to
//! put it in a bounded channel and, when the channel is full, drops it and counts it
//! (the first drop is logged at WARN). One tokio task takes batches from the channel
//! and exports each under a time limit, so an exporter that is slow or never answers
//! costs the run nothing: the queue fills, later spans are dropped and counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Spans waiting for export at most (past it, spans are dropped and counted).
pub const QUEUE_CAPACITY: usize = 2048;
/// Spans per export request at most.
const MAX_BATCH: usize = 512;
/// How long the first span of a batch waits for more before the batch goes out.
const BATCH_DELAY: Duration = Duration::from_millis(500);

/// Spans that never reached the receiver, by reason; shared with the metrics.
#[derive(Debug, Default)]
pub(crate) struct DropCounter {
    queue_full: AtomicU64,
    export_failed: AtomicU64,
    warned_full: AtomicBool,
    warned_failed: AtomicBool,
}

impl DropCounter {
    fn note_full(&self) {
        self.queue_full.fetch_add(1, Ordering::Relaxed);
        if !self.warned_full.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                capacity = QUEUE_CAPACITY,
                "the span export queue is full: spans are dropped (counted in mecatl.telemetry.dropped_spans)"
            );
        }
    }

    fn note_failed(&self, spans: usize, error: &str) {
        self.export_failed.fetch_add(spans as u64, Ordering::Relaxed);
        if !self.warned_failed.swap(true, Ordering::Relaxed) {
            tracing::warn!(spans, %error, "exporting spans failed: they are dropped (counted in mecatl.telemetry.dropped_spans)");
        } else {
            tracing::debug!(spans, %error, "exporting spans failed");
        }
    }

    /// Spans dropped because the queue was full.
    pub(crate) fn queue_full(&self) -> u64 {
        self.queue_full.load(Ordering::Relaxed)
    }

    /// Spans whose export failed or timed out.
    pub(crate) fn export_failed(&self) -> u64 {
        self.export_failed.load(Ordering::Relaxed)
    }
}

/// The span processor: a bounded, non-blocking hand-off to the export task.
#[derive(Debug)]
pub(crate) struct QueueProcessor {
    spans: mpsc::Sender<SpanData>,
    drops: Arc<DropCounter>,
}

/// The handle that flushes the export task and stops it.
#[derive(Debug)]
pub(crate) struct ExportTask {
    flush: mpsc::Sender<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl QueueProcessor {
    /// The processor and its export task (spawned on the current tokio runtime),
    /// each export bounded by `timeout`.
    pub(crate) fn start<E>(exporter: E, timeout: Duration, drops: Arc<DropCounter>) -> (Self, ExportTask)
    where
        E: SpanExporter + 'static,
    {
        let (spans, rx) = mpsc::channel(QUEUE_CAPACITY);
        let (flush, flush_rx) = mpsc::channel(4);
        let task = tokio::spawn(export_loop(exporter, rx, flush_rx, timeout, Arc::clone(&drops)));
        (Self { spans, drops }, ExportTask { flush, task })
    }
}

impl SpanProcessor for QueueProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        match self.spans.try_send(span) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.drops.note_full(),
            // After shutdown nothing is exported any more.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

impl ExportTask {
    /// Exports every span queued so far, waiting at most `timeout`; then stops the
    /// task. Spans still queued after the time limit are lost.
    pub(crate) async fn shutdown(self, timeout: Duration) -> bool {
        let (ack, done) = oneshot::channel();
        let flushed = self.flush.send(ack).await.is_ok()
            && tokio::time::timeout(timeout, done)
                .await
                .is_ok_and(|answer| answer.is_ok());
        self.task.abort();
        flushed
    }
}

async fn export_loop<E: SpanExporter>(
    exporter: E,
    mut spans: mpsc::Receiver<SpanData>,
    mut flushes: mpsc::Receiver<oneshot::Sender<()>>,
    timeout: Duration,
    drops: Arc<DropCounter>,
) {
    loop {
        let mut batch = Vec::new();
        let mut flush = None;
        tokio::select! {
            span = spans.recv() => match span {
                Some(span) => batch.push(span),
                None => return,
            },
            ack = flushes.recv() => match ack {
                Some(ack) => flush = Some(ack),
                None => return,
            },
        }
        if flush.is_none() {
            let deadline = Instant::now() + BATCH_DELAY;
            while batch.len() < MAX_BATCH {
                tokio::select! {
                    span = spans.recv() => match span {
                        Some(span) => batch.push(span),
                        None => break,
                    },
                    ack = flushes.recv() => {
                        flush = ack;
                        break;
                    }
                    () = tokio::time::sleep_until(deadline) => break,
                }
            }
        }
        if flush.is_some() {
            while let Ok(span) = spans.try_recv() {
                batch.push(span);
            }
        }
        while !batch.is_empty() {
            let rest = batch.split_off(batch.len().min(MAX_BATCH));
            let count = batch.len();
            match tokio::time::timeout(timeout, exporter.export(batch)).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => drops.note_failed(count, &error.to_string()),
                Err(_) => drops.note_failed(count, &format!("no answer within {timeout:?}")),
            }
            batch = rest;
        }
        if let Some(ack) = flush {
            let _ = ack.send(());
        }
    }
}

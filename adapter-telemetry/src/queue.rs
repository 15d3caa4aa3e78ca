//! [`QueueProcessor`]: the bounded queue between ended spans and the exporter.
//!
//! A span ends inline in the run's task; [`QueueProcessor::on_end`] only tries to
//! put it in a bounded channel and, when the channel is full, drops it and counts it
//! (the first drop is logged at WARN). One tokio task takes batches from the channel
//! and exports each under a time limit, so an exporter that is slow or never answers
//! costs the run nothing: the queue fills, later spans are dropped and counted.
//!
//! The task wakes once per batch, not once per span: the first span of a batch wakes
//! it, then it sleeps until the batch's delay is over or a full batch is waiting
//! (the span that fills it notifies), and takes what is queued. A run ends several
//! spans within microseconds; a wake-up per span would move the export task to the
//! other core and back for each one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use tokio::sync::{Notify, mpsc, oneshot};
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
    /// Facts the inbox had no room for (see [`crate::facts::Inbox`]).
    facts: AtomicU64,
    warned_facts: AtomicBool,
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

    pub(crate) fn note_fact_dropped(&self) {
        self.facts.fetch_add(1, Ordering::Relaxed);
        if !self.warned_facts.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                capacity = crate::facts::INBOX_CAPACITY,
                "the telemetry is behind: observations are dropped (counted in mecatl.telemetry.dropped_facts)"
            );
        }
    }

    /// Facts dropped because the inbox was full.
    pub(crate) fn facts(&self) -> u64 {
        self.facts.load(Ordering::Relaxed)
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
    /// Told when a full batch is waiting.
    batch_full: Arc<Notify>,
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
        let batch_full = Arc::new(Notify::new());
        let queue = Queue {
            spans: rx,
            batch_full: Arc::clone(&batch_full),
            flushes: flush_rx,
        };
        let task = tokio::spawn(export_loop(exporter, queue, timeout, Arc::clone(&drops)));
        (
            Self {
                spans,
                batch_full,
                drops,
            },
            ExportTask { flush, task },
        )
    }
}

impl SpanProcessor for QueueProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        match self.spans.try_send(span) {
            Ok(()) => {
                if QUEUE_CAPACITY - self.spans.capacity() >= MAX_BATCH {
                    self.batch_full.notify_one();
                }
            }
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

/// The export task's ends of the queue.
struct Queue {
    spans: mpsc::Receiver<SpanData>,
    batch_full: Arc<Notify>,
    flushes: mpsc::Receiver<oneshot::Sender<()>>,
}

async fn export_loop<E: SpanExporter>(
    exporter: E,
    mut queue: Queue,
    timeout: Duration,
    drops: Arc<DropCounter>,
) {
    loop {
        let mut batch = Vec::new();
        let mut flush = None;
        tokio::select! {
            span = queue.spans.recv() => match span {
                Some(span) => batch.push(span),
                None => return,
            },
            ack = queue.flushes.recv() => match ack {
                Some(ack) => flush = Some(ack),
                None => return,
            },
        }
        // A full batch already waiting (the queue filled while the last one was
        // exported) goes out at once.
        if flush.is_none() && queue.spans.len() + 1 < MAX_BATCH {
            let deadline = Instant::now() + BATCH_DELAY;
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = queue.batch_full.notified() => {}
                ack = queue.flushes.recv() => flush = ack,
            }
        }
        // A flush takes everything queued; a batch at most a batch's worth (the
        // rest starts the next one at once).
        let take = if flush.is_some() { usize::MAX } else { MAX_BATCH };
        while batch.len() < take
            && let Ok(span) = queue.spans.try_recv()
        {
            batch.push(span);
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use opentelemetry::trace::{Tracer as _, TracerProvider as _};
    use opentelemetry_sdk::trace::SdkTracerProvider;

    use super::*;

    /// Keeps each batch's size and when it arrived (tokio's clock).
    #[derive(Debug, Default, Clone)]
    struct Batches(Arc<Mutex<Vec<(usize, Instant)>>>);

    impl SpanExporter for Batches {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            self.0.lock().unwrap().push((batch.len(), Instant::now()));
            Ok(())
        }
    }

    impl Batches {
        fn taken(&self) -> Vec<(usize, Instant)> {
            self.0.lock().unwrap().clone()
        }
    }

    fn provider(batches: &Batches) -> (SdkTracerProvider, ExportTask) {
        let (processor, task) =
            QueueProcessor::start(batches.clone(), Duration::from_secs(5), Arc::default());
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .build();
        (provider, task)
    }

    fn end_spans(provider: &SdkTracerProvider, count: usize) {
        let tracer = provider.tracer("test");
        for _ in 0..count {
            drop(tracer.start("span"));
        }
    }

    /// Lets the export task run until it waits again (on the paused clock, time
    /// does not move while something is ready to run).
    async fn settle() {
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn spans_short_of_a_batch_go_out_together_once_the_delay_is_over() {
        let batches = Batches::default();
        let (provider, _task) = provider(&batches);
        let started = Instant::now();
        end_spans(&provider, 10);
        settle().await;
        assert!(batches.taken().is_empty(), "exported before the delay");
        tokio::time::sleep(BATCH_DELAY).await;
        settle().await;
        let taken = batches.taken();
        assert_eq!(taken.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [10]);
        assert!(taken[0].1 - started >= BATCH_DELAY);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_batch_goes_out_without_waiting_for_the_delay() {
        let batches = Batches::default();
        let (provider, _task) = provider(&batches);
        let started = Instant::now();
        end_spans(&provider, MAX_BATCH + 3);
        settle().await;
        let taken = batches.taken();
        assert_eq!(taken.first().map(|(n, _)| *n), Some(MAX_BATCH));
        assert_eq!(taken[0].1, started, "the full batch waited");
    }

    #[tokio::test(start_paused = true)]
    async fn a_backlog_of_several_batches_goes_out_back_to_back() {
        let batches = Batches::default();
        let (provider, _task) = provider(&batches);
        let started = Instant::now();
        // The export task has not run yet: the whole queue fills before it wakes.
        end_spans(&provider, QUEUE_CAPACITY);
        settle().await;
        let taken = batches.taken();
        assert_eq!(taken.iter().map(|(n, _)| *n).sum::<usize>(), QUEUE_CAPACITY);
        assert!(taken.iter().all(|(n, at)| *n == MAX_BATCH && *at == started));
    }

    #[tokio::test(start_paused = true)]
    async fn a_flush_takes_everything_queued_at_once() {
        let batches = Batches::default();
        let (provider, task) = provider(&batches);
        let started = Instant::now();
        end_spans(&provider, 7);
        assert!(task.shutdown(Duration::from_secs(1)).await);
        let taken = batches.taken();
        assert_eq!(taken.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [7]);
        assert_eq!(taken[0].1, started);
    }
}

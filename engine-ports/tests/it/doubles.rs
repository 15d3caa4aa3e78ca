//! The test doubles pass the conformance suites of their ports.

use std::sync::Arc;
use std::time::Duration;

use engine_ports::testkit::{
    CollectingSink, ManualClock, MemoryRecorder, ScriptedLlm, clock, llm_stream, tool_call_recorder,
};
use engine_ports::{
    Clock, Event, EventKind, EventSink, LlmProvider, SessionId, SystemClock, ToolCallRecorder,
};

#[test]
fn clocks_pass_the_clock_suite() {
    clock::run(|| SystemClock);
    clock::run(ManualClock::at_epoch_2026);
}

#[test]
fn the_manual_clock_moves_only_when_told() {
    let clock = ManualClock::at_epoch_2026();
    let start = clock.now();
    assert_eq!(clock.now(), start);
    clock.advance(Duration::from_millis(10));
    assert_eq!(
        clock.now().duration_since(start).unwrap(),
        Duration::from_millis(10)
    );
}

#[tokio::test]
async fn the_memory_recorder_passes_the_recorder_suite() {
    tool_call_recorder::run(|| {
        let recorder = Arc::new(MemoryRecorder::new());
        let read = Arc::clone(&recorder);
        tool_call_recorder::RecorderUnderTest {
            recorder: recorder as Arc<dyn ToolCallRecorder>,
            read_back: Box::new(move |session| read.records_of(session)),
        }
    })
    .await;
    tool_call_recorder::run_failing(Arc::new(MemoryRecorder::failing())).await;
}

#[tokio::test]
async fn the_scripted_llm_passes_the_stream_suite() {
    llm_stream::run(|turn| Arc::new(ScriptedLlm::new([turn])) as Arc<dyn LlmProvider>).await;
}

#[test]
fn the_collecting_sink_keeps_sessions_apart() {
    let sink = CollectingSink::new();
    let event = |seq| Event {
        seq,
        time: None,
        kind: EventKind::TurnStart { turn: seq },
    };
    sink.emit(&SessionId::from("a"), &event(1));
    sink.emit(&SessionId::from("b"), &event(1));
    sink.emit(&SessionId::from("a"), &event(2));
    let seqs: Vec<u64> = sink.events(&SessionId::from("a")).iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2]);
    assert_eq!(sink.all().len(), 3);
}

#[test]
fn every_port_is_usable_as_a_shared_trait_object() {
    fn shared<T: ?Sized + Send + Sync>() {}
    shared::<dyn engine_ports::LlmProvider>();
    shared::<dyn engine_ports::ToolCallRecorder>();
    shared::<dyn engine_ports::Clock>();
    shared::<dyn engine_ports::EventSink>();
    shared::<dyn engine_ports::EventLog>();
    shared::<dyn engine_ports::SessionStore>();
    shared::<dyn engine_ports::SkillSource>();
    shared::<dyn engine_ports::SkillDrafter>();
    shared::<dyn engine_ports::CommandSource>();
    shared::<dyn engine_ports::CommandExpander>();
    shared::<dyn engine_ports::PermissionPolicy>();
    shared::<dyn engine_ports::ToolHooks>();
}

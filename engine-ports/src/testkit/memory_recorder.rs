//! [`MemoryRecorder`]: a recorder that keeps records in memory.

use std::sync::Mutex;

use async_trait::async_trait;

use crate::ids::SessionId;
use crate::recorder::{RecorderError, ToolCallRecord, ToolCallRecorder};

/// Keeps every record; [`MemoryRecorder::failing`] refuses every record instead.
#[derive(Debug, Default)]
pub struct MemoryRecorder {
    records: Mutex<Vec<ToolCallRecord>>,
    fail: bool,
}

impl MemoryRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A recorder whose backing write always fails.
    pub fn failing() -> Self {
        Self {
            records: Mutex::default(),
            fail: true,
        }
    }

    /// Every record, in recording order.
    pub fn records(&self) -> Vec<ToolCallRecord> {
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The records of one session.
    pub fn records_of(&self, session: &SessionId) -> Vec<ToolCallRecord> {
        self.records()
            .into_iter()
            .filter(|r| &r.session_id == session)
            .collect()
    }
}

#[async_trait]
impl ToolCallRecorder for MemoryRecorder {
    async fn record(&self, record: &ToolCallRecord) -> Result<(), RecorderError> {
        if self.fail {
            return Err(RecorderError::failed(record, "backing write failed"));
        }
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(record.clone());
        Ok(())
    }
}

//! [`ToolSpec`]: what the model sees of a tool.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Name, description and optional JSON schema of a tool, as advertised to the model.
///
/// Cheap to clone: the fields are shared behind `Arc`. Light (disclosable) specs
/// usually have no schema; JSON then omits the key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    name: Arc<str>,
    description: Arc<str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schema: Option<Arc<serde_json::Value>>,
}

impl ToolSpec {
    /// A spec without schema.
    pub fn new(name: impl Into<Arc<str>>, description: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            schema: None,
        }
    }

    /// The same spec with a JSON schema for the arguments.
    #[must_use]
    pub fn with_schema(mut self, schema: serde_json::Value) -> Self {
        self.schema = Some(Arc::new(schema));
        self
    }

    /// The same spec under another name (the catalog forces its key this way).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// The tool name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The argument schema, when the spec has one.
    pub fn schema(&self) -> Option<&serde_json::Value> {
        self.schema.as_deref()
    }
}

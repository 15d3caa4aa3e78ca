//! A call's final [`ToolResult`] as MCP's `CallToolResult`: the typed parts as
//! content blocks (text, image, audio, resource link, embedded resource), a
//! structured part as `structuredContent` (and its JSON text, for clients that read
//! only the content), the plain-text summary when there are no parts, `isError`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use engine_ports::{ContentPart, EmbeddedBody, ToolResult};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

/// The MCP form of `result`.
pub(crate) fn call_tool_result(result: &ToolResult) -> CallToolResult {
    let mut content = Vec::new();
    let mut structured = None;
    for part in result.parts() {
        match part {
            ContentPart::Text { text } => content.push(json!({"type": "text", "text": text})),
            ContentPart::Image { mime, data } => {
                content.push(json!({"type": "image", "data": BASE64.encode(data), "mimeType": mime}));
            }
            ContentPart::Audio { mime, data } => {
                content.push(json!({"type": "audio", "data": BASE64.encode(data), "mimeType": mime}));
            }
            ContentPart::ResourceLink(link) => {
                let mut block = json!({
                    "type": "resource_link",
                    "uri": link.uri,
                    "name": link.name.clone().unwrap_or_else(|| link.uri.clone()),
                });
                let fields = [
                    ("title", link.title.clone().map(Value::from)),
                    ("description", link.description.clone().map(Value::from)),
                    ("mimeType", link.mime.clone().map(Value::from)),
                    ("size", link.size.map(Value::from)),
                ];
                for (key, value) in fields {
                    if let Some(value) = value {
                        block[key] = value;
                    }
                }
                content.push(block);
            }
            ContentPart::EmbeddedResource(resource) => {
                let mut inner = json!({"uri": resource.uri});
                if let Some(mime) = &resource.mime {
                    inner["mimeType"] = Value::from(mime.as_str());
                }
                match &resource.body {
                    EmbeddedBody::Text(text) => inner["text"] = Value::from(text.as_str()),
                    EmbeddedBody::Blob(bytes) => inner["blob"] = Value::from(BASE64.encode(bytes)),
                }
                content.push(json!({"type": "resource", "resource": inner}));
            }
            ContentPart::Structured { json } => {
                content.push(json!({"type": "text", "text": json.to_string()}));
                structured = Some(json.clone());
            }
        }
    }
    if content.is_empty() {
        content.push(json!({"type": "text", "text": result.content()}));
    }
    let mut wire = json!({"content": content, "isError": result.is_error()});
    if let Some(structured) = structured {
        wire["structuredContent"] = structured;
    }
    serde_json::from_value(wire).unwrap_or_else(|error| {
        // Every block above has its schema's shape: this is a bug, told plainly.
        CallToolResult::error(vec![ContentBlock::text(format!(
            "the result could not be encoded for MCP ({error}); its text: {}",
            result.content()
        ))])
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use engine_ports::ResourceLink;

    use super::*;

    #[test]
    fn plain_results_are_one_text_block_and_errors_say_so() {
        let wire = serde_json::to_value(call_tool_result(&ToolResult::text("c", "hello"))).unwrap();
        assert_eq!(wire["content"], json!([{"type": "text", "text": "hello"}]));
        assert_eq!(wire["isError"], false);
        let wire = serde_json::to_value(call_tool_result(&ToolResult::error("c", "no"))).unwrap();
        assert_eq!(wire["isError"], true);
    }

    #[test]
    fn parts_become_blocks_and_structured_content() {
        let parts = vec![
            ContentPart::Text { text: "a".into() },
            ContentPart::Image {
                mime: "image/png".into(),
                data: vec![1, 2, 3],
            },
            ContentPart::ResourceLink(ResourceLink {
                uri: "file:///x".into(),
                ..ResourceLink::default()
            }),
            ContentPart::Structured {
                json: json!({"n": 1}),
            },
        ];
        let result = ToolResult::with_parts("c", "summary", parts).unwrap();
        let wire = serde_json::to_value(call_tool_result(&result)).unwrap();
        let kinds: Vec<&str> = wire["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["text", "image", "resource_link", "text"]);
        assert_eq!(wire["content"][1]["data"], "AQID");
        assert_eq!(wire["structuredContent"], json!({"n": 1}));
    }
}

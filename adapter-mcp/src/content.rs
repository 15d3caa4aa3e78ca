//! MCP content → model text fragments and typed parts, the D10 cap with
//! the structured-JSON refusal, and the part limits.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use engine_core::{OutputCap, floor_char_boundary};
use engine_ports::{
    ContentPart, EmbeddedBody, EmbeddedResource, MAX_BINARY_PART_BYTES, MAX_RESULT_INLINE_BYTES,
    MAX_TEXT_PART_BYTES, ResourceLink, ToolCallId, ToolResult,
};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use crate::resources::ResourceChunk;

const OCTET_STREAM: &str = "application/octet-stream";
const SUPPORTED_IMAGES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// One content item of a `tools/call` result: a block rmcp knows, or one it does
/// not (its `type`), which maps to an "unsupported" marker.
#[derive(Clone, Debug)]
// Unknown items are rare; boxing the common variant would allocate per item.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Block {
    Known(ContentBlock),
    Unknown(String),
}

/// A `tools/call` result decoded leniently: one unknown content item never fails
/// the whole result.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallReply {
    pub(crate) content: Vec<Block>,
    pub(crate) structured: Option<Value>,
    pub(crate) is_error: bool,
}

impl CallReply {
    /// From rmcp's typed result.
    pub(crate) fn from_typed(result: CallToolResult) -> Self {
        Self {
            content: result.content.into_iter().map(Block::Known).collect(),
            structured: result.structured_content,
            is_error: result.is_error == Some(true),
        }
    }

    /// From the raw JSON of a result rmcp could not type.
    pub(crate) fn from_value(value: Value) -> Result<Self, String> {
        let Value::Object(mut object) = value else {
            return Err("the tools/call result is not a JSON object".to_owned());
        };
        if let Some(kind) = object.get("resultType").and_then(Value::as_str)
            && kind != "complete"
        {
            return Err(format!(
                "the server answered with a {kind:?} result, which this client does not support"
            ));
        }
        let content = match object.remove("content") {
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| {
                    let kind = item.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
                    serde_json::from_value::<ContentBlock>(item).map_or(Block::Unknown(kind), Block::Known)
                })
                .collect(),
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return Err("the tools/call result's content is not an array".to_owned()),
        };
        Ok(Self {
            content,
            structured: object.remove("structuredContent"),
            is_error: object.get("isError") == Some(&Value::Bool(true)),
        })
    }

    /// The typed result (unknown content items are left out).
    pub(crate) fn into_typed(self) -> CallToolResult {
        let blocks = self
            .content
            .into_iter()
            .filter_map(|b| match b {
                Block::Known(block) => Some(block),
                Block::Unknown(_) => None,
            })
            .collect();
        let mut result = if self.is_error {
            CallToolResult::error(blocks)
        } else {
            CallToolResult::success(blocks)
        };
        result.structured_content = self.structured;
        result
    }
}

/// Fragments and parts of a list of content blocks.
#[derive(Default)]
pub(crate) struct Mapped {
    fragments: Vec<String>,
    parts: Vec<ContentPart>,
    /// Some item looks like structured JSON.
    json_like: bool,
    /// JSON values that text items parse to (to omit an equal `structuredContent`).
    text_values: Vec<Value>,
}

fn mime_essence(mime: &str) -> String {
    mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

fn is_json_mime(mime: &str) -> bool {
    let essence = mime_essence(mime);
    essence == "application/json"
        || essence == "text/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

fn parses_as_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        serde_json::from_str(trimmed).ok()
    } else {
        None
    }
}

fn decode(data: &str) -> Result<Vec<u8>, String> {
    BASE64
        .decode(data.trim().as_bytes())
        .map_err(|e| format!("base64 decoding failed: {e}"))
}

impl Mapped {
    /// Maps content items in order.
    pub(crate) fn from_items(items: &[Block]) -> Self {
        let mut mapped = Self::default();
        for item in items {
            match item {
                Block::Known(block) => mapped.push_block(block),
                Block::Unknown(kind) => mapped
                    .fragments
                    .push(format!("[unsupported content {kind:?}: not sent]")),
            }
        }
        mapped
    }

    /// The model-facing text: fragments joined with `\n`.
    pub(crate) fn text(&self) -> String {
        self.fragments.join("\n")
    }

    fn push_block(&mut self, block: &ContentBlock) {
        match block {
            ContentBlock::Text(text) => {
                if let Some(value) = parses_as_json(&text.text) {
                    self.json_like = true;
                    self.text_values.push(value);
                }
                self.fragments.push(text.text.clone());
                self.parts.push(ContentPart::text(text.text.clone()));
            }
            ContentBlock::Image(image) => {
                let mime = &image.mime_type;
                if !SUPPORTED_IMAGES.contains(&mime_essence(mime).as_str()) {
                    self.fragments
                        .push(format!("[image {mime}: unsupported image type, not sent]"));
                    return;
                }
                self.push_media("image", mime, &image.data, |mime, data| ContentPart::Image {
                    mime,
                    data,
                });
            }
            ContentBlock::Audio(audio) => {
                let mime = &audio.mime_type;
                if !mime_essence(mime).starts_with("audio/") {
                    self.fragments
                        .push(format!("[audio {mime}: invalid (not an audio/* MIME type)]"));
                    return;
                }
                self.push_media("audio", mime, &audio.data, |mime, data| ContentPart::Audio {
                    mime,
                    data,
                });
            }
            ContentBlock::ResourceLink(link) => {
                let marker = if link.name.is_empty() {
                    format!("[resource link: {}]", link.uri)
                } else {
                    format!("[resource link: {} ({})]", link.uri, link.name)
                };
                self.fragments.push(marker);
                let audience = link
                    .annotations
                    .as_ref()
                    .and_then(|a| a.audience.as_ref())
                    .map(|roles| {
                        roles
                            .iter()
                            .filter_map(|role| serde_json::to_value(role).ok())
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect()
                    });
                self.parts.push(ContentPart::ResourceLink(ResourceLink {
                    uri: link.uri.clone(),
                    name: (!link.name.is_empty()).then(|| link.name.clone()),
                    title: link.title.clone(),
                    description: link.description.clone(),
                    mime: link.mime_type.clone(),
                    size: link.size,
                    audience,
                }));
            }
            ContentBlock::Resource(embedded) => self.push_embedded(&embedded.resource),
            _ => self.fragments.push("[unsupported content: not sent]".to_owned()),
        }
    }

    /// A base64 `kind` block (`image`, `audio`) whose MIME type was accepted: the part
    /// `part` makes of its bytes and a marker with their size, or a marker saying why
    /// its data were not sent.
    fn push_media(
        &mut self,
        kind: &str,
        mime: &str,
        data: &str,
        part: impl FnOnce(String, Vec<u8>) -> ContentPart,
    ) {
        match decode(data) {
            Ok(bytes) if !bytes.is_empty() => {
                self.fragments
                    .push(format!("[{kind}: {mime}, {} bytes]", bytes.len()));
                self.parts.push(part(mime.to_owned(), bytes));
            }
            Ok(_) => self
                .fragments
                .push(format!("[{kind} {mime}: invalid data (empty)]")),
            Err(reason) => self
                .fragments
                .push(format!("[{kind} {mime}: invalid data ({reason})]")),
        }
    }

    fn push_embedded(&mut self, resource: &ResourceContents) {
        match resource {
            ResourceContents::TextResourceContents {
                uri, mime_type, text, ..
            } => {
                if mime_type.as_deref().is_some_and(is_json_mime) {
                    self.json_like = true;
                }
                if text.is_empty() {
                    self.fragments.push(format!("[embedded resource {uri} is empty]"));
                    return;
                }
                if let Some(value) = parses_as_json(text) {
                    self.json_like = true;
                    self.text_values.push(value);
                }
                self.fragments.push(text.clone());
                self.parts.push(ContentPart::EmbeddedResource(EmbeddedResource {
                    uri: uri.clone(),
                    mime: mime_type.clone(),
                    body: EmbeddedBody::Text(text.clone()),
                }));
            }
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => {
                if mime_type.as_deref().is_some_and(is_json_mime) {
                    self.json_like = true;
                }
                let mime = mime_type.as_deref().unwrap_or(OCTET_STREAM);
                match decode(blob) {
                    Ok(bytes) if !bytes.is_empty() => {
                        self.fragments.push(format!(
                            "[embedded resource {uri}: {mime}, {} bytes]",
                            bytes.len()
                        ));
                        self.parts.push(ContentPart::EmbeddedResource(EmbeddedResource {
                            uri: uri.clone(),
                            mime: mime_type.clone(),
                            body: EmbeddedBody::Blob(bytes),
                        }));
                    }
                    Ok(_) => self.fragments.push(format!("[embedded resource {uri} is empty]")),
                    Err(reason) => self.fragments.push(format!(
                        "[embedded resource {uri}: {mime}, invalid data ({reason})]"
                    )),
                }
            }
            _ => self
                .fragments
                .push("[unsupported embedded resource: not sent]".to_owned()),
        }
    }

    /// Adds the result-level `structuredContent`: a structured part, and its compact
    /// JSON as a fragment unless a text item already parses to an equal value.
    fn push_structured(&mut self, value: &Value) {
        self.json_like = true;
        if !self.text_values.contains(value) {
            self.fragments.push(value.to_string());
        }
        self.parts.push(ContentPart::Structured { json: value.clone() });
    }
}

/// The text fragment of one block alone (prompt messages): text verbatim, markers
/// for everything else, never base64.
pub(crate) fn block_text(block: &ContentBlock) -> String {
    let mut mapped = Mapped::default();
    mapped.push_block(block);
    mapped.text()
}

/// The text of one resource chunk: text verbatim, a blob as MIME and size.
pub(crate) fn resource_chunk_text(chunk: &ResourceChunk) -> String {
    match chunk {
        ResourceChunk::Text { text, .. } => text.clone(),
        ResourceChunk::Blob {
            uri,
            mime_type,
            base64,
            ..
        } => {
            let mime = mime_type.as_deref().unwrap_or(OCTET_STREAM);
            match decode(base64) {
                Ok(bytes) => format!("[binary resource {uri}: {mime}, {} bytes]", bytes.len()),
                Err(reason) => format!("[binary resource {uri}: {mime}, invalid data ({reason})]"),
            }
        }
        ResourceChunk::Unsupported => "[unsupported resource content]".to_owned(),
    }
}

/// What a tool result needs besides the MCP result.
pub(crate) struct ResultContext<'a> {
    pub(crate) call_id: &'a ToolCallId,
    pub(crate) tool: &'a str,
    pub(crate) server: &'a str,
    pub(crate) has_output_schema: bool,
    pub(crate) cap: OutputCap,
}

/// The content mapping for a `tools/call` result.
pub(crate) fn tool_result(result: &CallReply, ctx: &ResultContext<'_>) -> ToolResult {
    let mut mapped = Mapped::from_items(&result.content);
    if let Some(structured) = result.structured.as_ref().filter(|v| !v.is_null()) {
        mapped.push_structured(structured);
    }
    let text = mapped.text();
    if result.is_error {
        return ToolResult::error(ctx.call_id.clone(), ctx.cap.truncate_owned(text));
    }
    let structured = ctx.has_output_schema || mapped.json_like;
    if structured && !ctx.cap.fits(&text) {
        // The refusal is prose, so it may be cut; under a cap smaller than itself it
        // must not be the one result that exceeds the cap.
        return ToolResult::error(ctx.call_id.clone(), ctx.cap.truncate_owned(refusal(ctx)));
    }
    finish_with_parts(ctx.call_id, text, mapped.parts, ctx.cap)
}

fn refusal(ctx: &ResultContext<'_>) -> String {
    format!(
        "The result of {tool} (MCP server {server:?}) is structured JSON larger than the {cap}-byte output cap; \
         it was withheld because cutting it would make it unparseable. Call {tool} again with narrower \
         arguments, or page through the result with its own pagination parameters (such as a limit, \
         offset, page or cursor), so the result fits.",
        tool = ctx.tool,
        server = ctx.server,
        cap = ctx.cap.max_bytes(),
    )
}

fn is_textual(part: &ContentPart) -> bool {
    matches!(
        part,
        ContentPart::Text { .. }
            | ContentPart::Structured { .. }
            | ContentPart::EmbeddedResource(EmbeddedResource {
                body: EmbeddedBody::Text(_),
                ..
            })
    )
}

fn textual_len(part: &ContentPart) -> usize {
    match part {
        ContentPart::Text { text } => text.len(),
        ContentPart::Structured { json } => json.to_string().len(),
        ContentPart::EmbeddedResource(EmbeddedResource {
            body: EmbeddedBody::Text(text),
            ..
        }) => text.len(),
        _ => 0,
    }
}

fn binary_len(part: &ContentPart) -> usize {
    match part {
        ContentPart::Image { data, .. } | ContentPart::Audio { data, .. } => data.len(),
        ContentPart::EmbeddedResource(EmbeddedResource {
            body: EmbeddedBody::Blob(bytes),
            ..
        }) => bytes.len(),
        _ => 0,
    }
}

/// `text` within `cap` with `notes` kept whole at its end (before the marker when
/// the text was cut).
fn capped_with_notes(text: &str, notes: &str, cap: OutputCap) -> String {
    if text.len() + notes.len() <= cap.max_bytes() {
        return format!("{text}{notes}");
    }
    let marker = cap.marker();
    match cap.max_bytes().checked_sub(marker.len() + notes.len()) {
        Some(room) => format!("{}{notes}{marker}", floor_char_boundary(text, room)),
        None => cap.truncate_owned(format!("{text}{notes}")),
    }
}

fn chunks(text: &str, max: usize) -> Vec<ContentPart> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut piece = floor_char_boundary(rest, max);
        if piece.is_empty() {
            // A single char wider than `max` cannot happen for max ≥ 4; keep going.
            piece = &rest[..rest.chars().next().map_or(rest.len(), char::len_utf8)];
        }
        out.push(ContentPart::text(piece));
        rest = &rest[piece.len()..];
    }
    out
}

/// Applies the cap and the part limits: an offending part is dropped with a short
/// bracketed note in the text; when the text had to change, the textual parts are
/// replaced by the capped text so parts never carry more than the cap.
pub(crate) fn finish_with_parts(
    call_id: &ToolCallId,
    text: String,
    parts: Vec<ContentPart>,
    cap: OutputCap,
) -> ToolResult {
    if parts.is_empty() {
        return ToolResult::text(call_id.clone(), cap.truncate_owned(text));
    }
    let textual_reserve = text.len().min(cap.max_bytes()).saturating_mul(2);
    let mut notes = String::new();
    let mut kept = Vec::with_capacity(parts.len());
    let mut binary_total = 0usize;
    let mut textual_too_big = false;
    for part in parts {
        if is_textual(&part) {
            textual_too_big |= textual_len(&part) > MAX_TEXT_PART_BYTES;
            kept.push(part);
            continue;
        }
        let size = binary_len(&part);
        if size > MAX_BINARY_PART_BYTES {
            notes.push_str(&format!(
                "\n[{} part dropped: {size} bytes is over the {MAX_BINARY_PART_BYTES}-byte limit per part]",
                part.kind()
            ));
            continue;
        }
        if binary_total + size + textual_reserve > MAX_RESULT_INLINE_BYTES {
            notes.push_str(&format!(
                "\n[{} part dropped: the result would exceed {MAX_RESULT_INLINE_BYTES} inline bytes]",
                part.kind()
            ));
            continue;
        }
        binary_total += size;
        kept.push(part);
    }
    let final_text = capped_with_notes(&text, &notes, cap);
    if final_text != text || textual_too_big {
        let first_textual = kept.iter().position(is_textual).unwrap_or(0);
        let mut rebuilt: Vec<ContentPart> = kept.into_iter().filter(|p| !is_textual(p)).collect();
        let insert_at = first_textual.min(rebuilt.len());
        let pieces = chunks(&final_text, MAX_TEXT_PART_BYTES);
        rebuilt.splice(insert_at..insert_at, pieces);
        kept = rebuilt;
    }
    match ToolResult::with_parts(call_id.clone(), final_text.clone(), kept) {
        Ok(result) => result,
        Err(error) => ToolResult::text(
            call_id.clone(),
            capped_with_notes(&final_text, &format!("\n[parts dropped: {error}]"), cap),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    fn map(reply: &CallReply, cap: usize) -> ToolResult {
        tool_result(
            reply,
            &ResultContext {
                call_id: &ToolCallId::from("c1"),
                tool: "mcp__srv__tool",
                server: "srv",
                has_output_schema: false,
                cap: OutputCap::new(cap),
            },
        )
    }

    #[test]
    fn the_structured_json_refusal_stays_within_a_cap_smaller_than_itself() {
        // Found by the `mcp_content` fuzz target: JSON text over the cap is refused,
        // and the refusal alone (about 400 bytes) was longer than a small cap.
        let json = format!("[{}1]", "1,".repeat(150));
        let reply = CallReply::from_typed(CallToolResult::success(vec![ContentBlock::text(json)]));
        for cap in [1, 40, 200, 299] {
            let result = map(&reply, cap);
            assert!(result.is_error(), "cap {cap}: {result:?}");
            assert!(
                result.content().len() <= cap,
                "cap {cap}: {}",
                result.content().len()
            );
        }
        let roomy = map(&reply, 2_000);
        assert!(roomy.content().starts_with("[1,1"), "{roomy:?}");
        let tight = map(&reply, 300);
        assert!(tight.content().contains("structured JSON"), "{tight:?}");
    }
}

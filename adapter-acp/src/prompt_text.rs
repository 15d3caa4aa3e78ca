//! `session/prompt` content → the engine's prompt text: text blocks joined with blank
//! lines; resource links and embedded text resources as text referencing their URI;
//! anything binary refused.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

/// Why a prompt cannot be turned into text (answered with `invalid_params`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PromptError {
    /// A block of a kind the agent does not accept (its `promptCapabilities` say
    /// text and embedded context only).
    #[error(
        "prompt block {index} is {kind} content, which this agent does not accept: send text, resource links or embedded text resources"
    )]
    Unsupported {
        /// 0-based position of the block.
        index: usize,
        /// `image`, `audio`, `blob resource`, …
        kind: &'static str,
    },
    /// No block at all.
    #[error("the prompt is empty: send at least one text block")]
    Empty,
}

/// Joins the blocks of a prompt into one text, in order, separated by blank lines.
///
/// A resource link becomes `[name](uri)`; an embedded text resource becomes a header
/// naming its URI followed by its text in a fenced block.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> Result<String, PromptError> {
    if blocks.is_empty() {
        return Err(PromptError::Empty);
    }
    let mut parts = Vec::with_capacity(blocks.len());
    for (index, block) in blocks.iter().enumerate() {
        let part = match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::ResourceLink(link) => format!("[{}]({})", link.name, link.uri),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => {
                    let fence = fence_for(&resource.text);
                    format!(
                        "Contents of {}:\n{fence}\n{}\n{fence}",
                        resource.uri,
                        resource.text.trim_end_matches('\n')
                    )
                }
                _ => {
                    return Err(PromptError::Unsupported {
                        index,
                        kind: "blob resource",
                    });
                }
            },
            ContentBlock::Image(_) => return Err(PromptError::Unsupported { index, kind: "image" }),
            ContentBlock::Audio(_) => return Err(PromptError::Unsupported { index, kind: "audio" }),
            _ => {
                return Err(PromptError::Unsupported {
                    index,
                    kind: "an unknown kind of",
                });
            }
        };
        parts.push(part);
    }
    Ok(parts.join("\n\n"))
}

/// A backtick fence longer than any backtick run inside `text`.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{
        AudioContent, BlobResourceContents, EmbeddedResource, ImageContent, ResourceLink, TextContent,
        TextResourceContents,
    };

    use super::*;

    #[test]
    fn text_links_and_embedded_resources_join_with_blank_lines() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("look at these")),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///ws/src/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}\n",
                    "file:///ws/src/lib.rs",
                )),
            )),
        ];
        assert_eq!(
            prompt_text(&blocks).unwrap(),
            "look at these\n\n[main.rs](file:///ws/src/main.rs)\n\nContents of file:///ws/src/lib.rs:\n```\nfn main() {}\n```"
        );
    }

    #[test]
    fn binary_content_and_empty_prompts_are_refused() {
        let image = vec![
            ContentBlock::Text(TextContent::new("hi")),
            ContentBlock::Image(ImageContent::new("AAAA", "image/png")),
        ];
        assert_eq!(
            prompt_text(&image),
            Err(PromptError::Unsupported {
                index: 1,
                kind: "image"
            })
        );
        let audio = vec![ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav"))];
        assert!(prompt_text(&audio).unwrap_err().to_string().contains("audio"));
        let blob = vec![ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::BlobResourceContents(BlobResourceContents::new(
                "AAAA",
                "file:///x.bin",
            )),
        ))];
        assert!(
            prompt_text(&blob)
                .unwrap_err()
                .to_string()
                .contains("blob resource")
        );
        assert_eq!(prompt_text(&[]), Err(PromptError::Empty));
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ```rust``` b"), "````");
    }
}

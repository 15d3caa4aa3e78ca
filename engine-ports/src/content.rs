//! Typed content parts of a tool result ([`ContentPart`]) and their validity caps.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Largest `text` or `structured` part, in bytes (the structured part counts its
/// compact JSON text).
pub const MAX_TEXT_PART_BYTES: usize = 25_600;
/// Largest image, audio or embedded blob part, in bytes.
pub const MAX_BINARY_PART_BYTES: usize = 10 * 1024 * 1024;
/// Largest total of inline bytes (text, structured, binary) in one result; links count 0.
pub const MAX_RESULT_INLINE_BYTES: usize = 20 * 1024 * 1024;

/// One typed piece of a tool result, tagged by `"kind"` in JSON.
///
/// Binary payloads are bytes in memory and base64 in JSON. A resource link is only a
/// reference: nothing ever fetches or validates it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// MIME type, kept verbatim (parameters included).
        mime: String,
        /// The image bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
    /// An audio clip.
    Audio {
        /// MIME type, kept verbatim.
        mime: String,
        /// The audio bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
    /// A reference to a resource; never fetched or validated.
    ResourceLink(ResourceLink),
    /// A resource whose body travels inline.
    EmbeddedResource(EmbeddedResource),
    /// Structured JSON.
    Structured {
        /// The value.
        json: serde_json::Value,
    },
}

/// A resource reference (`resource_link` part).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceLink {
    /// The resource URI.
    pub uri: String,
    /// Programmatic name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// Size in bytes, as advertised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Advisory audience (`user`, `assistant`); never enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<String>>,
}

/// An inline resource (`embedded_resource` part). JSON carries exactly one of `text`
/// and `blob` (base64).
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddedResource {
    /// The resource URI.
    pub uri: String,
    /// MIME type.
    pub mime: Option<String>,
    /// The body.
    pub body: EmbeddedBody,
}

/// Body of an [`EmbeddedResource`].
#[derive(Clone, Debug, PartialEq)]
pub enum EmbeddedBody {
    /// Textual body.
    Text(String),
    /// Binary body.
    Blob(Vec<u8>),
}

/// A content part or result that breaks a cap or a shape rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContentError {
    /// A text or structured part is larger than [`MAX_TEXT_PART_BYTES`].
    #[error("{kind} part {index} is {bytes} bytes, over the {limit}-byte cap per text part")]
    TextPartTooLarge {
        /// `text` or `structured`.
        kind: &'static str,
        /// Position of the part in the result.
        index: usize,
        /// Its size.
        bytes: usize,
        /// The cap.
        limit: usize,
    },
    /// An image, audio or blob part is larger than [`MAX_BINARY_PART_BYTES`].
    #[error("{kind} part {index} is {bytes} bytes, over the {limit}-byte cap per binary part")]
    BinaryPartTooLarge {
        /// `image`, `audio` or `embedded_resource`.
        kind: &'static str,
        /// Position of the part in the result.
        index: usize,
        /// Its size.
        bytes: usize,
        /// The cap.
        limit: usize,
    },
    /// All inline bytes of one result exceed [`MAX_RESULT_INLINE_BYTES`].
    #[error("the result's parts hold {bytes} inline bytes, over the {limit}-byte cap per result")]
    ResultTooLarge {
        /// Total inline bytes.
        bytes: usize,
        /// The cap.
        limit: usize,
    },
    /// An embedded resource in JSON had both `text` and `blob`, or neither.
    #[error("an embedded resource must have exactly one of `text` and `blob`")]
    EmbeddedBodyShape,
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The kind tag as it appears in JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::Image { .. } => "image",
            Self::Audio { .. } => "audio",
            Self::ResourceLink(_) => "resource_link",
            Self::EmbeddedResource(_) => "embedded_resource",
            Self::Structured { .. } => "structured",
        }
    }

    /// The one model-facing text form of this part, shared by every provider:
    /// text and structured give their text; a link gives `"<title> (<uri>)"`, else
    /// `"<name> (<uri>)"`, else `"<uri>"`; embedded text gives the text; an embedded
    /// blob gives `"<uri> (<mime>)"`; image and audio give nothing.
    pub fn text_projection(&self) -> String {
        match self {
            Self::Text { text } => text.clone(),
            Self::Structured { json } => json.to_string(),
            Self::Image { .. } | Self::Audio { .. } => String::new(),
            Self::ResourceLink(link) => match link.title.as_deref().or(link.name.as_deref()) {
                Some(label) if !label.is_empty() => format!("{label} ({})", link.uri),
                _ => link.uri.clone(),
            },
            Self::EmbeddedResource(res) => match &res.body {
                EmbeddedBody::Text(text) => text.clone(),
                EmbeddedBody::Blob(_) => format!(
                    "{} ({})",
                    res.uri,
                    res.mime.as_deref().unwrap_or("application/octet-stream")
                ),
            },
        }
    }

    /// Bytes this part holds inline (links hold none).
    fn inline_bytes(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Structured { json } => json.to_string().len(),
            Self::Image { data, .. } | Self::Audio { data, .. } => data.len(),
            Self::ResourceLink(_) => 0,
            Self::EmbeddedResource(res) => match &res.body {
                EmbeddedBody::Text(text) => text.len(),
                EmbeddedBody::Blob(bytes) => bytes.len(),
            },
        }
    }
}

/// Checks every cap on a list of parts (an empty list is valid).
///
/// # Errors
/// The first [`ContentError`] found, naming the cap.
pub fn validate_parts(parts: &[ContentPart]) -> Result<(), ContentError> {
    let mut total = 0usize;
    for (index, part) in parts.iter().enumerate() {
        let bytes = part.inline_bytes();
        match part {
            ContentPart::Text { .. } | ContentPart::Structured { .. } => {
                if bytes > MAX_TEXT_PART_BYTES {
                    return Err(ContentError::TextPartTooLarge {
                        kind: part.kind(),
                        index,
                        bytes,
                        limit: MAX_TEXT_PART_BYTES,
                    });
                }
            }
            ContentPart::Image { .. } | ContentPart::Audio { .. } | ContentPart::EmbeddedResource(_) => {
                let binary = !matches!(
                    part,
                    ContentPart::EmbeddedResource(EmbeddedResource {
                        body: EmbeddedBody::Text(_),
                        ..
                    })
                );
                if binary && bytes > MAX_BINARY_PART_BYTES {
                    return Err(ContentError::BinaryPartTooLarge {
                        kind: part.kind(),
                        index,
                        bytes,
                        limit: MAX_BINARY_PART_BYTES,
                    });
                }
            }
            ContentPart::ResourceLink(_) => {}
        }
        total = total.saturating_add(bytes);
    }
    if total > MAX_RESULT_INLINE_BYTES {
        return Err(ContentError::ResultTooLarge {
            bytes: total,
            limit: MAX_RESULT_INLINE_BYTES,
        });
    }
    Ok(())
}

#[derive(Serialize, Deserialize)]
struct EmbeddedWire {
    uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mime: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "base64_opt")]
    blob: Option<Vec<u8>>,
}

impl Serialize for EmbeddedResource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (text, blob) = match &self.body {
            EmbeddedBody::Text(text) => (Some(text.clone()), None),
            EmbeddedBody::Blob(bytes) => (None, Some(bytes.clone())),
        };
        EmbeddedWire {
            uri: self.uri.clone(),
            mime: self.mime.clone(),
            text,
            blob,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EmbeddedResource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = EmbeddedWire::deserialize(deserializer)?;
        let body = match (wire.text, wire.blob) {
            (Some(text), None) => EmbeddedBody::Text(text),
            (None, Some(blob)) => EmbeddedBody::Blob(blob),
            _ => return Err(serde::de::Error::custom(ContentError::EmbeddedBodyShape)),
        };
        Ok(Self {
            uri: wire.uri,
            mime: wire.mime,
            body,
        })
    }
}

mod base64_bytes {
    use super::BASE64;
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&BASE64.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        BASE64.decode(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}

mod base64_opt {
    use super::BASE64;
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::ref_option)] // serde's `with` passes `&Option<T>`
    pub(super) fn serialize<S: Serializer>(
        bytes: &Option<Vec<u8>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => serializer.serialize_str(&BASE64.encode(bytes)),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        let text = Option::<String>::deserialize(deserializer)?;
        text.map(|t| BASE64.decode(t.as_bytes()).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Encodes bytes as standard base64 (the JSON form of binary parts).
pub fn encode_base64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

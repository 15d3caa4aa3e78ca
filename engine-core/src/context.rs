//! Context management: each model's context window, the size estimate of the next
//! request, and the pure half of compaction (where to cut a conversation, what the
//! summary request says, how the summary is framed). The turn loop drives it
//! (`engine/compaction.rs`).
//!
//! Estimates are in tokens: the provider's own count of the last answer when it
//! reported one, plus [`BYTES_PER_TOKEN`] bytes per token for everything added since,
//! never less than the whole request (system prompt, tool specs, messages) counted
//! the same way from its bytes.

use std::collections::HashSet;

use engine_ports::{ContentPart, Conversation, Message, ReportedContext, ToolSpec, WeakPrefix};

use crate::disclosure::TurnTools;
use crate::output_cap::floor_char_boundary;

/// The window of a model the table does not know, in tokens.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The engine compacts when the next request's estimate passes this share of the
/// window (the rest is room for the answer and for the estimate's error).
pub const COMPACT_AT_PERCENT: u64 = 80;

/// A compaction keeps the last this many user turns (a user message and everything
/// after it) verbatim, when they fit [`KEEP_PERCENT`] of the window.
pub const KEPT_USER_TURNS: usize = 2;

/// Most of the window the messages a compaction keeps verbatim may take; when the
/// last [`KEPT_USER_TURNS`] are larger, fewer (later) messages are kept.
pub const KEEP_PERCENT: u64 = 25;

/// Most of the window the summary request's transcript may take.
pub const TRANSCRIPT_PERCENT: u64 = 50;

/// Bytes per estimated token.
pub const BYTES_PER_TOKEN: u64 = 4;

/// Estimated tokens of one image or audio part (providers count media by size, not
/// by bytes).
const MEDIA_PART_TOKENS: u64 = 1_600;

/// Longest tool result or tool-call argument text in the summary request; the rest is
/// cut with a note.
pub const TRANSCRIPT_ITEM_CAP: usize = 8_000;

/// The smallest cap tool texts are cut to before whole messages are left out of an
/// over-long summary request.
pub const MIN_TRANSCRIPT_ITEM_CAP: usize = 250;

/// How a summary is framed in the compacted conversation (the summary follows).
pub const SUMMARY_INTRO: &str = "The earlier part of this conversation was replaced by the summary below \
to fit the model's context window; the conversation goes on after it.";

/// The instructions of the summary request (the transcript follows).
pub const COMPACTION_INSTRUCTIONS: &str = "Summarize the conversation below between a user and an AI \
assistant that works with tools. The conversation will be replaced by your summary and the assistant will \
continue the work from it, so keep everything needed to go on: the user's requests and constraints (the \
latest request word for word), decisions made, the files, names and values that matter, what was done and \
what it showed, errors and how they were resolved, and the work still open. Write plain text, be concise \
and factual, and do not call tools.";

/// Context windows of common models, by name prefix (longest match wins), in tokens
/// of input a request may carry.
const WINDOWS: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-4", 8_192),
    ("gpt-4-32k", 32_768),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-5", 272_000),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
];

/// The context window of `model`, in tokens: the table's entry for the longest
/// matching name prefix (case-insensitive, after any `vendor/` routing prefix), else
/// [`DEFAULT_CONTEXT_WINDOW`].
///
/// ```
/// use engine_core::{DEFAULT_CONTEXT_WINDOW, context_window_for};
/// assert_eq!(context_window_for("claude-sonnet-4-6"), 200_000);
/// assert_eq!(context_window_for("openai/gpt-4.1-mini"), 1_047_576);
/// assert_eq!(context_window_for("my-local-model"), DEFAULT_CONTEXT_WINDOW);
/// ```
pub fn context_window_for(model: &str) -> u64 {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(DEFAULT_CONTEXT_WINDOW, |(_, window)| *window)
}

/// Output limits of common models, by name prefix (longest match wins): the limit
/// each request is sent with (before `--max-tokens`) and the most the model can
/// write, in tokens. Models the table does not know get
/// [`DEFAULT_MAX_TOKENS`](engine_ports::DEFAULT_MAX_TOKENS) and no known maximum.
const OUTPUT_LIMITS: &[(&str, u32, u32)] = &[
    ("claude-", 8_192, 8_192),
    ("claude-3-haiku", 4_096, 4_096),
    ("claude-3-opus", 4_096, 4_096),
    ("claude-3-7-sonnet", 16_384, 64_000),
    ("claude-sonnet-4", 16_384, 64_000),
    ("claude-opus-4", 16_384, 32_000),
    ("claude-haiku-4", 16_384, 64_000),
    ("gpt-3.5-turbo", 4_096, 4_096),
    ("gpt-4", 4_096, 8_192),
    ("gpt-4-turbo", 4_096, 4_096),
    ("gpt-4o", 8_192, 16_384),
    ("gpt-4.1", 16_384, 32_768),
    ("gpt-5", 32_768, 128_000),
    ("o1", 32_768, 100_000),
    ("o1-mini", 32_768, 65_536),
    ("o3", 32_768, 100_000),
    ("o4-mini", 32_768, 100_000),
];

/// A model's output limits, in tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimits {
    /// The limit each request is sent with.
    pub default: u32,
    /// The most the model can write, when known.
    pub max: Option<u32>,
}

impl OutputLimits {
    /// The limit a request cut off at `current` is repeated with: twice as much,
    /// within the model's known maximum; `None` when it cannot grow.
    pub fn raised(self, current: u32) -> Option<u32> {
        let doubled = current.saturating_mul(2);
        let raised = self.max.map_or(doubled, |max| doubled.min(max));
        (raised > current).then_some(raised)
    }
}

/// The output limits of `model`: the table's entry for the longest matching name
/// prefix (case-insensitive, after any `vendor/` routing prefix), else
/// [`DEFAULT_MAX_TOKENS`](engine_ports::DEFAULT_MAX_TOKENS) with no known maximum.
///
/// ```
/// use engine_core::output_limits_for;
/// assert_eq!(output_limits_for("claude-sonnet-4-6").max, Some(64_000));
/// assert_eq!(output_limits_for("gpt-4o-mini").default, 8_192);
/// assert_eq!(output_limits_for("qwen3-coder").max, None);
/// ```
pub fn output_limits_for(model: &str) -> OutputLimits {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    OUTPUT_LIMITS
        .iter()
        .filter(|(prefix, _, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map_or(
            OutputLimits {
                default: engine_ports::DEFAULT_MAX_TOKENS,
                max: None,
            },
            |(_, default, max)| OutputLimits {
                default: *default,
                max: Some(*max),
            },
        )
}

/// The estimate above which the engine compacts.
pub(crate) fn compaction_threshold(window: u64) -> u64 {
    window.saturating_mul(COMPACT_AT_PERCENT) / 100
}

/// Bytes that are `percent` % of `window` tokens.
fn share_bytes(window: u64, percent: u64) -> u64 {
    window.saturating_mul(percent) / 100 * BYTES_PER_TOKEN
}

/// Tokens of `bytes`, rounded up.
pub(crate) fn tokens_of(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// The bytes a message adds to a request (media parts at a fixed estimate).
pub(crate) fn message_bytes(message: &Message) -> u64 {
    let len = |text: &str| text.len() as u64;
    match message {
        Message::User { text } | Message::Summary { text, .. } => len(text),
        Message::Assistant { text, tool_calls } => {
            len(text)
                + tool_calls
                    .iter()
                    .map(|call| len(call.id().as_str()) + len(call.name()) + len(call.args()))
                    .sum::<u64>()
        }
        Message::Tool { result } => {
            let id = len(result.call_id().as_str());
            if result.parts().is_empty() {
                return id + len(result.content());
            }
            id + result
                .parts()
                .iter()
                .map(|part| match part {
                    ContentPart::Image { .. } | ContentPart::Audio { .. } => {
                        MEDIA_PART_TOKENS * BYTES_PER_TOKEN
                    }
                    other => len(&other.text_projection()),
                })
                .sum::<u64>()
        }
    }
}

/// The bytes every request of a turn carries besides its messages: the system
/// prompt and the tool specs (name, description, schema).
pub(crate) fn fixed_bytes(system: &str, tools: &TurnTools) -> u64 {
    system.len() as u64 + tools.bytes
}

/// The bytes one tool spec adds to every request: its name, description and
/// argument schema (as JSON).
pub(crate) fn spec_bytes(spec: &ToolSpec) -> u64 {
    let schema = spec
        .schema()
        .and_then(|schema| serde_json::to_vec(schema).ok())
        .map_or(0, |bytes| bytes.len());
    (spec.name().len() + spec.description().len() + schema) as u64
}

/// Running byte totals of a conversation's messages ([`message_bytes`]), kept
/// between turns and runs of a session so that an estimate costs only the messages
/// appended since the last one: `totals[i]` is the bytes of the first `i` messages of
/// the conversation `prefix` refers to. A conversation that does not grow from that
/// prefix (a compaction rewrote it, a store loaded a copy) is counted again from its
/// start.
#[derive(Debug, Default)]
pub(crate) struct ConversationSizes {
    prefix: WeakPrefix,
    totals: Vec<u64>,
}

impl ConversationSizes {
    /// Brings the totals up to `conversation`.
    fn update(&mut self, conversation: &Conversation) {
        let from = if self.prefix.is_prefix_of(conversation) && self.totals.len() == self.prefix.len() + 1 {
            self.prefix.len()
        } else {
            self.totals.clear();
            self.totals.push(0);
            0
        };
        let mut total = self.totals.last().copied().unwrap_or(0);
        self.totals.reserve(conversation.len() - from);
        for message in conversation.iter().skip(from) {
            total += message_bytes(message);
            self.totals.push(total);
        }
        self.prefix = conversation.downgrade();
    }

    /// The bytes of the messages from `from` on, when there are that many.
    fn bytes_from(&self, from: usize) -> Option<u64> {
        let total = self.totals.last().copied().unwrap_or(0);
        self.totals.get(from).map(|before| total - before)
    }
}

/// The estimated tokens of a request carrying `conversation` plus `fixed` bytes: the
/// provider's count of the prefix it reported on plus the bytes added since, but never
/// less than the bytes of the whole request (a provider may under-report, or count
/// nothing at all). `sizes` remembers the message sizes between calls.
pub(crate) fn estimate(
    sizes: &mut ConversationSizes,
    conversation: &Conversation,
    reported: Option<ReportedContext>,
    fixed: u64,
) -> u64 {
    sizes.update(conversation);
    let by_bytes = tokens_of(fixed + sizes.bytes_from(0).unwrap_or(0));
    let from_report = reported.and_then(|reported| {
        let from = usize::try_from(reported.messages).ok()?;
        let added = sizes.bytes_from(from)?;
        Some(reported.tokens.saturating_add(tokens_of(added)))
    });
    from_report.map_or(by_bytes, |tokens| tokens.max(by_bytes))
}

/// Where a compaction of `conversation` in a `window`-token model cuts: the summary
/// replaces `conversation[..cut]`, the rest stays verbatim. `None` when nothing but
/// an earlier summary could be replaced.
///
/// The cut never separates a tool call from its result and never replaces an
/// unanswered call (every call before the cut has its result before it, and the
/// message at the cut is no tool result); it keeps the last [`KEPT_USER_TURNS`] user
/// turns when they fit [`KEEP_PERCENT`] of the window, else the most recent messages
/// that do (possibly none); and it never replaces a user message that nothing
/// answered yet (a run's new prompt stays verbatim).
pub(crate) fn choose_cut(conversation: &[Message], window: u64) -> Option<usize> {
    let n = conversation.len();
    let budget = share_bytes(window, KEEP_PERCENT);
    // safe[i]: a cut at i separates no call from its result.
    let mut safe = vec![false; n + 1];
    let mut open: HashSet<&str> = HashSet::new();
    for (i, message) in conversation.iter().enumerate() {
        safe[i] = open.is_empty() && !matches!(message, Message::Tool { .. });
        match message {
            Message::Assistant { tool_calls, .. } => {
                open.extend(tool_calls.iter().map(|call| call.id().as_str()));
            }
            Message::Tool { result } => {
                open.remove(result.call_id().as_str());
            }
            Message::User { .. } | Message::Summary { .. } => {}
        }
    }
    safe[n] = open.is_empty();
    if matches!(conversation.last(), Some(Message::User { .. })) {
        safe[n] = false;
    }
    let mut kept_bytes = vec![0u64; n + 1];
    for i in (0..n).rev() {
        kept_bytes[i] = kept_bytes[i + 1] + message_bytes(&conversation[i]);
    }
    let users: Vec<usize> = conversation
        .iter()
        .enumerate()
        .filter_map(|(i, m)| matches!(m, Message::User { .. }).then_some(i))
        .collect();
    let start = users
        .len()
        .checked_sub(KEPT_USER_TURNS)
        .map_or(0, |first| users[first]);
    let cut = (start..=n)
        .find(|&i| safe[i] && kept_bytes[i] <= budget)
        .or_else(|| (0..=n).rev().find(|&i| safe[i]))?;
    conversation[..cut]
        .iter()
        .any(|m| !matches!(m, Message::Summary { .. }))
        .then_some(cut)
}

/// The text of the summary request for `replaced` in a `window`-token model: the
/// instructions, then a transcript within [`TRANSCRIPT_PERCENT`] of the window. Tool
/// results and call arguments are cut at [`TRANSCRIPT_ITEM_CAP`], then at halved caps
/// (down to [`MIN_TRANSCRIPT_ITEM_CAP`]) while the transcript is too long; when it
/// still is, the oldest messages after an earlier summary are left out, saying how
/// many.
pub(crate) fn summary_request_text(replaced: &[Message], window: u64) -> String {
    format!(
        "{COMPACTION_INSTRUCTIONS}\n\n<conversation>\n{}\n</conversation>",
        transcript_within(replaced, window)
    )
}

/// `messages` as a transcript within [`TRANSCRIPT_PERCENT`] of a `window`-token
/// model (the rules of [`summary_request_text`]): what a side request shows of a
/// conversation (a compaction summary, a salvage turn, a forked child's start).
pub(crate) fn transcript_within(replaced: &[Message], window: u64) -> String {
    let budget = usize::try_from(share_bytes(window, TRANSCRIPT_PERCENT)).unwrap_or(usize::MAX);
    let size = |items: &[String]| items.iter().map(|item| item.len() + 2).sum::<usize>();
    let mut cap = TRANSCRIPT_ITEM_CAP;
    let mut items: Vec<String> = replaced.iter().map(|m| transcript_item(m, cap)).collect();
    while size(&items) > budget && cap > MIN_TRANSCRIPT_ITEM_CAP {
        cap = (cap / 2).max(MIN_TRANSCRIPT_ITEM_CAP);
        items = replaced.iter().map(|m| transcript_item(m, cap)).collect();
    }
    let total = size(&items);
    if total > budget {
        let first_droppable = usize::from(matches!(replaced.first(), Some(Message::Summary { .. })));
        let mut excess = total - budget;
        let mut dropped = 0usize;
        while excess > 0 && first_droppable + dropped < items.len() {
            excess = excess.saturating_sub(items[first_droppable + dropped].len() + 2);
            dropped += 1;
        }
        if dropped > 0 {
            items.splice(
                first_droppable..first_droppable + dropped,
                [format!(
                    "[{dropped} earlier messages were left out to fit this transcript]"
                )],
            );
        }
    }
    items.join("\n\n")
}

/// One message of the transcript, tool texts cut at `cap` bytes.
fn transcript_item(message: &Message, cap: usize) -> String {
    match message {
        Message::User { text } => format!("[user]\n{text}"),
        Message::Summary { text, .. } => format!("[summary of the conversation before]\n{text}"),
        Message::Assistant { text, tool_calls } => {
            let mut item = format!("[assistant]\n{text}");
            for call in tool_calls {
                item.push_str(&format!(
                    "\n[tool call {}] {} {}",
                    call.id(),
                    call.name(),
                    capped(call.args(), cap)
                ));
            }
            item
        }
        Message::Tool { result } => {
            let what = if result.is_error() {
                "tool error"
            } else {
                "tool result"
            };
            let projection = result.text_projection();
            let text = if projection.is_empty() {
                result.content()
            } else {
                &projection
            };
            format!("[{what} {}]\n{}", result.call_id(), capped(text, cap))
        }
    }
}

/// `text` cut at `cap` bytes, saying how much was left out.
fn capped(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let head = floor_char_boundary(text, cap);
    format!("{head}… [{} more bytes left out]", text.len() - head.len())
}

/// The text of the summary message: [`SUMMARY_INTRO`], then the model's summary,
/// cut at [`KEEP_PERCENT`] of the window.
pub(crate) fn summary_text(summary: &str, window: u64) -> String {
    let cap = usize::try_from(share_bytes(window, KEEP_PERCENT)).unwrap_or(usize::MAX);
    let summary = summary.trim();
    let summary = if summary.len() > cap {
        format!(
            "{}… [the summary was cut here]",
            floor_char_boundary(summary, cap)
        )
    } else {
        summary.to_owned()
    };
    format!("{SUMMARY_INTRO}\n\n<summary>\n{summary}\n</summary>")
}

#[cfg(test)]
mod tests {
    use engine_ports::{ToolCall, ToolResult};

    use super::*;

    fn user(text: &str) -> Message {
        Message::User { text: text.into() }
    }

    fn said(text: &str) -> Message {
        Message::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
        }
    }

    fn calls(ids: &[&str]) -> Message {
        Message::Assistant {
            text: String::new(),
            tool_calls: ids.iter().map(|id| ToolCall::new(*id, "Read", "{}")).collect(),
        }
    }

    fn result(id: &str, text: &str) -> Message {
        Message::Tool {
            result: ToolResult::text(id, text),
        }
    }

    #[test]
    fn the_table_matches_the_longest_prefix() {
        assert_eq!(context_window_for("claude-opus-4-1"), 200_000);
        assert_eq!(context_window_for("CLAUDE-HAIKU-4-5"), 200_000);
        assert_eq!(context_window_for("gpt-4o-mini"), 128_000);
        assert_eq!(context_window_for("gpt-4.1-nano"), 1_047_576);
        assert_eq!(context_window_for("gpt-4"), 8_192);
        assert_eq!(context_window_for("gpt-4-turbo-2024-04-09"), 128_000);
        assert_eq!(context_window_for("gpt-5-mini"), 272_000);
        assert_eq!(context_window_for("o1-mini"), 128_000);
        assert_eq!(context_window_for("o3-pro"), 200_000);
        assert_eq!(context_window_for("anthropic/claude-sonnet-4"), 200_000);
        assert_eq!(context_window_for(""), DEFAULT_CONTEXT_WINDOW);
        assert_eq!(context_window_for("llama3.1:8b"), DEFAULT_CONTEXT_WINDOW);
    }

    #[test]
    fn the_estimate_adds_bytes_since_the_reported_count() {
        let conversation: Conversation = vec![user("hello"), said("hi"), user(&"x".repeat(40))].into();
        let estimate = |conversation: &Conversation, reported, fixed| {
            estimate(&mut ConversationSizes::default(), conversation, reported, fixed)
        };
        assert_eq!(estimate(&conversation, None, 13), tokens_of(13 + 5 + 2 + 40));
        let reported = ReportedContext {
            tokens: 1000,
            messages: 2,
        };
        assert_eq!(estimate(&conversation, Some(reported), 13), 1010);
        let stale = ReportedContext {
            tokens: 1000,
            messages: 9,
        };
        assert_eq!(estimate(&conversation, Some(stale), 0), tokens_of(47));
        let under_reported = ReportedContext {
            tokens: 1,
            messages: 2,
        };
        assert_eq!(estimate(&conversation, Some(under_reported), 13), tokens_of(60));
    }

    #[test]
    fn kept_sizes_follow_a_growing_conversation_and_recount_a_rewritten_one() {
        let mut sizes = ConversationSizes::default();
        let mut conversation: Conversation = vec![user("hello")].into();
        assert_eq!(estimate(&mut sizes, &conversation, None, 0), tokens_of(5));
        let saved = conversation.clone();
        conversation.push(said("hi there"));
        conversation.push(user(&"x".repeat(40)));
        assert_eq!(
            estimate(&mut sizes, &conversation, None, 0),
            tokens_of(5 + 8 + 40)
        );
        // What the estimate counted before stays valid for a holder of the prefix.
        assert_eq!(estimate(&mut sizes, &saved, None, 0), tokens_of(5));
        let rewritten: Conversation = vec![user("ab"), said("c")].into();
        assert_eq!(estimate(&mut sizes, &rewritten, None, 0), tokens_of(3));
        let reported = ReportedContext {
            tokens: 100,
            messages: 1,
        };
        assert_eq!(estimate(&mut sizes, &rewritten, Some(reported), 0), 101);
    }

    #[test]
    fn media_parts_count_a_fixed_estimate() {
        let image = ToolResult::with_parts(
            "c1",
            "an image",
            vec![ContentPart::Image {
                mime: "image/png".into(),
                data: vec![0; 1_000_000],
            }],
        )
        .unwrap();
        assert_eq!(
            message_bytes(&Message::Tool { result: image }),
            2 + MEDIA_PART_TOKENS * BYTES_PER_TOKEN
        );
    }

    #[test]
    fn the_cut_keeps_the_last_two_user_turns_when_they_fit() {
        let conversation = vec![
            user("one"),
            calls(&["a"]),
            result("a", "A"),
            said("done one"),
            user("two"),
            said("done two"),
            user("three"),
            calls(&["b"]),
            result("b", "B"),
        ];
        assert_eq!(choose_cut(&conversation, 100_000), Some(4));
    }

    #[test]
    fn the_cut_moves_later_when_the_kept_turns_are_too_large_but_never_splits_a_call() {
        let big = "y".repeat(3_000);
        let conversation = vec![
            user("one"),
            said("ok"),
            user("two"),
            calls(&["a", "b"]),
            result("a", &big),
            result("b", &big),
            calls(&["c"]),
            result("c", "small"),
        ];
        // A 1,000-token window keeps at most 1,000 bytes: from the last call on.
        assert_eq!(choose_cut(&conversation, 1_000), Some(6));
    }

    #[test]
    fn an_unanswered_call_is_never_replaced() {
        let big = "z".repeat(5_000);
        let conversation = vec![
            user("one"),
            said(&big),
            user("two"),
            calls(&["open"]),
            said(&big),
            user("three"),
            said(&big),
        ];
        // Nothing after the unanswered call is a safe cut, so the cut comes before it.
        assert_eq!(choose_cut(&conversation, 1_000), Some(3));
    }

    #[test]
    fn a_new_prompt_stays_verbatim_and_a_lone_summary_is_not_compacted_again() {
        let conversation = vec![
            Message::Summary {
                text: "s".repeat(100),
                replaced_turns: 3,
            },
            user(&"p".repeat(10_000)),
        ];
        assert_eq!(choose_cut(&conversation, 1_000), None);
        let conversation = vec![user("old"), said(&"o".repeat(10_000)), user("new")];
        assert_eq!(choose_cut(&conversation, 1_000), Some(2));
    }

    #[test]
    fn the_transcript_names_roles_calls_and_results_and_stays_in_budget() {
        let text = summary_request_text(
            &[
                Message::Summary {
                    text: "before".into(),
                    replaced_turns: 1,
                },
                user("find it"),
                calls(&["c1"]),
                Message::Tool {
                    result: ToolResult::error("c1", "no such file"),
                },
            ],
            100_000,
        );
        assert!(text.starts_with(COMPACTION_INSTRUCTIONS), "{text}");
        assert!(text.ends_with(
            "<conversation>\n[summary of the conversation before]\nbefore\n\n[user]\nfind it\n\n\
             [assistant]\n\n[tool call c1] Read {}\n\n[tool error c1]\nno such file\n</conversation>"
        ));
        let many: Vec<Message> = std::iter::once(Message::Summary {
            text: "keep me".into(),
            replaced_turns: 1,
        })
        .chain((0..200).map(|i| result(&format!("r{i}"), &"w".repeat(20_000))))
        .collect();
        let text = summary_request_text(&many, 10_000);
        assert!(
            text.len() <= 20_000 + COMPACTION_INSTRUCTIONS.len() + 200,
            "{}",
            text.len()
        );
        assert!(text.contains("keep me"));
        assert!(text.contains("earlier messages were left out to fit this transcript"));
        assert!(text.contains("more bytes left out"));
    }
}

//! [`Conversation`]: a session's messages, shared by requests and snapshots, where an
//! append never copies the messages another holder shares.
//!
//! The messages live in slots of a fixed-capacity buffer behind an `Arc`; a
//! conversation is that buffer and how many of its slots it covers. Every slot is
//! written at most once (a `OnceLock`), so a holder's messages never change under it:
//! appending writes the next free slot, in place, even while other holders (a saved
//! snapshot, a request in flight) share the buffer, because they cover fewer slots
//! and never look past them. Only a full buffer, or a slot another holder already
//! wrote (two holders appending different messages after the same prefix), makes an
//! append move to a new buffer of twice the size, so appends are O(1) amortised
//! however many holders share the prefix.

use std::sync::{Arc, OnceLock, Weak};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::llm::Message;

/// Slots of a new buffer when nothing says how many are needed.
const MIN_CAPACITY: usize = 8;

/// A buffer's slots; the first slots of every buffer are written, in order.
type Slots = Box<[OnceLock<Message>]>;

fn empty_slots(capacity: usize) -> Slots {
    (0..capacity).map(|_| OnceLock::new()).collect()
}

/// A session's messages, shared: cloning is O(1) (one `Arc`), so a request, a saved
/// snapshot and the running session can hold the same conversation without copying
/// it, and [`push`](Self::push) appends in O(1) amortised whether or not the messages
/// are shared (what another holder holds never changes).
///
/// It reads like a slice of messages (`len`, `get`, `iter`, `first`, `last`,
/// indexing by position) and serializes as a JSON array of messages, exactly like a
/// `Vec<Message>`.
#[derive(Clone)]
pub struct Conversation {
    slots: Arc<Slots>,
    len: usize,
}

impl Default for Conversation {
    fn default() -> Self {
        Self {
            slots: Arc::new(empty_slots(0)),
            len: 0,
        }
    }
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no message.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&Message> {
        if index >= self.len {
            return None;
        }
        self.slots.get(index).and_then(OnceLock::get)
    }

    /// The first message.
    pub fn first(&self) -> Option<&Message> {
        self.get(0)
    }

    /// The last message.
    pub fn last(&self) -> Option<&Message> {
        self.len.checked_sub(1).and_then(|last| self.get(last))
    }

    /// The messages in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            slots: self.slots[..self.len].iter(),
        }
    }

    /// The messages copied into a `Vec`.
    pub fn to_vec(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }

    /// The first `len` messages (all when there are fewer), sharing them: O(1).
    pub fn prefix(&self, len: usize) -> Self {
        Self {
            slots: Arc::clone(&self.slots),
            len: len.min(self.len),
        }
    }

    /// Appends `message`: in place (O(1)) unless the buffer is full or another holder
    /// already appended after the same messages; then the messages move to a buffer
    /// twice the size (copied when shared), which keeps appends O(1) amortised.
    pub fn push(&mut self, message: Message) {
        let message = match self.slots.get(self.len) {
            Some(slot) => match slot.set(message) {
                Ok(()) => {
                    self.len += 1;
                    return;
                }
                Err(message) => message,
            },
            None => message,
        };
        // Alone with a buffer whose next slot holds what an earlier, longer version
        // of this conversation appended (see `split_off`): overwrite it, clear the
        // rest and keep the buffer.
        if let Some(slots) = Arc::get_mut(&mut self.slots)
            && let Some((next, rest)) = slots.get_mut(self.len..).and_then(<[_]>::split_first_mut)
        {
            *next = OnceLock::from(message);
            for slot in rest {
                slot.take();
            }
            self.len += 1;
            return;
        }
        self.move_to_new_buffer((self.len * 2).max(MIN_CAPACITY));
        if let Some(slot) = self.slots.get(self.len) {
            let _ = slot.set(message);
            self.len += 1;
        }
    }

    /// Moves the messages to a new buffer of `capacity` slots (`capacity > len`):
    /// taken from the old one when nobody else holds it, else copied.
    fn move_to_new_buffer(&mut self, capacity: usize) {
        let new = empty_slots(capacity.max(self.len + 1));
        match Arc::get_mut(&mut self.slots) {
            Some(old) => {
                for (to, from) in new.iter().zip(old[..self.len].iter_mut()) {
                    if let Some(message) = from.take() {
                        let _ = to.set(message);
                    }
                }
            }
            None => {
                for (to, message) in new.iter().zip(self.iter()) {
                    let _ = to.set(message.clone());
                }
            }
        }
        self.slots = Arc::new(new);
    }

    /// The messages from `at` on, removed from this conversation and returned (copied
    /// when shared); the messages before `at` stay shared.
    ///
    /// # Panics
    /// When `at > self.len()`, like [`Vec::split_off`].
    pub fn split_off(&mut self, at: usize) -> Vec<Message> {
        assert!(
            at <= self.len,
            "split_off at {at} past the end of a conversation of {} messages",
            self.len
        );
        let tail = self.slots[at..self.len]
            .iter()
            .filter_map(OnceLock::get)
            .cloned()
            .collect();
        self.len = at;
        tail
    }

    /// Removes every message (O(1); other holders keep theirs).
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// Inserts `message` at `index`, like [`Vec::insert`] (O(n): the messages are
    /// copied into a new buffer).
    ///
    /// # Panics
    /// When `index > self.len()`.
    pub fn insert(&mut self, index: usize, message: Message) {
        let mut messages = self.to_vec();
        messages.insert(index, message);
        *self = Self::from(messages);
    }

    /// Whether `self` and `other` share their messages' storage (no copy between
    /// them).
    pub fn shares_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.slots, &other.slots)
    }

    /// A reference to these messages that keeps none of them alive, to tell later
    /// whether a conversation still starts with them ([`WeakPrefix::is_prefix_of`]).
    pub fn downgrade(&self) -> WeakPrefix {
        WeakPrefix {
            slots: Arc::downgrade(&self.slots),
            len: self.len,
        }
    }
}

/// A conversation's messages as [`Conversation::downgrade`] saw them, without keeping
/// them alive: what a cache keyed by a conversation prefix holds.
#[derive(Clone, Debug, Default)]
pub struct WeakPrefix {
    slots: Weak<Slots>,
    len: usize,
}

impl WeakPrefix {
    /// How many messages it covers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it covers no message.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `conversation` starts with these very messages (the same storage, so
    /// the same values), in O(1). `false` when it does not or when that cannot be
    /// told cheaply (the messages were copied or rewritten since).
    pub fn is_prefix_of(&self, conversation: &Conversation) -> bool {
        self.len <= conversation.len
            && self
                .slots
                .upgrade()
                .is_some_and(|slots| Arc::ptr_eq(&slots, &conversation.slots))
    }
}

/// The messages of a [`Conversation`], in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    slots: std::slice::Iter<'a, OnceLock<Message>>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Message;

    fn next(&mut self) -> Option<&'a Message> {
        self.slots.next().and_then(OnceLock::get)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }

    fn nth(&mut self, n: usize) -> Option<&'a Message> {
        self.slots.nth(n).and_then(OnceLock::get)
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.slots.next_back().and_then(OnceLock::get)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Conversation {
    type Item = &'a Message;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl std::ops::Index<usize> for Conversation {
    type Output = Message;

    fn index(&self, index: usize) -> &Message {
        match self.get(index) {
            Some(message) => message,
            None => panic!(
                "index {index} out of range for a conversation of {} messages",
                self.len
            ),
        }
    }
}

impl From<Vec<Message>> for Conversation {
    fn from(messages: Vec<Message>) -> Self {
        let len = messages.len();
        let slots = empty_slots((len + len / 2).max(MIN_CAPACITY));
        for (slot, message) in slots.iter().zip(messages) {
            let _ = slot.set(message);
        }
        Self {
            slots: Arc::new(slots),
            len,
        }
    }
}

impl FromIterator<Message> for Conversation {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Conversation {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && (self.shares_with(other) || self.iter().eq(other.iter()))
    }
}

impl PartialEq<[Message]> for Conversation {
    fn eq(&self, other: &[Message]) -> bool {
        self.len == other.len() && self.iter().eq(other.iter())
    }
}

impl<const N: usize> PartialEq<[Message; N]> for Conversation {
    fn eq(&self, other: &[Message; N]) -> bool {
        *self == other[..]
    }
}

impl PartialEq<Vec<Message>> for Conversation {
    fn eq(&self, other: &Vec<Message>) -> bool {
        *self == other[..]
    }
}

impl Serialize for Conversation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Conversation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::User {
            text: text.to_owned(),
        }
    }

    fn texts(conversation: &Conversation) -> Vec<String> {
        conversation
            .iter()
            .map(|m| match m {
                Message::User { text } => text.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_clone_shares_the_messages_and_a_later_push_leaves_it_unchanged() {
        let mut conversation = Conversation::from(vec![user("a")]);
        let request_copy = conversation.clone();
        assert!(request_copy.shares_with(&conversation));
        conversation.push(user("b"));
        assert_eq!(request_copy, [user("a")]);
        assert_eq!(conversation, [user("a"), user("b")]);
    }

    #[test]
    fn pushing_after_a_shared_prefix_appends_in_place_without_copying() {
        let mut session = Conversation::new();
        let mut saved = Vec::new();
        for i in 0..1_000 {
            session.push(user(&i.to_string()));
            // What a store keeps after each save: a holder of the prefix.
            saved.push(session.clone());
        }
        // Only the doublings moved the messages: a handful of buffers for 1,000 pushes.
        let buffers = saved
            .windows(2)
            .filter(|pair| !pair[0].shares_with(&pair[1]))
            .count();
        assert!(buffers <= 8, "{buffers} moves for 1,000 pushes");
        for (i, kept) in saved.iter().enumerate() {
            assert_eq!(kept.len(), i + 1);
            assert_eq!(kept.last(), Some(&user(&i.to_string())));
        }
    }

    #[test]
    fn two_holders_appending_after_the_same_prefix_each_keep_their_own_message() {
        let base = Conversation::from(vec![user("a")]);
        let (mut left, mut right) = (base.clone(), base.clone());
        left.push(user("left"));
        right.push(user("right"));
        assert_eq!(texts(&base), ["a"]);
        assert_eq!(texts(&left), ["a", "left"]);
        assert_eq!(texts(&right), ["a", "right"]);
        assert!(left.shares_with(&base));
        assert!(!right.shares_with(&base));
    }

    #[test]
    fn split_off_keeps_the_head_and_a_later_push_does_not_change_the_old_tail() {
        let mut conversation: Conversation = ["a", "b", "c"].into_iter().map(user).collect();
        let before = conversation.clone();
        let tail = conversation.split_off(1);
        assert_eq!(tail, [user("b"), user("c")]);
        conversation.push(user("x"));
        assert_eq!(texts(&conversation), ["a", "x"]);
        assert_eq!(texts(&before), ["a", "b", "c"]);
        // Alone, the same happens in place.
        let mut alone: Conversation = ["a", "b", "c"].into_iter().map(user).collect();
        let _ = alone.split_off(1);
        alone.push(user("y"));
        alone.push(user("z"));
        assert_eq!(texts(&alone), ["a", "y", "z"]);
    }

    #[test]
    fn prefix_insert_clear_and_indexing_read_like_a_slice() {
        let mut conversation: Conversation = ["a", "b", "c"].into_iter().map(user).collect();
        let head = conversation.prefix(2);
        assert_eq!(texts(&head), ["a", "b"]);
        assert!(head.shares_with(&conversation));
        assert_eq!(conversation.prefix(10).len(), 3);
        conversation.insert(1, user("i"));
        assert_eq!(texts(&conversation), ["a", "i", "b", "c"]);
        assert_eq!(conversation[1], user("i"));
        assert_eq!(conversation.get(4), None);
        assert_eq!(conversation.iter().next_back(), Some(&user("c")));
        conversation.clear();
        assert!(conversation.is_empty());
        assert_eq!(texts(&head), ["a", "b"]);
    }

    #[test]
    fn a_weak_prefix_recognizes_the_conversations_that_grew_from_it() {
        let mut conversation: Conversation = ["a", "b"].into_iter().map(user).collect();
        let weak = conversation.downgrade();
        assert!(weak.is_prefix_of(&conversation));
        conversation.push(user("c"));
        assert!(weak.is_prefix_of(&conversation));
        let rewritten: Conversation = ["a", "b", "c"].into_iter().map(user).collect();
        assert!(!weak.is_prefix_of(&rewritten));
        assert!(!weak.is_prefix_of(&conversation.prefix(1)));
        drop(conversation);
        drop(rewritten);
        assert!(!weak.is_prefix_of(&Conversation::from(vec![user("a"), user("b")])));
    }

    #[test]
    fn it_serializes_as_a_plain_array_of_messages() {
        let mut conversation = Conversation::from(vec![user("hi")]);
        let saved = conversation.clone();
        conversation.push(user("later"));
        let json = serde_json::to_string(&saved).unwrap();
        assert_eq!(json, serde_json::to_string(&vec![user("hi")]).unwrap());
        let back: Conversation = serde_json::from_str(&json).unwrap();
        assert_eq!(back, saved);
        assert_eq!(format!("{saved:?}"), format!("{:?}", vec![user("hi")]));
    }
}

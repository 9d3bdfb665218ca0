//! The transcript of one run and the [`Budget`] that bounds what of it is kept, as one
//! record: nothing enters or leaves the transcript except through it, so what the budget
//! counts is always what the transcript holds.
//!
//! Entries are pushed in two ways: [`Transcript::keep`] charges an entry's footprint (the
//! target's messages, the harness's replies to its requests), [`Transcript::push`] counts it
//! only by number (the case's own lines and the transport's events, which the case bounds).
//! Only the last entry can be taken back, so no index kept elsewhere ever moves. Entries
//! themselves may be annotated in place (what matched them, how the diff shows them).

use super::budget::Budget;
use crate::pattern;
use crate::transcript::{channel_prefix, Direction, Entry};
use crate::transport::Channel;
use serde_json::Value;
use std::ops::{Deref, DerefMut};

/// What was exchanged in one run, and what of it was judged and not kept.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    budget: Budget,
}

impl Transcript {
    /// Adds an entry counted by number only; returns its index.
    pub fn push(&mut self, entry: Entry) -> usize {
        self.entries.push(entry);
        self.entries.len() - 1
    }

    /// Adds an entry charged by its footprint; returns its index.
    pub fn keep(&mut self, entry: Entry) -> usize {
        self.budget.keep(&entry.text, entry.value.as_ref());
        self.push(entry)
    }

    /// Whether the transcript has used up what a case may keep.
    pub fn over(&self) -> bool {
        self.budget.over(self.entries.len())
    }

    /// Whether `index` is the last entry.
    pub fn is_last(&self, index: usize) -> bool {
        index + 1 == self.entries.len()
    }

    /// Takes back the kept entry at `index`, when it is the last one, and counts it as
    /// judged and not kept; true when it was the first so dropped (which the report notes).
    /// `None` when `index` is not the last entry: nothing moves.
    pub fn take_back(&mut self, index: usize) -> Option<bool> {
        if !self.is_last(index) {
            return None;
        }
        let entry = self.entries.pop()?;
        self.budget.release(&entry.text, entry.value.as_ref());
        Some(self.budget.drop_one())
    }

    /// Counts a message judged and never kept; true for the first (which the report notes).
    pub fn not_kept(&mut self) -> bool {
        self.budget.drop_one()
    }

    /// How many messages were judged and not kept.
    pub fn dropped(&self) -> usize {
        self.budget.dropped()
    }

    /// The message at `index` as the harness recorded it (`null` when it was no JSON).
    pub fn message(&self, index: usize) -> &Value {
        static NULL: Value = Value::Null;
        self.entries[index].value.as_ref().unwrap_or(&NULL)
    }

    /// The `params` of the message at `index`, if it has them.
    pub fn params(&self, index: usize) -> Option<&Value> {
        self.message(index).get("params")
    }

    /// Marks the received message at `index` as the harness's business (not a case's), so
    /// diffs and expectations pass over it.
    pub fn take_internal(&mut self, index: usize) {
        self.entries[index].internal = true;
        self.entries[index].consumed_by = Some(0);
    }

    /// A matched message's line in the diff shows its channel as the expectation did.
    pub fn show_channel(&mut self, index: usize, expected: Option<Channel>) {
        let entry = &mut self.entries[index];
        let prefix = channel_prefix(expected, entry.channel);
        if let Some(shown) = entry.shown.as_mut() {
            shown.insert_str(0, &prefix);
        }
    }

    /// Whether `entry` is a message of session `session` the target wrote that no step nor
    /// the harness has taken yet.
    fn open(entry: &Entry, session: usize) -> bool {
        entry.direction == Direction::Received
            && entry.consumed_by.is_none()
            && !entry.internal
            && entry.session == session
    }

    /// An untaken response of session `session` with this id that arrived at or after
    /// index `from`.
    pub fn response_with_id(&self, id: &Value, from: usize, session: usize) -> Option<usize> {
        self.entries
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, e)| {
                Self::open(e, session)
                    && e.value.as_ref().is_some_and(|v| {
                        v.get("method").is_none()
                            && v.get("id").is_some_and(|v| pattern::json_equal(v, id))
                    })
            })
            .map(|(i, _)| i)
    }

    /// The untaken message of session `session` a pattern is closest to: the one with the id
    /// it names for certain (`id`), or else the first of its method (a response pattern is
    /// only ever compared with responses).
    pub fn candidate_for(
        &self,
        pattern: &Value,
        id: Option<&Value>,
        session: usize,
    ) -> Option<usize> {
        let mut open = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| Self::open(e, session));
        if let Some(id) = id {
            return open
                .find(|(_, e)| {
                    e.value
                        .as_ref()
                        .and_then(|v| v.get("id"))
                        .is_some_and(|v| pattern::json_equal(v, id))
                })
                .map(|(i, _)| i);
        }
        let method = pattern.get("method");
        open.find(|(_, e)| {
            e.value.as_ref().is_some_and(|v| {
                v.get("method") == method && (method.is_some() || v.get("id").is_some())
            })
        })
        .map(|(i, _)| i)
    }

    /// The entries, for the report.
    pub fn into_entries(self) -> Vec<Entry> {
        self.entries
    }
}

impl Deref for Transcript {
    type Target = [Entry];

    fn deref(&self) -> &[Entry] {
        &self.entries
    }
}

/// Entries may be annotated in place; they are added and removed only through the record.
impl DerefMut for Transcript {
    fn deref_mut(&mut self) -> &mut [Entry] {
        &mut self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{KEEP_BYTES, KEEP_ENTRIES};
    use std::time::Duration;

    fn entry(text: &str) -> Entry {
        Entry::sent(Duration::ZERO, text.to_string(), None, false)
    }

    #[test]
    fn pushed_entries_count_by_number_and_kept_ones_by_size() {
        let mut t = Transcript::default();
        let big = "x".repeat(KEEP_BYTES);
        t.push(entry(&big));
        assert!(!t.over(), "a pushed entry is not charged its size");
        assert_eq!(t.keep(entry(&big)), 1);
        assert!(t.over(), "a kept one is");
        let mut many = Transcript::default();
        for _ in 0..=KEEP_ENTRIES {
            many.push(entry("{}"));
        }
        assert!(many.over(), "entries count however small");
    }

    #[test]
    fn only_the_last_entry_is_taken_back_and_its_size_returned() {
        let mut t = Transcript::default();
        t.keep(entry("first"));
        let big = t.keep(entry(&"x".repeat(KEEP_BYTES)));
        assert!(t.over());
        assert_eq!(t.take_back(0), None, "an earlier entry stays where it is");
        assert_eq!(t.len(), 2);
        assert_eq!(t.take_back(big), Some(true), "the first drop is told apart");
        assert_eq!(t.len(), 1);
        assert!(!t.over(), "its size is returned");
        assert!(!t.not_kept());
        assert_eq!(t.dropped(), 2);
    }

    #[test]
    fn entries_are_annotated_in_place() {
        let mut t = Transcript::default();
        let at = t.push(entry("{}"));
        t[at].consumed_by = Some(3);
        assert_eq!(t.into_entries()[0].consumed_by, Some(3));
    }
}

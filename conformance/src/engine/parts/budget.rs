//! The bound on what a case keeps of its transcript: every message is judged, however many
//! there are; what is *kept* is bounded (see [`KEEP_BYTES`], [`KEEP_ENTRIES`]). Past the
//! budget, messages that are not the first answers to the harness's requests are judged and
//! counted but not stored, and the report says so.

use crate::transcript::Entry;
use serde_json::Value;

/// How much memory (roughly: the text, its parsed form and the entry) the messages of one
/// case may take in its transcript. Every case's report is kept until the run ends, so this
/// times the number of cases is what a run that floods in every case keeps.
pub const KEEP_BYTES: usize = 2 << 20;
/// How many messages one case keeps in its transcript.
pub const KEEP_ENTRIES: usize = 5_000;

/// What the transcript of one case takes, and what it did not keep.
#[derive(Debug, Default)]
pub struct Budget {
    /// Roughly the memory the kept messages take.
    kept_bytes: usize,
    /// Messages judged and not kept.
    dropped: usize,
}

impl Budget {
    /// A message of this text and value is kept.
    pub fn keep(&mut self, text: &str, value: Option<&Value>) {
        self.kept_bytes += footprint(text, value);
    }

    /// A kept message was let go after all.
    pub fn release(&mut self, text: &str, value: Option<&Value>) {
        self.kept_bytes = self.kept_bytes.saturating_sub(footprint(text, value));
    }

    /// Whether a transcript of `entries` messages has used up what a case may keep.
    pub fn over(&self, entries: usize) -> bool {
        self.kept_bytes > KEEP_BYTES || entries > KEEP_ENTRIES
    }

    /// Counts a message judged and not kept; true for the first (which the report notes).
    pub fn drop_one(&mut self) -> bool {
        self.dropped += 1;
        self.dropped == 1
    }

    /// How many messages were judged and not kept.
    pub fn dropped(&self) -> usize {
        self.dropped
    }
}

/// Roughly how much memory a transcript entry of this text and parsed value takes, counting
/// what the allocator adds: a parsed object costs a map node (room for 11 entries, some 640
/// bytes) per 11 keys, whatever it holds.
pub fn footprint(text: &str, value: Option<&Value>) -> usize {
    const ALLOCATION: usize = 16;
    const MAP_NODE: usize = 640;
    fn parsed(value: &Value) -> usize {
        match value {
            Value::String(s) => s.len() + ALLOCATION,
            Value::Array(items) => {
                ALLOCATION
                    + items
                        .iter()
                        .map(|v| std::mem::size_of::<Value>() + parsed(v))
                        .sum::<usize>()
            }
            Value::Object(map) => {
                MAP_NODE * map.len().div_ceil(11).max(1)
                    + map
                        .iter()
                        .map(|(k, v)| k.len() + ALLOCATION + parsed(v))
                        .sum::<usize>()
            }
            _ => 0,
        }
    }
    std::mem::size_of::<Entry>() + text.len() + ALLOCATION + value.map_or(0, parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_budget_runs_out_by_bytes_or_by_entries() {
        let mut b = Budget::default();
        assert!(!b.over(0));
        assert!(b.over(KEEP_ENTRIES + 1));
        let big = "x".repeat(KEEP_BYTES);
        b.keep(&big, None);
        assert!(b.over(1));
        b.release(&big, None);
        assert!(!b.over(1));
    }

    #[test]
    fn the_first_drop_is_told_apart_and_all_are_counted() {
        let mut b = Budget::default();
        assert!(b.drop_one());
        assert!(!b.drop_one());
        assert_eq!(b.dropped(), 2);
    }

    #[test]
    fn a_parsed_object_costs_more_than_its_text() {
        let text = r#"{"a":1}"#;
        assert!(footprint(text, Some(&json!({"a": 1}))) > footprint(text, None) + 600);
    }
}

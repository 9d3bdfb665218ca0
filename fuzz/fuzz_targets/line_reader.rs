//! `reference_wire::LineReader` against its model, on a stream the input describes: bytes
//! (some standing for megabytes, to reach the line limit), how many bytes each read gives,
//! when a read is pending (and the read cancelled) or interrupted, and how the stream ends.

#![no_main]

#[path = "../../reference-wire/tests/props/mod.rs"]
mod props;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use props::{Piece, ReadPlan};
use reference_wire::MAX_LINE_BYTES;

fn plan(u: &mut Unstructured) -> Result<ReadPlan> {
    let fails_at_end = u.ratio(1u8, 5)?;
    let mut chunks = Vec::new();
    for _ in 0..u.int_in_range(1u8..=4)? {
        chunks.push(match u.int_in_range(0u8..=2)? {
            0 => u.int_in_range(1usize..=16)?,
            1 => u.int_in_range(17usize..=9000)?,
            _ => u.int_in_range(9000usize..=1 << 20)?,
        });
    }
    let mut stalls = Vec::new();
    for _ in 0..u.int_in_range(0u8..=3)? {
        stalls.push(u.int_in_range(0u8..=2)?);
    }
    let mut pieces = Vec::new();
    let mut filled = 0;
    while !u.is_empty() {
        // Bytes, now and then followed by a run of `x` (at most 3 runs per stream).
        let len = u.arbitrary_len::<u8>()?.min(64);
        let bytes = u.bytes(len)?;
        pieces.push(Piece::Bytes(bytes.to_vec()));
        // A marker byte asks for a run: megabytes cost milliseconds, so they come when asked
        // for, not whenever an input holds zeros (which `ratio` would read as "yes").
        if filled < 3 && u.arbitrary::<u8>()? == 0xF1 {
            filled += 1;
            let n = match u.int_in_range(0u8..=3)? {
                0 => u.int_in_range(1usize..=64)?,
                1 => 2 * MAX_LINE_BYTES + 3,
                _ => MAX_LINE_BYTES - 2 + u.int_in_range(0usize..=4)?,
            };
            pieces.push(Piece::Fill(n));
        }
    }
    if pieces
        .iter()
        .any(|p| matches!(p, Piece::Fill(n) if *n > 64))
    {
        chunks.push(1 << 20);
    }
    Ok(ReadPlan {
        pieces,
        chunks,
        stalls,
        fails_at_end,
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(plan) = plan(&mut Unstructured::new(data)) {
        props::check_line_reader(&plan);
    }
});

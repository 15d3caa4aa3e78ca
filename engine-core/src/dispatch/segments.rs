//! Segmentation: maximal runs of read-batchable calls become batches; every other
//! call is a barrier alone.

use std::ops::Range;

/// Splits `batchable` (one flag per call, in call order) into segments: each maximal
/// run of `true` is one range, each `false` a range of one.
pub(crate) fn segments(batchable: &[bool]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < batchable.len() {
        let end = if batchable[start] {
            start + batchable[start..].iter().take_while(|b| **b).count()
        } else {
            start + 1
        };
        out.push(start..end);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::segments;

    #[test]
    fn reads_batch_and_barriers_stand_alone() {
        // R1 R2 W R3 X R4 → {R1,R2} {W} {R3} {X} {R4}
        let plan = [true, true, false, true, false, true];
        assert_eq!(segments(&plan), [0..2, 2..3, 3..4, 4..5, 5..6]);
    }

    #[test]
    fn consecutive_barriers_are_separate() {
        assert_eq!(segments(&[false, false, true, true, true]), [0..1, 1..2, 2..5]);
        assert!(segments(&[]).is_empty());
    }
}

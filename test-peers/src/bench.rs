//! The latency line the benches print and `scripts/bench/report.py` reads, and the
//! alternating blocks a bench compares two configurations with.

use std::time::Duration;

/// `p50 …, p99 …, max … over N calls` of `samples` (sorted here), as `Debug`
/// durations; `no calls` when there are none.
pub fn latencies(samples: &mut [Duration]) -> String {
    let Some(&max) = samples.iter().max() else {
        return "no calls".to_owned();
    };
    samples.sort_unstable();
    let pct = |p: usize| samples[(samples.len() * p / 100).min(samples.len() - 1)];
    format!(
        "p50 {:?}, p99 {:?}, max {max:?} over {} calls",
        pct(50),
        pct(99),
        samples.len()
    )
}

/// `pairs` pairs of blocks of `a` and `b`, the order alternating from pair to pair
/// (ABBA), so that a shared host's drift weighs on both alike: each block's figure,
/// `a`'s and `b`'s, in the order they ran within their own list.
pub fn alternating_blocks(
    pairs: usize,
    mut a: impl FnMut() -> f64,
    mut b: impl FnMut() -> f64,
) -> (Vec<f64>, Vec<f64>) {
    let (mut of_a, mut of_b) = (Vec::with_capacity(pairs), Vec::with_capacity(pairs));
    for pair in 0..pairs {
        if pair % 2 == 0 {
            of_a.push(a());
            of_b.push(b());
        } else {
            of_b.push(b());
            of_a.push(a());
        }
    }
    (of_a, of_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternating_blocks_run_in_abba_order_and_keep_each_side_apart() {
        let order = std::cell::RefCell::new(String::new());
        let (a, b) = alternating_blocks(
            3,
            || {
                order.borrow_mut().push('a');
                1.0
            },
            || {
                order.borrow_mut().push('b');
                2.0
            },
        );
        assert_eq!(order.into_inner(), "abbaab");
        assert_eq!((a, b), (vec![1.0; 3], vec![2.0; 3]));
    }

    #[test]
    fn the_line_names_median_tail_and_maximum_of_unsorted_samples() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        assert_eq!(
            latencies(&mut samples),
            "p50 51µs, p99 100µs, max 100µs over 100 calls"
        );
        assert_eq!(latencies(&mut []), "no calls");
    }
}

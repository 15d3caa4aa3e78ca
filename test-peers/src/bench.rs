//! The latency line the benches print and `scripts/bench/report.py` reads.

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

#[cfg(test)]
mod tests {
    use super::*;

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

//! Benchmarks of the file-backed memory store (filled in with the benchmark step).

fn main() {}

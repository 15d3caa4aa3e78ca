//! Catalog benchmarks: `lookup` at 10, 1,000 and 10,000 tools (present and absent
//! names), and `advertised_specs` over 10,000 (the target) and 1,000 tools, half
//! of them Disclosable.

// Bench setup fails loudly.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use engine_core::{Catalog, Environment, Tool, ToolError};
use engine_ports::{CancellationToken, PermissionMode, ToolCall, ToolResult, ToolSpec};

struct BenchTool {
    spec: ToolSpec,
    light: Option<ToolSpec>,
    read_only: bool,
}

#[async_trait]
impl Tool for BenchTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn advertised_spec(&self) -> Option<ToolSpec> {
        self.light.clone()
    }
    async fn execute(
        &self,
        _: &CancellationToken,
        call: &ToolCall,
        _: &Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(call.id().clone(), ""))
    }
}

fn name(i: usize) -> String {
    format!("mcp__server{}__tool_{i:05}", i % 16)
}

fn catalog(n: usize) -> Catalog {
    let mut catalog = Catalog::new();
    for i in 0..n {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "a path"}, "n": {"type": "integer"}},
            "required": ["path"]
        });
        let spec = ToolSpec::new(name(i), format!("Tool number {i}.\nMore detail.")).with_schema(schema);
        let light = (i % 2 == 0).then(|| ToolSpec::new(name(i), format!("Tool number {i}.")));
        catalog
            .register(Arc::new(BenchTool {
                spec,
                light,
                read_only: i % 3 != 0,
            }))
            .unwrap();
    }
    catalog
}

fn lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("catalog_lookup");
    for n in [10, 1_000, 10_000] {
        let catalog = catalog(n);
        let present = name(n / 2);
        let absent = "mcp__nowhere__missing".to_owned();
        group.bench_with_input(BenchmarkId::new("present", n), &n, |b, _| {
            b.iter(|| black_box(catalog.lookup(black_box(&present))).is_some());
        });
        group.bench_with_input(BenchmarkId::new("absent", n), &n, |b, _| {
            b.iter(|| black_box(catalog.lookup(black_box(&absent))).is_none());
        });
    }
    group.finish();
}

fn advertised(c: &mut Criterion) {
    advertised_at(c, 10_000, "advertised_specs_10k");
    advertised_at(c, 1_000, "advertised_specs_1k");
}

/// `advertised_specs` (and the 100-hydrated and plan-mode listings) over `n` tools.
fn advertised_at(c: &mut Criterion, n: usize, group_name: &str) {
    let catalog = catalog(n);
    let hydrated: HashSet<String> = (0..100).map(|i| name(i * 2)).collect();
    let mut group = c.benchmark_group(group_name);
    group.bench_function("advertised_specs", |b| {
        b.iter(|| black_box(catalog.advertised_specs(PermissionMode::Default)).len());
    });
    group.bench_function("advertised_specs_for_100_hydrated", |b| {
        b.iter(|| black_box(catalog.advertised_specs_for(PermissionMode::Default, &hydrated)).len());
    });
    group.bench_function("specs_plan", |b| {
        b.iter(|| black_box(catalog.specs(PermissionMode::Plan)).len());
    });
    group.finish();
}

criterion_group!(benches, lookup, advertised);
criterion_main!(benches);

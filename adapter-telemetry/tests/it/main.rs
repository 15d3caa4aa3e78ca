//! Integration tests of the telemetry: local OTLP receivers (HTTP and gRPC), the
//! Prometheus text, delegation links and back-pressure.

// Tests fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod backpressure;
mod delegation;
mod otlp;
mod prometheus;
mod receiver;
mod support;

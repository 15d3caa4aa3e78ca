//! Integration tests of the telemetry: local OTLP receivers (HTTP and gRPC), the
//! Prometheus text, delegation links and back-pressure.

mod backpressure;
mod delegation;
mod otlp;
mod prometheus;
mod receiver;
mod support;

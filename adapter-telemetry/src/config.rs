//! [`OtlpConfig`]: what the standard `OTEL_*` variables ask for, read through a lookup
//! function so that tests never touch the process environment.
//!
//! Telemetry is off unless an endpoint variable is set; `OTEL_SDK_DISABLED=true`
//! turns everything off (the Prometheus page included). A value that cannot be used
//! is an error naming the variable and what is expected: an operator who set a
//! variable wants it honoured, so a typo must not silently switch exporting off.

use std::time::Duration;

/// `OTEL_EXPORTER_OTLP_ENDPOINT`: the base URL of both signals.
pub const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the full URL of the traces signal.
pub const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`: the full URL of the metrics signal.
pub const METRICS_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the default) or `grpc`.
pub const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// `OTEL_SERVICE_NAME`: the `service.name` resource attribute (default `mecated`).
pub const SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
/// `OTEL_RESOURCE_ATTRIBUTES`: `key=value` pairs separated by commas.
pub const RESOURCE_ATTRIBUTES: &str = "OTEL_RESOURCE_ATTRIBUTES";
/// `OTEL_SDK_DISABLED`: `true` turns telemetry off whatever else is set.
pub const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
/// `OTEL_EXPORTER_OTLP_TIMEOUT`: the time limit of one export, in milliseconds.
pub const TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";

/// The service name when `OTEL_SERVICE_NAME` is not set.
pub const DEFAULT_SERVICE_NAME: &str = "mecated";

/// The time limit of one export when `OTEL_EXPORTER_OTLP_TIMEOUT` is not set.
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The wire protocol of the OTLP exporters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: `POST <endpoint>/v1/traces` and `/v1/metrics`.
    HttpProtobuf,
    /// `grpc`: the collector's gRPC services (plain text: `http://` endpoints only).
    Grpc,
}

/// What the environment asks the telemetry to do (the default: nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TelemetryEnv {
    /// `OTEL_SDK_DISABLED=true`: no telemetry at all.
    pub disabled: bool,
    /// The OTLP exporters, when an endpoint is set (and the SDK is not disabled).
    pub otlp: Option<OtlpConfig>,
    /// The resource: `service.name` and the other attributes.
    pub resource: ResourceConfig,
}

/// The resource attributes every span and metric carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceConfig {
    /// `service.name`.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, in order (`service.name` there is overridden by
    /// `OTEL_SERVICE_NAME`).
    pub attributes: Vec<(String, String)>,
}

impl Default for ResourceConfig {
    fn default() -> Self {
        Self {
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            attributes: Vec::new(),
        }
    }
}

/// Where and how the OTLP exporters send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The protocol.
    pub protocol: Protocol,
    /// The traces URL (`None`: traces are not exported).
    pub traces_endpoint: Option<String>,
    /// The metrics URL (`None`: metrics are not exported over OTLP).
    pub metrics_endpoint: Option<String>,
    /// The time limit of one export.
    pub timeout: Duration,
}

/// A variable whose value cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?} cannot be used: {expected}")]
#[non_exhaustive]
pub struct ConfigError {
    /// The variable.
    pub variable: &'static str,
    /// Its value (endpoints and attributes carry no secrets by convention; headers,
    /// which may, are never read here).
    pub value: String,
    /// What is expected.
    pub expected: String,
}

impl ConfigError {
    fn new(variable: &'static str, value: &str, expected: impl Into<String>) -> Self {
        Self {
            variable,
            value: value.to_owned(),
            expected: expected.into(),
        }
    }
}

impl TelemetryEnv {
    /// Reads the `OTEL_*` variables through `lookup` (an empty value counts as unset).
    ///
    /// # Errors
    /// [`ConfigError`] naming the first variable whose value cannot be used.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let disabled = match get(SDK_DISABLED) {
            None => false,
            Some(value) => parse_bool(SDK_DISABLED, &value)?,
        };
        let resource = resource(get(SERVICE_NAME), get(RESOURCE_ATTRIBUTES))?;
        if disabled {
            return Ok(Self {
                disabled,
                otlp: None,
                resource,
            });
        }
        let protocol = match get(PROTOCOL).as_deref().map(str::trim) {
            None | Some("http/protobuf") => Protocol::HttpProtobuf,
            Some("grpc") => Protocol::Grpc,
            Some(other) => {
                return Err(ConfigError::new(
                    PROTOCOL,
                    other,
                    "expected http/protobuf or grpc (http/json is not supported)",
                ));
            }
        };
        let base = get(ENDPOINT)
            .map(|value| check_url(ENDPOINT, &value, protocol))
            .transpose()?;
        let signal = |variable: &'static str, path: &str| -> Result<Option<String>, ConfigError> {
            match get(variable) {
                Some(value) => check_url(variable, &value, protocol).map(Some),
                None => Ok(base.as_ref().map(|base| match protocol {
                    Protocol::HttpProtobuf => format!("{}{path}", base.trim_end_matches('/')),
                    Protocol::Grpc => base.clone(),
                })),
            }
        };
        let traces_endpoint = signal(TRACES_ENDPOINT, "/v1/traces")?;
        let metrics_endpoint = signal(METRICS_ENDPOINT, "/v1/metrics")?;
        let timeout = match get(TIMEOUT) {
            None => DEFAULT_EXPORT_TIMEOUT,
            Some(value) => match value.trim().parse::<u64>() {
                Ok(millis) if millis > 0 => Duration::from_millis(millis),
                _ => {
                    return Err(ConfigError::new(
                        TIMEOUT,
                        &value,
                        "expected a positive number of milliseconds",
                    ));
                }
            },
        };
        let otlp = (traces_endpoint.is_some() || metrics_endpoint.is_some()).then_some(OtlpConfig {
            protocol,
            traces_endpoint,
            metrics_endpoint,
            timeout,
        });
        Ok(Self {
            disabled,
            otlp,
            resource,
        })
    }

    /// Reads the process environment.
    ///
    /// # Errors
    /// As [`TelemetryEnv::from_lookup`].
    pub fn from_process() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }
}

fn parse_bool(variable: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ConfigError::new(variable, value, "expected true or false")),
    }
}

/// An `http://` or `https://` URL with a host; `https` only over HTTP (this build's
/// gRPC exporter has no TLS).
fn check_url(variable: &'static str, value: &str, protocol: Protocol) -> Result<String, ConfigError> {
    let value = value.trim();
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"));
    let host = rest.map(|rest| rest.split(['/', '?', '#']).next().unwrap_or(""));
    match host {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => {}
        _ => {
            return Err(ConfigError::new(
                variable,
                value,
                "expected an http:// or https:// URL with a host, such as http://localhost:4318",
            ));
        }
    }
    if protocol == Protocol::Grpc && value.starts_with("https://") {
        return Err(ConfigError::new(
            variable,
            value,
            "gRPC is exported without TLS here: use an http:// endpoint, or \
             OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf for https",
        ));
    }
    Ok(value.to_owned())
}

fn resource(service_name: Option<String>, attributes: Option<String>) -> Result<ResourceConfig, ConfigError> {
    let mut pairs = Vec::new();
    if let Some(text) = &attributes {
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(ConfigError::new(
                    RESOURCE_ATTRIBUTES,
                    text,
                    format!("expected key=value pairs separated by commas; {item:?} has no '='"),
                ));
            };
            let key = key.trim();
            if key.is_empty() {
                return Err(ConfigError::new(
                    RESOURCE_ATTRIBUTES,
                    text,
                    format!("expected key=value pairs separated by commas; {item:?} has an empty key"),
                ));
            }
            pairs.push((key.to_owned(), percent_decode(value.trim())));
        }
    }
    let from_attributes = pairs
        .iter()
        .rev()
        .find(|(key, _)| key == "service.name")
        .map(|(_, value)| value.clone());
    let service_name = service_name
        .map(|name| name.trim().to_owned())
        .or(from_attributes)
        .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
    pairs.retain(|(key, _)| key != "service.name");
    Ok(ResourceConfig {
        service_name,
        attributes: pairs,
    })
}

/// `%XX` escapes of `OTEL_RESOURCE_ATTRIBUTES` values (the W3C baggage octets); an
/// escape that is not two hex digits, or bytes that are not UTF-8, stay as written.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'%'));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| value.to_owned())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Result<TelemetryEnv, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TelemetryEnv::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn nothing_set_means_no_exporter() {
        let env = env(&[]).unwrap();
        assert!(!env.disabled);
        assert_eq!(env.otlp, None);
        assert_eq!(env.resource.service_name, "mecated");
    }

    #[test]
    fn a_base_endpoint_gives_both_signal_paths_over_http() {
        let otlp = env(&[(ENDPOINT, "http://127.0.0.1:4318/")])
            .unwrap()
            .otlp
            .unwrap();
        assert_eq!(otlp.protocol, Protocol::HttpProtobuf);
        assert_eq!(
            otlp.traces_endpoint.as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            otlp.metrics_endpoint.as_deref(),
            Some("http://127.0.0.1:4318/v1/metrics")
        );
        assert_eq!(otlp.timeout, DEFAULT_EXPORT_TIMEOUT);
    }

    #[test]
    fn signal_endpoints_are_used_as_given_and_alone() {
        let otlp = env(&[(TRACES_ENDPOINT, "http://h:1/t")]).unwrap().otlp.unwrap();
        assert_eq!(otlp.traces_endpoint.as_deref(), Some("http://h:1/t"));
        assert_eq!(otlp.metrics_endpoint, None);
        let grpc = env(&[(ENDPOINT, "http://h:4317"), (PROTOCOL, "grpc")])
            .unwrap()
            .otlp
            .unwrap();
        assert_eq!(grpc.protocol, Protocol::Grpc);
        assert_eq!(grpc.traces_endpoint.as_deref(), Some("http://h:4317"));
    }

    #[test]
    fn bad_values_name_the_variable_and_what_is_expected() {
        let error = env(&[(ENDPOINT, "localhost:4318")]).unwrap_err();
        assert_eq!(error.variable, ENDPOINT);
        assert!(error.to_string().contains("http:// or https://"), "{error}");
        let error = env(&[(ENDPOINT, "http://h"), (PROTOCOL, "http/json")]).unwrap_err();
        assert_eq!(error.variable, PROTOCOL);
        assert!(error.to_string().contains("http/protobuf or grpc"), "{error}");
        let error = env(&[(SDK_DISABLED, "yes")]).unwrap_err();
        assert_eq!(error.variable, SDK_DISABLED);
        let error = env(&[(RESOURCE_ATTRIBUTES, "team=a,broken")]).unwrap_err();
        assert_eq!(error.variable, RESOURCE_ATTRIBUTES);
        assert!(error.to_string().contains("\"broken\""), "{error}");
        let error = env(&[(ENDPOINT, "https://h:4317"), (PROTOCOL, "grpc")]).unwrap_err();
        assert!(error.to_string().contains("without TLS"), "{error}");
        let error = env(&[(ENDPOINT, "http://h"), (TIMEOUT, "0")]).unwrap_err();
        assert_eq!(error.variable, TIMEOUT);
    }

    #[test]
    fn disabled_wins_over_an_endpoint() {
        let env = env(&[(SDK_DISABLED, "TRUE"), (ENDPOINT, "http://h:4318")]).unwrap();
        assert!(env.disabled);
        assert_eq!(env.otlp, None);
    }

    #[test]
    fn resource_attributes_are_decoded_and_the_service_name_wins() {
        let env = env(&[
            (
                RESOURCE_ATTRIBUTES,
                "deployment.environment=prod, team=a%20b,service.name=x",
            ),
            (SERVICE_NAME, "agents"),
        ])
        .unwrap();
        assert_eq!(env.resource.service_name, "agents");
        assert_eq!(
            env.resource.attributes,
            vec![
                ("deployment.environment".to_owned(), "prod".to_owned()),
                ("team".to_owned(), "a b".to_owned())
            ]
        );
        let from_attributes = super::resource(None, Some("service.name=x".to_owned())).unwrap();
        assert_eq!(from_attributes.service_name, "x");
    }
}

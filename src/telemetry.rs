//! Logging (text or JSON, to stderr) and optional OpenTelemetry trace export over OTLP/gRPC.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::config::{LogFormat, TelemetryConfig};

/// The installed telemetry; [`Telemetry::shutdown`] flushes exported traces.
pub(crate) struct Telemetry {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the global subscriber. Must run inside the Tokio runtime when OTLP is on.
    pub(crate) fn init(config: &TelemetryConfig) -> anyhow::Result<Self> {
        let filter =
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log_level));
        // Colours only on a terminal: redirected to a file, escape codes are noise.
        let fmt = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
        let fmt = if config.log_format == LogFormat::Json {
            fmt.json().boxed()
        } else {
            fmt.boxed()
        };
        let provider = if config.otlp_endpoint.is_empty() {
            None
        } else {
            Some(tracer_provider(config)?)
        };
        // The global provider is set before the subscriber starts using it.
        let otel = provider.as_ref().map(|provider| {
            opentelemetry::global::set_tracer_provider(provider.clone());
            tracing_opentelemetry::layer().with_tracer(provider.tracer(config.service_name.clone()))
        });
        tracing_subscriber::registry()
            .with(filter)
            .with(fmt)
            .with(otel)
            .try_init()?;
        Ok(Self { provider })
    }

    /// Flushes and stops trace export.
    pub(crate) async fn shutdown(self) {
        if let Some(provider) = self.provider {
            let _ = tokio::task::spawn_blocking(move || {
                provider.shutdown_with_timeout(Duration::from_secs(5))
            })
            .await;
        }
    }
}

/// Batched OTLP/gRPC span export to the configured endpoint.
fn tracer_provider(
    config: &TelemetryConfig,
) -> anyhow::Result<opentelemetry_sdk::trace::SdkTracerProvider> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(&config.otlp_endpoint)
        .with_timeout(Duration::from_secs(5))
        .build()?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(config.service_name.clone())
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

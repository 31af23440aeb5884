//! Logging (text or JSON, to stderr) and optional OpenTelemetry trace export over OTLP/gRPC.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::config::TelemetryConfig;

/// The installed telemetry; [`Telemetry::shutdown`] flushes exported traces.
pub struct Telemetry {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the global subscriber. Must run inside the Tokio runtime when OTLP is on.
    pub fn init(config: &TelemetryConfig) -> anyhow::Result<Self> {
        let filter =
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log_level));
        let fmt = if config.log_format == "json" {
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(std::io::stderr)
                .boxed()
        } else {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .boxed()
        };
        if config.otlp_endpoint.is_empty() {
            tracing_subscriber::registry()
                .with(filter)
                .with(fmt)
                .try_init()?;
            return Ok(Self { provider: None });
        }
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
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer(config.service_name.clone());
        opentelemetry::global::set_tracer_provider(provider.clone());
        let otel = tracing_opentelemetry::layer().with_tracer(tracer);
        tracing_subscriber::registry()
            .with(filter)
            .with(fmt)
            .with(otel)
            .try_init()?;
        Ok(Self {
            provider: Some(provider),
        })
    }

    /// Flushes and stops trace export.
    pub async fn shutdown(self) {
        if let Some(provider) = self.provider {
            let _ = tokio::task::spawn_blocking(move || {
                provider.shutdown_with_timeout(Duration::from_secs(5))
            })
            .await;
        }
    }
}

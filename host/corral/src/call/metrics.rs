//! The keys of a tool's per-call metrics (`corral_calls_total`,
//! `corral_call_duration_seconds`, `corral_fuel_consumed_total`, each
//! labelled `tool`), built once per tool in its runtime state so that a
//! call neither hashes a key nor allocates a label. Each call still asks the
//! `metrics` facade for the recorder installed at that moment, so a recorder
//! installed after the host was built sees every later call.

use std::sync::Arc;
use std::time::Duration;

use metrics::{Key, Label, Level, Metadata};

/// What the `metrics` macros would give these metrics: INFO, this module.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// One tool's per-call metric keys.
pub(crate) struct CallMetrics {
    calls: Key,
    duration: Key,
    fuel: Key,
}

impl CallMetrics {
    /// The keys for the tool named `label`.
    pub(crate) fn new(label: Arc<str>) -> Self {
        let key =
            |name: &'static str| Key::from_parts(name, vec![Label::new("tool", label.clone())]);
        Self {
            calls: key("corral_calls_total"),
            duration: key("corral_call_duration_seconds"),
            fuel: key("corral_fuel_consumed_total"),
        }
    }

    /// Counts one call that took `took`, and the fuel units it consumed when
    /// it succeeded (`fuel`).
    pub(crate) fn record(&self, took: Duration, fuel: Option<u64>) {
        metrics::with_recorder(|recorder| {
            recorder
                .register_counter(&self.calls, &METADATA)
                .increment(1);
            recorder
                .register_histogram(&self.duration, &METADATA)
                .record(took.as_secs_f64());
            if let Some(fuel) = fuel {
                recorder
                    .register_counter(&self.fuel, &METADATA)
                    .increment(fuel);
            }
        });
    }
}

//! The leak scan of what a script hands back: its result, its console lines
//! and its uncaught error pass the scan of every plugin whose tools it
//! called, as those tools' own outputs did. A tool's output was already
//! scanned for its plugin's secrets before the script saw it; this second
//! scan catches what a script could assemble from pieces (a secret split
//! over two outputs, or encoded by the script), in the forms the scan knows.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use super::listing::CallRecord;
use crate::model::names::MAX_NAME_LEN;
use corral_sandbox::Redactor;

/// The redactor of the plugin serving a tool, by tool name (`None` for a
/// tool without secrets, or one no longer served).
pub(crate) type RedactorOf = Arc<dyn Fn(&str) -> Option<Arc<Redactor>> + Send + Sync>;

/// One script's scan: the redactors of the plugins it called, and where
/// the count of redactions goes (the run's audit record).
pub(super) struct Scan {
    redactors: Vec<Arc<Redactor>>,
    count: Arc<AtomicU32>,
}

impl Scan {
    /// The scan of a script that called `tools`, counting into `count`.
    pub(super) fn of<'a>(
        tools: impl IntoIterator<Item = &'a str>,
        redactor_of: &RedactorOf,
        count: Arc<AtomicU32>,
    ) -> Self {
        let mut redactors: Vec<Arc<Redactor>> = Vec::new();
        for redactor in tools.into_iter().filter_map(|tool| redactor_of(tool)) {
            if !redactors.iter().any(|r| Arc::ptr_eq(r, &redactor)) {
                redactors.push(redactor);
            }
        }
        Self { redactors, count }
    }

    /// `text` with every form of a secret replaced.
    pub(super) fn text(&self, text: String) -> String {
        let mut text = text;
        for redactor in &self.redactors {
            let (out, found) = redactor.text(&text);
            if found > 0 {
                self.count
                    .fetch_add(u32::try_from(found).unwrap_or(u32::MAX), Ordering::Relaxed);
                text = out.into_owned();
            }
        }
        text
    }

    /// `records` with each tool name (the script's text: any string it
    /// called a tool by) cut to the longest tool name, escaped and scanned.
    pub(super) fn records(&self, records: Vec<CallRecord>) -> Vec<CallRecord> {
        records
            .into_iter()
            .map(|mut record| {
                let cut: String = record.tool.chars().take(MAX_NAME_LEN).collect();
                record.tool = self.text(corral_names::text::escape(&cut).into_owned());
                record
            })
            .collect()
    }

    /// `value` with every form of a secret replaced in its strings and keys.
    pub(super) fn value(&self, value: Value) -> Value {
        if self.redactors.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.text(k), self.value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

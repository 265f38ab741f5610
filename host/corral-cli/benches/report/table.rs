//! The report's rows and their Markdown: each figure, the baseline it is
//! compared with (measured in the same run), the ratio, and the target.

/// One row of the report.
pub struct Row {
    /// What was measured.
    pub figure: String,
    /// The figure, with its unit.
    pub value: Value,
    /// What it is compared with, and that figure.
    pub baseline: Option<(String, Value)>,
    /// The target, as text.
    pub target: String,
    /// Whether the target is met.
    pub met: Option<bool>,
}

/// A figure and its unit.
#[derive(Clone, Copy)]
pub enum Value {
    /// Microseconds.
    Micros(f64),
    /// Milliseconds.
    Millis(f64),
    /// Calls per second.
    PerSecond(f64),
    /// Mebibytes.
    Mebibytes(f64),
}

impl Value {
    fn number(self) -> f64 {
        match self {
            Value::Micros(v) | Value::Millis(v) | Value::PerSecond(v) | Value::Mebibytes(v) => v,
        }
    }

    fn text(self) -> String {
        match self {
            Value::Micros(v) => format!("{v:.1} µs"),
            Value::Millis(v) => format!("{v:.2} ms"),
            Value::PerSecond(v) => format!("{v:.0}/s"),
            Value::Mebibytes(v) => format!("{v:.0} MiB"),
        }
    }
}

/// Every row, in order.
#[derive(Default)]
pub struct Report {
    rows: Vec<Row>,
}

impl Report {
    /// Adds a row.
    pub fn push(&mut self, row: Row) {
        eprintln!(
            "{}: {}{}",
            row.figure,
            row.value.text(),
            row.baseline
                .as_ref()
                .map(|(name, v)| format!(" (baseline {name}: {})", v.text()))
                .unwrap_or_default()
        );
        self.rows.push(row);
    }

    /// The rows as a Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| figure | value | same-run baseline | ratio | target | met |\n|---|---|---|---|---|---|\n",
        );
        for row in &self.rows {
            let (baseline, ratio) = match &row.baseline {
                Some((name, value)) => (
                    format!("{name}: {}", value.text()),
                    format!("{:.2}×", row.value.number() / value.number()),
                ),
                None => ("—".into(), "—".into()),
            };
            let met = match row.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "—",
            };
            out.push_str(&format!(
                "| {} | {} | {baseline} | {ratio} | {} | {met} |\n",
                row.figure,
                row.value.text(),
                row.target
            ));
        }
        out
    }
}

/// The median of `values` (an even count takes the upper middle value).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The median of `samples` (sorted in place), in microseconds; `samples`
/// are nanoseconds.
pub fn p50_micros(samples: &mut [u64]) -> f64 {
    samples.sort_unstable();
    samples[samples.len() / 2] as f64 / 1000.0
}

/// The 99th percentile of `samples` (sorted in place), in microseconds;
/// `samples` are nanoseconds.
pub fn p99_micros(samples: &mut [u64]) -> f64 {
    samples.sort_unstable();
    samples[(samples.len() * 99 / 100).min(samples.len() - 1)] as f64 / 1000.0
}

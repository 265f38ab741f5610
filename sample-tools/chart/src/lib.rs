//! corral sample plugin: a bar chart of numbers as a PNG image, returned
//! with a sentence about it and the data as structured content (contract
//! 0.3.0's parts). The drawing is `render.rs`: plotters' bitmap backend,
//! text from a font bundled in `fonts/` (no system fonts in a sandbox).

mod render;
mod text;

use corral_guest::{Audience, Part, ToolError, ToolOutput, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn default_width() -> u32 {
    800
}

fn default_height() -> u32 {
    500
}

#[derive(Deserialize, JsonSchema)]
struct Chart {
    /// The chart's title.
    title: String,
    /// One label per bar, in order.
    labels: Vec<String>,
    /// One value per bar, in order (finite numbers; negative ones hang
    /// below the axis).
    values: Vec<f64>,
    /// Width of the image in pixels, 64 to 2048 (default 800).
    #[serde(default = "default_width")]
    width: u32,
    /// Height of the image in pixels, 64 to 2048 (default 500).
    #[serde(default = "default_height")]
    height: u32,
}

/// One bar, as the structured content lists it.
#[derive(Serialize)]
struct Bar<'a> {
    label: &'a str,
    value: f64,
}

/// Draws a bar chart of labelled numbers as a PNG image. Returns the image,
/// a sentence naming the largest and smallest bars, and the data.
#[tool(
    category = "data",
    keywords("chart", "plot", "graph", "png"),
    idempotent,
    latency = "medium"
)]
fn bar_chart(args: Chart) -> Result<ToolOutput, ToolError> {
    let png = render::bar_chart_png(
        &args.title,
        &args.labels,
        &args.values,
        args.width,
        args.height,
    )
    .map_err(ToolError::invalid)?;
    let bars: Vec<Bar<'_>> = args
        .labels
        .iter()
        .zip(&args.values)
        .map(|(label, &value)| Bar { label, value })
        .collect();
    let by_value = |a: &&Bar<'_>, b: &&Bar<'_>| a.value.total_cmp(&b.value);
    let (Some(top), Some(bottom)) = (bars.iter().max_by(by_value), bars.iter().min_by(by_value))
    else {
        return Err(ToolError::invalid("a chart needs at least one bar"));
    };
    let summary = format!(
        "A {}x{} bar chart of {} values: the largest is {} ({}), the smallest {} ({}).",
        args.width,
        args.height,
        bars.len(),
        top.label,
        top.value,
        bottom.label,
        bottom.value
    );
    Ok(ToolOutput::new()
        .with(Part::text(summary))
        .with(Part::image("image/png", png).for_audience(&[Audience::User, Audience::Assistant]))
        .with(Part::json(&serde_json_value(&args.title, &bars))?))
}

/// The structured content: `{"title", "bars": [{"label", "value"}]}`.
fn serde_json_value<'a>(title: &'a str, bars: &'a [Bar<'a>]) -> impl Serialize + 'a {
    #[derive(Serialize)]
    struct Data<'a> {
        title: &'a str,
        bars: &'a [Bar<'a>],
    }
    Data { title, bars }
}

corral_guest::plugin!(bar_chart);

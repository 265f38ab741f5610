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
    // The file, kept by the host under a `corral://` URI: the client gets a
    // link and reads it with `resources/read` when it wants the file.
    let uri = format!(
        "corral://chart/{}-{:016x}.png",
        slug(&args.title),
        fnv1a(&png)
    );
    let size = png.len() as u64;
    Ok(ToolOutput::new()
        .with(Part::text(summary))
        .with(
            Part::image("image/png", png.clone())
                .for_audience(&[Audience::User, Audience::Assistant]),
        )
        .with(Part::json(&serde_json_value(&args.title, &bars))?)
        .with(Part::link(&uri, "chart.png").described(
            "The chart as a PNG file",
            Some("image/png"),
            Some(size),
        ))
        .with(Part::resource_blob(uri, Some("image/png"), png)))
}

/// `title` as a file-name stem: lowercase ASCII letters and digits, other
/// runs as one `-`, at most 40 characters; `chart` when nothing is left.
fn slug(title: &str) -> String {
    let mut slug = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "chart".into()
    } else {
        slug.into()
    }
}

/// FNV-1a of `bytes`: a name that differs when the picture does.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
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

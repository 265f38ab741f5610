//! Render a PNG bar chart with `plotters`, without any system font.
//!
//! The text is drawn by `text.rs` (a `DrawingBackend` over plotters'
//! bitmap backend, with the bundled font); everything else is plain
//! plotters, and the PNG is encoded with the `png` crate (plotters'
//! encoder does not build for wasm32).

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::FontTransform;

use crate::text::{BmError, TextBackend, fit_text, font, layout, text_width};

/// The fewest bars a chart has: 1.
pub const MIN_BARS: usize = 1;
/// The most bars a chart has: 50.
pub const MAX_BARS: usize = 50;
/// The narrowest side of an image, in pixels: 64.
pub const MIN_SIDE: u32 = 64;
/// The widest side of an image, in pixels: 2 048.
pub const MAX_SIDE: u32 = 2048;

fn validate(labels: &[String], values: &[f64], width: u32, height: u32) -> Result<(), String> {
    if labels.len() != values.len() {
        return Err(format!(
            "labels and values must have the same length (got {} labels, {} values)",
            labels.len(),
            values.len()
        ));
    }
    if !(MIN_BARS..=MAX_BARS).contains(&values.len()) {
        return Err(format!(
            "number of bars must be between {MIN_BARS} and {MAX_BARS} (got {})",
            values.len()
        ));
    }
    if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(format!(
            "value #{i} (label {:?}) is not a finite number: {v}",
            labels[i]
        ));
    }
    for (name, side) in [("width", width), ("height", height)] {
        if !(MIN_SIDE..=MAX_SIDE).contains(&side) {
            return Err(format!(
                "{name} must be between {MIN_SIDE} and {MAX_SIDE} pixels (got {side})"
            ));
        }
    }
    Ok(())
}

/// Y-axis range: always includes 0, padded by 5% away from 0.
fn y_range(values: &[f64]) -> Result<(f64, f64), String> {
    let lo = values.iter().copied().fold(0.0f64, f64::min);
    let hi = values.iter().copied().fold(0.0f64, f64::max);
    if lo == hi {
        return Ok((0.0, 1.0));
    }
    let span = hi - lo;
    if !span.is_finite() {
        return Err("the range of values is too large to plot".to_string());
    }
    let pad = span * 0.05;
    let lo = if lo < 0.0 { lo - pad } else { 0.0 };
    let hi = if hi > 0.0 { hi + pad } else { 0.0 };
    Ok((lo, hi))
}

/// Tick label text for a value on an axis spanning `span`.
fn format_tick(v: f64, span: f64) -> String {
    let mag = v.abs().max(span);
    if !(1e-4..1e7).contains(&mag) {
        if v == 0.0 {
            return "0".to_string();
        }
        return format!("{v:.2e}");
    }
    // Ticks are ~span/10 apart: show enough decimals to tell them apart.
    let step = span / 10.0;
    let decimals = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
    let s = format!("{v:.decimals$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string() // "-0.0" -> "0.0"
    } else {
        s
    }
}

/// Render a bar chart as PNG bytes (8-bit RGB).
///
/// One bar per value, labelled on the x axis with the matching entry of
/// `labels`; the y axis always includes 0, so negative values hang below it.
/// Long labels and titles are shortened with "…"; x labels are turned
/// vertical when they do not fit side by side.
pub fn bar_chart_png(
    title: &str,
    labels: &[String],
    values: &[f64],
    width: u32,
    height: u32,
) -> Result<Vec<u8>, String> {
    validate(labels, values, width, height)?;
    let font = font()?;
    let (y_lo, y_hi) = y_range(values)?;
    let n = values.len();

    // Sizes scale with the image; everything in pixels.
    let base = width.min(height) as f32;
    let title_px = (base / 16.0).clamp(10.0, 40.0);
    let label_px = (base / 36.0).clamp(8.0, 22.0);
    let margin = (base / 40.0).clamp(3.0, 20.0).round() as u32;
    let tick = (label_px / 3.0).round() as u32;

    let title = fit_text(
        font,
        title_px,
        title.trim(),
        width as f32 - 2.0 * margin as f32,
    );

    // Y label area: widest tick label we may print, plus the tick and gaps.
    let span = y_hi - y_lo;
    let y_label_w = [y_lo, y_hi, (y_lo + y_hi) / 2.0]
        .iter()
        .map(|&v| text_width(font, label_px, &format_tick(v, span)))
        .fold(0.0f32, f32::max);
    let y_area = (y_label_w + 3.0 * tick as f32 + 4.0)
        .min(width as f32 * 0.35)
        .ceil() as u32;

    // X labels: horizontal if they fit in their slot, else rotated.
    let line_h = layout(font, label_px, "Ag").height;
    let plot_w = (width.saturating_sub(y_area + 2 * margin)).max(1) as f32;
    let slot = plot_w / n as f32;
    let widest = labels
        .iter()
        .map(|l| text_width(font, label_px, l.trim()))
        .fold(0.0f32, f32::max);
    let rotate = widest > slot * 0.92;
    let (x_area, max_label_w) = if rotate {
        let avail = (height as f32 * 0.3).floor();
        let area = (widest + 3.0 * tick as f32 + 2.0).min(avail);
        (area, area - 3.0 * tick as f32 - 2.0)
    } else {
        (line_h + 3.0 * tick as f32 + 2.0, slot)
    };
    let x_labels: Vec<String> = labels
        .iter()
        .map(|l| fit_text(font, label_px, l.trim(), max_label_w.max(1.0)))
        .collect();
    // Rotated labels need about one line height each; thin them out if needed.
    let max_x_labels = if rotate {
        ((plot_w / (line_h * 1.05)).floor() as usize).clamp(1, n)
    } else {
        n
    };

    let mut buf = vec![0u8; width as usize * height as usize * 3];
    {
        let backend = TextBackend {
            inner: BitMapBackend::with_buffer(&mut buf, (width, height)),
            font,
        };
        let root = backend.into_drawing_area();
        let err = |e: DrawingAreaErrorKind<BmError>| format!("drawing failed: {e}");
        root.fill(&WHITE).map_err(err)?;

        let label_style = ("sans-serif", label_px as f64)
            .into_font()
            .color(&RGBColor(40, 40, 40));
        let x_label_style = if rotate {
            label_style.clone().transform(FontTransform::Rotate270)
        } else {
            label_style.clone()
        };

        let mut builder = ChartBuilder::on(&root);
        builder
            .margin(margin)
            .x_label_area_size(x_area.ceil() as u32)
            .y_label_area_size(y_area);
        if !title.is_empty() {
            builder.caption(
                &title,
                ("sans-serif", title_px as f64).into_font().color(&BLACK),
            );
        }
        let mut chart = builder
            .build_cartesian_2d((0i32..(n as i32 - 1)).into_segmented(), y_lo..y_hi)
            .map_err(err)?;

        let plot_h = chart.plotting_area().dim_in_pixel().1 as f32;
        let y_ticks = ((plot_h / (label_px * 2.5)) as usize).clamp(2, 12);
        let x_fmt = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => usize::try_from(*i)
                .ok()
                .and_then(|i| x_labels.get(i).cloned())
                .unwrap_or_default(),
            SegmentValue::Last => String::new(),
        };
        let y_fmt = |v: &f64| format_tick(*v, span);

        chart
            .configure_mesh()
            .disable_x_mesh()
            .bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(TRANSPARENT)
            .axis_style(RGBColor(80, 80, 80))
            .set_all_tick_mark_size(tick)
            .x_labels(max_x_labels)
            .y_labels(y_ticks)
            .x_label_style(x_label_style)
            .y_label_style(label_style)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()
            .map_err(err)?;

        let bar_style = RGBColor(70, 130, 180).filled();
        let gap = ((slot * 0.12).round() as u32).min(20);
        chart
            .draw_series(values.iter().enumerate().map(|(i, &v)| {
                let i = i as i32;
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v),
                    ],
                    bar_style,
                );
                bar.set_margin(0, 0, gap, gap);
                bar
            }))
            .map_err(err)?;

        if y_lo < 0.0 {
            // Baseline at zero so negative bars read as "below".
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(SegmentValue::Exact(0), 0.0), (SegmentValue::Last, 0.0)],
                    RGBColor(80, 80, 80),
                )))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    encode_png(&buf, width, height)
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Balanced);
    let mut writer = encoder
        .write_header()
        .map_err(|e| format!("PNG encoding failed: {e}"))?;
    writer
        .write_image_data(rgb)
        .map_err(|e| format!("PNG encoding failed: {e}"))?;
    writer
        .finish()
        .map_err(|e| format!("PNG encoding failed: {e}"))?;
    Ok(out)
}

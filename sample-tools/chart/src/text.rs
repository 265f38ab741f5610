//! Text for plotters on `wasm32-wasip2`, without any system font.
//!
//! Text is rasterised with `ab_glyph` from a font bundled into the binary
//! (`fonts/DejaVuSans-subset.ttf`, licence in `fonts/LICENSE`), so this works
//! unchanged on `wasm32-wasip2`, where plotters 0.3.7 offers no usable font
//! backend (its `ab_glyph` feature is compiled only for non-wasm32 targets and
//! its fallback "naive" font panics when asked to draw text).
//!
//! The trick is `TextBackend`: a `DrawingBackend` that forwards every
//! drawing call to plotters' `BitMapBackend` but implements `draw_text` and
//! `estimate_text_size` itself. Plotters routes all captions and axis labels
//! through those two backend methods, so the chart code stays plain plotters.

use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, Glyph, PxScale, ScaleFont, point};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// DejaVu Sans 2.37, subset to Latin-1, Latin Extended-A, Greek, common
/// punctuation and a few symbols (about 47 KB instead of 760 KB).
/// Characters outside the subset render as an empty gap (the subset's
/// `.notdef` glyph has no outline).
static FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

pub(crate) fn font() -> Result<&'static FontRef<'static>, String> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(FONT_BYTES).ok())
        .as_ref()
        .ok_or_else(|| "bundled font could not be parsed".to_string())
}

/// A single line of text laid out at a pixel size; glyph positions are
/// relative to the top-left corner of its box (`width` x `height`).
pub(crate) struct Line {
    glyphs: Vec<Glyph>,
    width: f32,
    /// Its height in pixels.
    pub(crate) height: f32,
}

/// Lay out `text` with line height `px` (ab_glyph's `PxScale` = ascent - descent).
pub(crate) fn layout(font: &FontRef<'static>, px: f32, text: &str) -> Line {
    let scaled = font.as_scaled(PxScale::from(px));
    let ascent = scaled.ascent();
    let mut x = 0.0f32;
    let mut prev = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let c = if c.is_control() { ' ' } else { c };
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            x += scaled.kern(p, id);
        }
        glyphs.push(id.with_scale_and_position(px, point(x, ascent)));
        x += scaled.h_advance(id);
        prev = Some(id);
    }
    Line {
        glyphs,
        width: x.max(0.0),
        height: ascent - scaled.descent(),
    }
}

pub(crate) fn text_width(font: &FontRef<'static>, px: f32, text: &str) -> f32 {
    layout(font, px, text).width
}

/// Shorten `text` with a trailing ellipsis so that it fits in `max_w` pixels.
pub(crate) fn fit_text(font: &FontRef<'static>, px: f32, text: &str, max_w: f32) -> String {
    if text_width(font, px, text) <= max_w {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0usize, chars.len());
    // Largest prefix length whose "prefix…" fits.
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let candidate: String = chars[..mid].iter().collect::<String>() + "…";
        if text_width(font, px, &candidate) <= max_w {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        "…".to_string()
    } else {
        chars[..lo]
            .iter()
            .collect::<String>()
            .trim_end()
            .to_string()
            + "…"
    }
}

/// `BitMapBackend` plus real text rendering from the bundled font.
///
/// Text anchors are applied to the box of the text *after* rotation (plotters'
/// default applies them before rotating, which puts rotated x-axis labels on
/// top of the axis), so a `Rotate270` label anchored `(Center, Top)` hangs
/// below its tick, reading bottom-to-top and ending at the axis.
pub(crate) struct TextBackend<'a> {
    /// Draws everything but text.
    pub(crate) inner: BitMapBackend<'a>,
    /// The bundled font.
    pub(crate) font: &'static FontRef<'static>,
}

/// The bitmap backend's error type.
pub(crate) type BmError = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

impl<'a> DrawingBackend for TextBackend<'a> {
    type ErrorType = BmError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        (iw, ih): (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<BmError>> {
        self.inner.blit_bitmap(pos, (iw, ih), src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<BmError>> {
        // Unrotated size, as plotters' default implementation reports it.
        let line = layout(self.font, style.size() as f32, text);
        Ok((line.width.ceil() as u32, line.height.ceil() as u32))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<BmError>> {
        let color = style.color();
        if color.alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let line = layout(self.font, style.size() as f32, text);
        let (w, h) = (line.width.ceil() as i32, line.height.ceil() as i32);
        let trans = style.transform();
        // Box of the text after rotation, in rotated coordinates.
        let corners = [(0, 0), (w, 0), (0, h), (w, h)].map(|(x, y)| trans.transform(x, y));
        let min_x = corners.iter().map(|c| c.0).min().unwrap_or(0);
        let max_x = corners.iter().map(|c| c.0).max().unwrap_or(0);
        let min_y = corners.iter().map(|c| c.1).min().unwrap_or(0);
        let max_y = corners.iter().map(|c| c.1).max().unwrap_or(0);
        let (rw, rh) = (max_x - min_x, max_y - min_y);
        let anchor = style.anchor();
        let left = pos.0
            - match anchor.h_pos {
                HPos::Left => 0,
                HPos::Center => rw / 2,
                HPos::Right => rw,
            };
        let top = pos.1
            - match anchor.v_pos {
                VPos::Top => 0,
                VPos::Center => rh / 2,
                VPos::Bottom => rh,
            };

        let mut pixels: Vec<(i32, i32, f32)> = Vec::new();
        for glyph in line.glyphs {
            if let Some(outline) = self.font.outline_glyph(glyph) {
                let bounds = outline.px_bounds();
                let (bx, by) = (bounds.min.x as i32, bounds.min.y as i32);
                outline.draw(|gx, gy, coverage| {
                    if coverage > 0.0 {
                        let (tx, ty) = trans.transform(bx + gx as i32, by + gy as i32);
                        pixels.push((left + tx - min_x, top + ty - min_y, coverage.min(1.0)));
                    }
                });
            }
        }
        let (iw, ih) = self.inner.get_size();
        for (x, y, coverage) in pixels {
            if x >= 0 && y >= 0 && (x as u32) < iw && (y as u32) < ih {
                self.inner.draw_pixel(
                    (x, y),
                    BackendColor {
                        alpha: color.alpha * coverage as f64,
                        rgb: color.rgb,
                    },
                )?;
            }
        }
        Ok(())
    }
}

//! A thin pixel-coordinate drawing surface over any plotters backend, and the two ways of
//! turning a drawing into bytes (SVG text, PNG). Plots are written once against [`Canvas`] and
//! rendered through either backend, so the SVG and the PNG show the same picture.

use super::fonts;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub(crate) type Rgb = RGBColor;

pub(crate) const TEXT: Rgb = RGBColor(30, 30, 30);
pub(crate) const MUTED: Rgb = RGBColor(95, 95, 95);
pub(crate) const GRID: Rgb = RGBColor(225, 225, 225);

pub(crate) struct Canvas<'a, DB: DrawingBackend> {
    pub(crate) area: &'a DrawingArea<DB, Shift>,
}

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("drawing failed: {e}")
}

fn font(size: u32, bold: bool) -> FontDesc<'static> {
    let style = if bold { FontStyle::Bold } else { FontStyle::Normal };
    FontDesc::new(FontFamily::SansSerif, size as f64, style)
}

impl<DB: DrawingBackend> Canvas<'_, DB> {
    pub(crate) fn fill(&self, x0: i32, y0: i32, x1: i32, y1: i32, color: RGBAColor) -> Result<(), String> {
        self.area.draw(&Rectangle::new([(x0, y0), (x1, y1)], color.filled())).map_err(err)
    }

    pub(crate) fn outline(&self, x0: i32, y0: i32, x1: i32, y1: i32, color: Rgb) -> Result<(), String> {
        self.area.draw(&Rectangle::new([(x0, y0), (x1, y1)], color.stroke_width(1))).map_err(err)
    }

    pub(crate) fn line(&self, points: Vec<(i32, i32)>, color: RGBAColor, width: u32) -> Result<(), String> {
        self.area.draw(&PathElement::new(points, color.stroke_width(width))).map_err(err)
    }

    pub(crate) fn polygon(&self, points: Vec<(i32, i32)>, color: Rgb) -> Result<(), String> {
        self.area.draw(&Polygon::new(points, color.filled())).map_err(err)
    }

    pub(crate) fn circle(&self, x: i32, y: i32, radius: i32, color: Rgb, filled: bool) -> Result<(), String> {
        let style = if filled { color.filled() } else { color.stroke_width(2) };
        self.area.draw(&Circle::new((x, y), radius, style)).map_err(err)
    }

    /// Draws `text` anchored at `(x, y)`: `h` picks which side of the text `x` is, and the text is
    /// vertically centred on `y`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn text(
        &self,
        text: &str,
        x: i32,
        y: i32,
        size: u32,
        color: Rgb,
        h: HPos,
        bold: bool,
    ) -> Result<(), String> {
        let style = TextStyle::from(font(size, bold)).color(&color).pos(Pos::new(h, VPos::Center));
        self.area.draw(&Text::new(text.to_string(), (x, y), style)).map_err(err)
    }
}

/// The width in pixels `text` takes in the bundled font (the same for both backends).
pub(crate) fn text_width(text: &str, size: u32, bold: bool) -> i32 {
    fonts::ensure_registered();
    match font(size, bold).box_size(text) {
        Ok((w, _)) => w as i32,
        // Only a missing font makes this fail; a rough estimate keeps layout going.
        Err(_) => (text.chars().count() as f64 * size as f64 * 0.6) as i32,
    }
}

/// Draws with `draw` on a white SVG canvas of `size` pixels.
pub(crate) fn render_svg<F>(size: (u32, u32), draw: F) -> Result<String, String>
where
    F: FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
{
    fonts::ensure_registered();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Draws with `draw` on a white bitmap of `size` pixels and encodes it as PNG.
pub(crate) fn render_png<F>(size: (u32, u32), draw: F) -> Result<Vec<u8>, String>
where
    F: for<'b> FnOnce(&DrawingArea<BitMapBackend<'b>, Shift>) -> Result<(), String>,
{
    fonts::ensure_registered();
    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    let mut png_bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png_bytes, size.0, size.1);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| format!("PNG encoding failed: {e}"))?;
        writer.write_image_data(&pixels).map_err(|e| format!("PNG encoding failed: {e}"))?;
    }
    Ok(png_bytes)
}

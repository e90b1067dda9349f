//! The top of every plot: title, subtitle with the key parameters and, for unsafe runs, a red
//! banner. The banner goes beside the title when it fits and on its own line otherwise, so a
//! long scenario name never runs into it.

use super::PlotMeta;
use super::canvas::{Canvas, MUTED, Rgb, TEXT, text_width};
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

pub(crate) const UNSAFE: Rgb = RGBColor(190, 0, 0);
pub(crate) const UNSAFE_BANNER: &str = "UNSAFE configuration (teaching mode)";

const TITLE_SIZE: u32 = 30;
const SUBTITLE_SIZE: u32 = 19;
const BANNER_SIZE: u32 = 18;
const MARGIN: i32 = 24;

pub(crate) struct Header {
    title: String,
    subtitle: String,
    /// Top-left corner and width of the banner, if the run was unsafe.
    banner: Option<(i32, i32, i32)>,
    /// Where the plot below may start.
    pub(crate) height: i32,
}

impl Header {
    pub(crate) fn new(title: String, meta: &PlotMeta, width: u32) -> Header {
        let title = fit(title, TITLE_SIZE, true, width as i32 - 2 * MARGIN);
        let subtitle = fit(meta.subtitle.clone(), SUBTITLE_SIZE, false, width as i32 - 2 * MARGIN);
        let mut height = if meta.subtitle.is_empty() { 50 } else { 86 };
        let banner = meta.unsafe_mode.then(|| {
            let w = text_width(UNSAFE_BANNER, BANNER_SIZE, true) + 24;
            let x_right = width as i32 - 20 - w;
            let fits_beside = |text: &str, size: u32, bold: bool| MARGIN + text_width(text, size, bold) + 30 <= x_right;
            if fits_beside(&title, TITLE_SIZE, true) {
                (x_right, 10, w)
            } else if meta.subtitle.is_empty() {
                height += 40;
                (MARGIN, 46, w)
            } else if fits_beside(&subtitle, SUBTITLE_SIZE, false) {
                (x_right, 46, w)
            } else {
                height += 40;
                (MARGIN, 80, w)
            }
        });
        Header { title, subtitle, banner, height }
    }

    pub(crate) fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> Result<(), String> {
        c.text(&self.title, MARGIN, 26, TITLE_SIZE, TEXT, HPos::Left, true)?;
        if !self.subtitle.is_empty() {
            c.text(&self.subtitle, MARGIN, 62, SUBTITLE_SIZE, MUTED, HPos::Left, false)?;
        }
        if let Some((x0, y0, w)) = self.banner {
            c.fill(x0, y0, x0 + w, y0 + 32, UNSAFE.to_rgba())?;
            c.text(UNSAFE_BANNER, x0 + 12, y0 + 16, BANNER_SIZE, WHITE, HPos::Left, true)?;
        }
        Ok(())
    }
}

/// `text`, shortened with "…" until it fits in `max_width` pixels (titles longer than the plot
/// would otherwise be cut off mid-glyph at the edge).
fn fit(text: String, size: u32, bold: bool, max_width: i32) -> String {
    if text_width(&text, size, bold) <= max_width {
        return text;
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let candidate: String = chars.iter().collect::<String>() + "…";
        if text_width(&candidate, size, bold) <= max_width {
            return candidate;
        }
    }
    "…".to_string()
}

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
const BANNER_SIZE: u32 = 19;
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
/// would otherwise be cut off mid-glyph at the edge). Linear in the text's length: no glyph is
/// narrower than a quarter of the font size, so only that many characters can matter, and the
/// longest prefix that fits is found by bisection among them.
pub(crate) fn fit(text: String, size: u32, bold: bool, max_width: i32) -> String {
    let max_chars = (max_width.max(0) as usize * 4) / size.max(1) as usize + 1;
    let head: Vec<char> = text.chars().take(max_chars + 1).collect();
    if head.len() <= max_chars && text_width(&text, size, bold) <= max_width {
        return text;
    }
    let fits = |k: usize| text_width(&(head[..k].iter().collect::<String>() + "…"), size, bold) <= max_width;
    let (mut lo, mut hi) = (0, head.len().min(max_chars));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    head[..lo].iter().collect::<String>() + "…"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_titles_are_cut_with_an_ellipsis_in_linear_time() {
        let long = "x".repeat(50_000);
        let cut = fit(long, TITLE_SIZE, true, 1500);
        assert!(cut.ends_with('…') && text_width(&cut, TITLE_SIZE, true) <= 1500, "{}", cut.len());
        assert!(cut.chars().count() > 50);
        // Only the head that can fit is ever measured: a name 100 times longer gives the same
        // title (before: 40 s for 10,000 characters, 572 s for 50,000, measuring every prefix).
        assert_eq!(fit("x".repeat(5_000_000), TITLE_SIZE, true, 1500), cut);
        assert_eq!(fit("short".into(), TITLE_SIZE, true, 1500), "short");
    }
}

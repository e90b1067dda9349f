//! The bundled font. PNGs are rasterised by plotters through ab_glyph from these bytes, so no
//! fontconfig or freetype is needed at run time; SVGs name the same family ("sans-serif") and
//! the same font measures their labels, so layouts match between the two formats.

use plotters::style::{FontStyle, register_font};
use std::sync::Once;

/// DejaVu Sans (Bitstream Vera licence, see `assets/fonts/DejaVu-LICENSE.txt`).
static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static DEJAVU_SANS_BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-Bold.ttf");

static REGISTER: Once = Once::new();

/// Makes "sans-serif" (normal and bold) available to plotters; cheap after the first call.
pub(crate) fn ensure_registered() {
    REGISTER.call_once(|| {
        // The bytes are compiled in and known-good; a failure here is a build defect.
        if register_font("sans-serif", FontStyle::Normal, DEJAVU_SANS).is_err()
            || register_font("sans-serif", FontStyle::Bold, DEJAVU_SANS_BOLD).is_err()
        {
            panic!("bundled DejaVu Sans font failed to load");
        }
    });
}

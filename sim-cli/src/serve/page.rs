//! The page `leasesim serve` answers at `/`: the classroom's playground (a shipped scenario
//! rerun in the server as its settings move, `playground.rs`) and, with the administrator's
//! token in its URL, the live view of real clients (`/leasesim/v1/state` and `record`, faults
//! from the page). One file, every asset inside the binary: a classroom may have no internet.

use super::http_types::Reply;

/// The page: HTML, CSS and script in one file (`page.html`).
pub const PAGE: &str = include_str!("page.html");

pub fn index() -> Reply {
    Reply::Body {
        status: 200,
        content_type: "text/html; charset=utf-8".into(),
        body: PAGE.as_bytes().to_vec(),
        headers: vec![("cache-control".into(), "no-store".into())],
    }
}

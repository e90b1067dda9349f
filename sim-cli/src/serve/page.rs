//! The page `leasesim serve` answers at `/`.

use super::core::Core;
use super::http_types::Reply;

pub fn index(core: &Core) -> Reply {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>leasesim serve</title><p>leasesim serve: {} requests so far. \
         The state is at <code>/leasesim/v1/state</code> (administrator's token).</p>",
        core.requests
    );
    Reply::Body {
        status: 200,
        content_type: "text/html; charset=utf-8".into(),
        body: body.into_bytes(),
        headers: Vec::new(),
    }
}

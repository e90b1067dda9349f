//! leasesim's own endpoints beside the Kubernetes API, under `/leasesim/v1/`: the state of the
//! Leases, the record, faults changed live, a client's word that it leads, and the live view's
//! event stream. Controls need the administrator's token; every control is in the record.
//!
//! | method, path | who | what |
//! |---|---|---|
//! | `GET /leasesim/v1/state` | admin | Leases (holder, RV, renewTime and its age), faults, clients |
//! | `GET /leasesim/v1/record?since=N` | admin | the record's lines after line N (last 2,000 kept) |
//! | `POST /leasesim/v1/faults` | admin | add a fault rule (JSON, the `[[faults]]` keys), from now |
//! | `DELETE /leasesim/v1/faults` | admin | end every fault |
//! | `POST /leasesim/v1/leading` | any client | `{"leading": true|false, "lease": "ns/name"}` |
//! | `GET /leasesim/v1/live` | admin | server-sent events: requests, Lease writes, beliefs, controls |

use serde_json::{Value, json};

use super::core::Core;
use super::faults::RuleDoc;
use super::http::Shared;
use super::http_types::{HttpRequest, Reply};
use super::kube;

pub fn is_admin_path(path: &str) -> bool {
    path == "/" || path.starts_with("/leasesim/")
}

fn unauthorized() -> Reply {
    Reply::json(
        401,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Unauthorized", "reason": "Unauthorized", "code": 401}),
    )
}

/// The administrator's token, from the Authorization header or (for the page's event stream,
/// which cannot set headers) the `token` query parameter.
fn is_admin(core: &Core, req: &HttpRequest) -> bool {
    let token = req
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
        .or_else(|| req.query("token"))
        .map(str::trim);
    token == Some(core.clients.admin().token.as_str())
}

pub fn answer(shared: &Shared, req: &HttpRequest) -> Reply {
    if req.path == "/" {
        return super::page::index();
    }
    let mut core = shared.lock();
    let _ = core.tick();
    let route = req.path.trim_start_matches("/leasesim/v1/");
    match (req.method.as_str(), route) {
        ("POST", "leading") => match core.authenticate(req) {
            Ok(client) => core.belief(&client.identity, &req.body),
            Err(reply) => reply,
        },
        _ if !is_admin(&core, req) => unauthorized(),
        ("GET", "state") => {
            let now = core.now();
            let faults: Vec<Value> = core
                .faults
                .rules()
                .iter()
                .filter(|r| r.until.is_none_or(|u| u > now))
                .map(|r| json!({"index": r.index, "client": r.client.as_deref().unwrap_or("*"), "action": r.action.to_json()}))
                .collect();
            let clients: Vec<Value> = core.clients.all().iter().map(|c| json!({"identity": c.identity})).collect();
            let leases = core.leases();
            Reply::json(
                200,
                &json!({"t": now as f64 / 1e9, "requests": core.requests, "leases": leases, "faults": faults, "clients": clients}),
            )
        }
        ("GET", "record") => {
            let since: u64 = req.query("since").and_then(|s| s.parse().ok()).unwrap_or(0);
            let lines = core.recent_after(since);
            Reply::json(200, &json!({"lines": lines}))
        }
        ("POST", "faults") => match serde_json::from_slice::<RuleDoc>(&req.body) {
            Ok(doc) => core.add_fault(&doc, "admin"),
            Err(e) => kube::error_reply(&sim_core::api::ApiError::bad_request(format!("a fault rule: {e}"))),
        },
        ("DELETE", "faults") => core.clear_faults("admin"),
        ("GET", "live") => Reply::Live,
        _ => kube::not_found(),
    }
}

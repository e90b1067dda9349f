//! `[[server.errors]]`: the API server answering matching requests with an error, with the
//! bodies and headers the real server sends (apimachinery `pkg/api/errors`, apiserver filters):
//!
//! | code | what the real server sends | handled? |
//! |---|---|---|
//! | 409 | `NewConflict(…, OptimisticLockErrorMsg)` Status | no |
//! | 429 | priority-and-fairness / max-in-flight: plain text "Too many requests, please try again later." with `Retry-After` | no |
//! | 500 | `NewInternalError(err)` Status, no `Retry-After` unless given | no |
//! | 503 | `NewServiceUnavailable(reason)` Status; the default, "apiserver is shutting down" (the wait-group filter), with `Retry-After: 1`; another message without one unless given | no |
//! | 504 | `NewTimeoutError` from the timeout filter, which answers while the handler runs on | **yes**: the request is applied, the client hears 504 |
//!
//! Each rule draws from its own random stream once per matching request, so a rule's
//! probability does not disturb any other stream.

use crate::api::{ApiError, Kind, Verb};
use crate::model::ServerErrorRule;
use crate::rng::ComponentRng;
use crate::time::Nanos;

/// What the server does instead of (or after) handling a request.
#[derive(Clone, Debug)]
pub(super) struct Injected {
    pub(super) error: ApiError,
    /// The `Retry-After` header.
    pub(super) retry_after: Option<Nanos>,
    /// The body is not a Status (APF's 429 is plain text).
    pub(super) plain_text: bool,
    /// Handled first, then answered with the error (504).
    pub(super) applied: bool,
}

pub(super) struct Injector {
    rules: Vec<ServerErrorRule>,
    rngs: Vec<ComponentRng>,
}

impl Injector {
    pub(super) fn new(seed: u64, rules: &[ServerErrorRule]) -> Injector {
        let rngs = (0..rules.len()).map(|i| ComponentRng::new(seed, &format!("server/errors/{i}"))).collect();
        Injector { rules: rules.to_vec(), rngs }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule that matches the request and fires, as what the server answers.
    pub(super) fn check(&mut self, now: Nanos, node: usize, verb: Verb, kind: Kind, name: &str) -> Option<Injected> {
        for (rule, rng) in self.rules.iter().zip(&mut self.rngs) {
            let matches = rule.from <= now
                && now < rule.until
                && rule.verb.is_none_or(|v| v == verb)
                && rule.kind.is_none_or(|k| k == kind)
                && rule.node.is_none_or(|n| n == node);
            if !matches {
                continue;
            }
            if rule.probability < 1.0 && !rng.bernoulli(rule.probability) {
                continue;
            }
            let error = match rule.code {
                409 => ApiError::optimistic_lock_conflict(kind, name),
                429 => ApiError::too_many_requests(),
                500 => ApiError::internal(&rule.message),
                503 => ApiError::service_unavailable(&rule.message),
                _ => ApiError::request_timeout(),
            };
            return Some(Injected {
                error,
                retry_after: rule.retry_after,
                plain_text: rule.code == 429,
                applied: rule.code == 504,
            });
        }
        None
    }
}

//! The fake kube-apiserver: one store, one global revision counter, RBAC in front, and the
//! create / update / merge-patch / apply / delete semantics of apiserver.md §1–§6.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use serde::Deserialize;
use serde_json::{Value, json};

use super::errors::{ApiError, FieldError};
use super::go_text::{go_json_marshal, go_percent_v, go_quote};
use super::lease_types::{LeaseMirror, LeaseRef, LeaseRefEntry, UserId};
use super::managed_fields::{
    FieldDiff, ManagerState, SEP, applied_field_set, json_diff, lease_candidate_diff, lease_diff,
    managers_from_entries, owned_by_others, previously_applied, record_apply, record_update, remove_field,
    render_managed_fields, renewal_writer, sync_managed_fields, sync_renewal_time,
};
use super::merge_patch::merge_patch;
use super::microtime::Time;
use super::object::{Body, CandidateTime, FieldValidation, Object, Request, Stored, object_json};
use super::rbac::{self, Attributes};
use super::types::{ConfigMap, Kind, Lease, LeaseCandidate, Namespace, ObjectMeta, User, Verb};
use super::validation::{validate_name, validate_object, validate_update};
use crate::sym::{Sym, Symbols};
use crate::time::Nanos;

/// One handled request, when auditing is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRecord {
    pub at: Nanos,
    pub user: String,
    pub verb: Verb,
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    /// The object's resourceVersion before the request (None if it did not exist).
    pub rv_before: Option<u64>,
    /// After a successful request: the object's resourceVersion (for a delete, the revision of
    /// the deletion). None on failure.
    pub rv_after: Option<u64>,
    pub code: u16,
    /// The error message, or "" on success.
    pub message: String,
}

/// Tracked-field diff: typed for Leases (the hot path), through JSON otherwise.
fn field_diff(live: Option<&Stored>, new: &Stored) -> FieldDiff {
    field_diff_with(live, None, new)
}

/// [`field_diff`], given the live object's JSON if it is already at hand (a patch or an apply
/// read it to merge onto): rendering an object to JSON, managedFields and all, was a third of
/// an apply's time, and the live one was rendered twice.
fn field_diff_with(live: Option<&Stored>, live_json: Option<&Value>, new: &Stored) -> FieldDiff {
    match (live, new) {
        (None, Stored::Lease(n)) => lease_diff(None, n),
        (Some(Stored::Lease(l)), Stored::Lease(n)) => lease_diff(Some(l), n),
        (None, Stored::LeaseCandidate(n)) => checked_candidate_diff(None, new, lease_candidate_diff(None, n)),
        // A create kept frozen (a recorder's Event whose shape no memo holds yet): its tree's diff.
        (None, Stored::Frozen(kind, n)) => field_diff_with(None, None, &Stored::Json(*kind, Arc::new(n.thaw()))),
        (Some(live @ Stored::LeaseCandidate(l)), Stored::LeaseCandidate(n)) => {
            checked_candidate_diff(Some(live), new, lease_candidate_diff(Some(l), n))
        }
        (live_stored @ (None | Some(Stored::Json(..))), Stored::Json(_, n)) => {
            let live = live_stored.and_then(|l| match l {
                Stored::Json(_, l) => Some(l),
                _ => None,
            });
            let live_meta = live.map(|l| tracked_meta(&l.metadata));
            let new_meta = tracked_meta(&n.metadata);
            let before = live.zip(live_meta.as_ref()).map(|(l, m)| (m, &*l.rest));
            let diff = super::managed_fields::json_object_diff(before, (&new_meta, &*n.rest));
            // Debug builds (every test) check it against the whole objects' JSON.
            if cfg!(debug_assertions) {
                let live_whole = live_stored.map(Stored::json_for_diff);
                let whole = json_diff(live_whole.as_ref(), &new.json_for_diff());
                assert!(whole == diff, "the JSON object diff disagrees with the whole object's");
            }
            diff
        }
        _ => match live_json {
            Some(json) => json_diff(Some(json), &new.json_for_diff()),
            None => json_diff(live.map(Stored::json_for_diff).as_ref(), &new.json_for_diff()),
        },
    }
}

/// A LeaseCandidate's typed diff, which debug builds check against the whole objects' JSON.
fn checked_candidate_diff(live: Option<&Stored>, new: &Stored, diff: FieldDiff) -> FieldDiff {
    if cfg!(debug_assertions) {
        let whole = json_diff(live.map(Stored::json_for_diff).as_ref(), &new.json_for_diff());
        assert!(whole == diff, "the typed LeaseCandidate diff disagrees with the whole object's");
    }
    diff
}

/// The tracked part of an object's metadata as its JSON would hold it: labels and annotations
/// (every other key of `ObjectMeta` is untracked; see `managed_fields::UNTRACKED`).
fn tracked_meta(meta: &super::types::ObjectMeta) -> serde_json::Map<String, Value> {
    // Every field named: a new one fails to compile here until it is placed.
    let super::types::ObjectMeta {
        name: _,
        namespace: _,
        uid: _,
        resource_version: _,
        creation_timestamp: _,
        labels,
        annotations,
        managed_fields: _,
    } = meta;
    let mut map = serde_json::Map::new();
    for (key, entries) in [("labels", labels), ("annotations", annotations)] {
        if !entries.is_empty() {
            let entries = entries.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            map.insert(key.to_string(), Value::Object(entries));
        }
    }
    map
}

#[derive(Clone)]
pub(crate) struct Record {
    pub(crate) object: Stored,
    /// Shared, copied on write: a sweep's or a hunt's runs start from clones of one set-up
    /// server, and copying (then dropping) every setup object's entries, FieldsV1 tries and all,
    /// was 0.9 % of a hunt's short runs.
    pub(crate) managers: Arc<Vec<ManagerState>>,
    /// The object's resourceVersion as a number (the string in its metadata is its decimal).
    pub(crate) rv: u64,
    /// For a Lease the typed path addresses: its number. Its compact state lives with that
    /// number (`super::lease_types`), rebuilt at every commit.
    pub(crate) lease_ref: Option<LeaseRef>,
    /// The last writes to this object that changed nothing (see `WriteMemo`).
    pub(crate) unchanged_writes: Vec<WriteMemo>,
}

/// A write (an apply, a PUT or a merge patch) that changed nothing — it was a no-op or it
/// failed — and what it answered: the same write (verb, manager, force, body) to the same
/// object (resourceVersion) answers the same again. A write's answer is a function of the
/// request and of the object and its managers, which change only with a commit (a new
/// `Record`, without these) and so with the resourceVersion; the time only stamps the
/// managers' entries, which a no-op drops. A reconciler writes its unchanged object every
/// period, and a second leader's writes fail with the same conflict every period: most writes
/// of a reconciler run are these, and each decoded, merged, validated and diffed the object
/// again (rendering it to JSON twice). Never kept for Leases, whose typed path writes renewals
/// into the record in place.
#[derive(Clone)]
pub(crate) struct WriteMemo {
    rv: u64,
    verb: Verb,
    manager: String,
    force: bool,
    /// Shared with the request when it was a [`Body::SharedJson`]: the same body again is
    /// then known by its pointer.
    body: Arc<Value>,
    /// `None`: a no-op (the answer is the object as it stands).
    error: Option<ApiError>,
}

/// Whether two JSON values are the same text: maps with their keys in the same order and
/// numbers of the same kind and bits. `Value`'s `==` ignores key order (and `0.0 == -0.0`), but
/// a decode reports the first bad value in key order, and an error message prints a number as
/// it is: two bodies `==` may answer differently.
pub(super) fn identical_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((kx, vx), (ky, vy))| kx == ky && identical_json(vx, vy))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| identical_json(x, y)),
        (Value::Number(x), Value::Number(y)) => {
            (x.as_u64(), x.as_i64(), x.is_f64(), x.as_f64().map(f64::to_bits))
                == (y.as_u64(), y.as_i64(), y.is_f64(), y.as_f64().map(f64::to_bits))
        }
        _ => a == b,
    }
}

/// [`identical_json`] of every pair, and as many.
pub(crate) fn identical_json_slices(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| identical_json(a, b))
}

/// Unchanged writes remembered per object: one per writer, in practice.
const WRITE_MEMOS: usize = 4;

/// Registry strategy flags (apiserver.md §1: Leases allow create-on-update and forbid
/// unconditional update; ConfigMaps the opposite). RBAC objects allow both, as their strategies do.
/// LeaseCandidates (`pkg/registry/coordination/leasecandidate/strategy.go`@4d7ca868): create on
/// update allowed, unconditional update not.
fn allow_create_on_update(kind: Kind) -> bool {
    matches!(kind, Kind::Lease | Kind::LeaseCandidate | Kind::Role | Kind::RoleBinding)
}

fn allow_unconditional_update(kind: Kind) -> bool {
    !matches!(kind, Kind::Lease | Kind::LeaseCandidate)
}

/// What a successful request did, for the response code and the audit record. A written object
/// is kept as stored and rendered into an answer only when the caller asks for one (`handle`);
/// callers that read only success or failure (`handle_for_effect`: a world's setup objects,
/// the Events electors record) skip the JSON rendering of kinds stored as JSON.
enum Outcome {
    Read(Object),
    Written { object: Stored, created: bool },
    Deleted { revision: u64 },
}

impl Outcome {
    fn into_object(self) -> Object {
        match self {
            Outcome::Read(object) => object,
            Outcome::Written { object, .. } => object.to_object(),
            Outcome::Deleted { .. } => Object::Deleted,
        }
    }
}

/// RBAC decisions of requests other than the typed path's (which keeps its own per Lease), by
/// caller, verb, kind, namespace and the name the URL carries: a reconciler writing its child
/// every period, an elector's Events. Valid for one RBAC generation; emptied when it moves on or
/// holds [`AuthzMemo::MOST`] decisions (a server of many callers, `serve`'s new caller per
/// connection), so it stays bounded.
#[derive(Clone, Default)]
pub(crate) struct AuthzMemo {
    generation: u64,
    decisions: crate::FastMap<AuthzKey, bool>,
    /// The key's "" (a cluster-scoped kind's namespace, a create's or a list's name).
    empty: Arc<str>,
}

impl AuthzMemo {
    pub(crate) const MOST: usize = 4096;
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct AuthzKey {
    user: ByAddress,
    verb: Verb,
    kind: Kind,
    namespace: Arc<str>,
    name: Arc<str>,
}

/// A caller known by its allocation: the memo holds the `Arc`, so the address is not reused
/// while the decision is kept, and the `User` behind it never changes.
#[derive(Clone)]
struct ByAddress(Arc<User>);

impl PartialEq for ByAddress {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ByAddress {}

impl std::hash::Hash for ByAddress {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.0), state);
    }
}

/// At most this many recycled LeaseCandidates are kept (`ApiServer::spare_candidates`).
const SPARE_CANDIDATES: usize = 8;

/// `ApiServer::spare_candidates`. A clone of a server starts with none: shared, a spare could be
/// written into by neither (a sweep's runs start from clones of one server).
#[derive(Default)]
struct Spares(Vec<Arc<LeaseCandidate>>);

impl Clone for Spares {
    fn clone(&self) -> Spares {
        Spares::default()
    }
}

/// Cloning a server copies its stores' maps and shares its objects (`Arc`s, copied on write), so
/// a clone is an independent server in the same state. (Clones also share `create_memos`: a
/// cache of a pure function, so what one clone learns changes no answer of another.)
#[derive(Clone)]
pub struct ApiServer {
    epoch_unix_nanos: i64,
    /// The etcd revision: one counter for all objects (apiserver.md §4).
    revision: u64,
    uid_counter: u64,
    /// kind → namespace ("" for cluster-scoped) → name → slot in `records`. The maps give the
    /// order of lists; the slots let the typed path reach a Lease without a string compare.
    pub(crate) store: BTreeMap<Kind, BTreeMap<String, BTreeMap<String, usize>>>,
    pub(crate) records: Vec<Option<Record>>,
    /// The last two slots `slot_of` found, tried before the maps (a write looks its object up
    /// about six times, between lookups of a Role). A hit is checked against the record there,
    /// whose kind, namespace and name are always its key in `store` (`commit` sets them), so a
    /// freed or reused slot is never taken for another object's.
    found_slots: FoundSlots,
    /// The warnings of the request being handled (see [`ApiServer::take_warnings`]).
    warnings: Vec<String>,
    /// Old versions of LeaseCandidates nobody holds any more, handed back by their owners'
    /// informers ([`ApiServer::recycle_candidate`]): a time write is copied into one, its buffers
    /// kept, instead of into a new allocation (five a copy, and five frees of the old). One for
    /// each candidate writing at the same time, up to [`SPARE_CANDIDATES`].
    spare_candidates: Spares,
    /// Time writes `candidate_time_write` took (for the test that pins them).
    #[cfg(test)]
    candidate_time_writes: u64,
    free_slots: Vec<usize>,
    audit_on: bool,
    audit: Vec<AuditRecord>,
    /// Interned strings (holders, identities) and callers, for the typed path.
    pub(crate) symbols: Symbols,
    pub(crate) users: Vec<Arc<User>>,
    /// Each caller's number, keyed by the same allocation as `users` holds (a fleet has one
    /// caller per elector: one copy of its name and groups, not two).
    user_ids: crate::FastMap<Arc<User>, UserId>,
    /// Every distinct list of groups among `users`, each kept once.
    group_lists: crate::FastSet<Arc<[String]>>,
    /// The managers of every object that has none (a ServiceAccount with a name only: one per
    /// elector of a fleet), shared.
    no_managers: Arc<Vec<ManagerState>>,
    /// Leases the typed path addresses by number, and the slot each one occupies now.
    pub(crate) lease_refs: Vec<LeaseRefEntry>,
    lease_ref_index: BTreeMap<(String, String), LeaseRef>,
    /// Bumped whenever a Role or RoleBinding changes: the typed path's cached RBAC decisions
    /// (kept per Lease) are only trusted while it stands still.
    pub(crate) rbac_generation: u64,
    /// The RoleBindings by the subjects they name, for the typed path's decisions: built for one
    /// RBAC generation when a decision is first asked in it.
    subject_index: Option<(u64, SubjectIndex)>,
    /// The other requests' decisions (see [`AuthzMemo`]).
    authz_memo: AuthzMemo,
    /// The creator's managedFields entries of recent creates, by kind and shape (see
    /// `creator_managers`). Shared by every clone of this server: a sweep's or a hunt's runs
    /// start from clones of one set-up server, and each would otherwise learn again what its
    /// first Lease and first Event give their creators (a sixth of a short run).
    pub(super) create_memos: Arc<std::sync::Mutex<Vec<CreateMemo>>>,
    /// Committed changes, for watches (`leasesim serve`); `None` in a simulation, which has
    /// no watchers outside it and pays nothing for them.
    changes: Option<Box<ChangeLog>>,
}

/// What a committed write did to an object, as a watch reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

impl ChangeType {
    /// The watch event's `type`.
    pub fn name(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One committed write: the object as it was written (deleted: as it was, at the deletion's
/// revision), kept typed and rendered when a watcher asks.
#[derive(Clone, Debug)]
pub struct Change {
    pub rv: u64,
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub change: ChangeType,
    object: Stored,
}

impl Change {
    /// The object, as the server's JSON.
    pub fn object(&self) -> Value {
        self.object.to_json()
    }

    /// A Lease's spec, without rendering it.
    pub fn lease_spec(&self) -> Option<&crate::api::types::LeaseSpec> {
        match &self.object {
            Stored::Lease(l) => Some(&l.spec),
            _ => None,
        }
    }
}

/// The most recent committed writes, oldest first, up to a capacity (etcd's compaction: a watch
/// from before the oldest kept revision is told its version is too old).
#[derive(Clone, Debug)]
struct ChangeLog {
    capacity: usize,
    changes: std::collections::VecDeque<Change>,
    /// The revision before the oldest change kept (a watch from here on misses nothing).
    horizon: u64,
}

/// What a create gave its creator, for objects whose tracked fields depend only on `shape`:
/// a JSON-kept object (an Event, a LeaseCandidate) with no labels or annotations, by its keys and nesting
/// (`json_shape`; for an Event kept frozen, the shape its writer gave, `FrozenJson::shape`, or
/// else `frozen_shape` of its text); a typed Lease by the fields it sets (`fields_shape`). The rest of the entry
/// (manager, time) is the request's.
#[derive(Clone, Debug)]
pub(super) struct CreateMemo {
    kind: Kind,
    shape: String,
    creator: Option<ManagerState>,
}

/// Shapes remembered: an election run creates a Lease and one or two kinds of Event.
const CREATE_MEMOS: usize = 8;

/// The shape of a field set: each path with its length (paths are unambiguous then), after a
/// letter no `json_shape` starts with.
fn fields_shape(fields: &std::collections::BTreeSet<String>, out: &mut String) {
    out.push('F');
    for path in fields {
        push_len(out, path.len());
        out.push_str(path);
    }
}

/// `len` in decimal and a colon (`write!` with its formatting machinery was a quarter of an
/// Event's create).
/// The uid of the `n`th object: `00000000-0000-4000-8000-` and `n` in twelve lowercase hex
/// digits (`format!("…{n:012x}")`, without the formatter: every create takes one).
pub(super) fn uid_of(n: u64) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if n >= 1 << 48 {
        return format!("00000000-0000-4000-8000-{n:012x}");
    }
    let mut uid = String::with_capacity(36);
    uid.push_str("00000000-0000-4000-8000-");
    uid.extend((0..12).rev().map(|i| char::from(HEX[(n >> (4 * i)) as usize & 15])));
    uid
}

pub(super) fn push_len(out: &mut String, len: usize) {
    out.push_str(crate::digits::decimal(len as u64, &mut [0; 20]));
    out.push(':');
}

/// Writes the keys and nesting of a JSON object into `out` (each key with its length, then
/// `{…}` for an object, `n` for null, `v` for any other value): two objects with the same
/// shape have the same tracked fields.
pub(super) fn json_shape(map: &serde_json::Map<String, Value>, out: &mut String) {
    for (key, value) in map {
        push_len(out, key.len());
        out.push_str(key);
        match value {
            Value::Object(child) => {
                out.push('{');
                json_shape(child, out);
                out.push('}');
            }
            Value::Null => out.push('n'),
            _ => out.push('v'),
        }
    }
}

/// [`json_shape`] of a frozen object, read from its text (the compact JSON of a map, as
/// `serde_json` writes it) without decoding it: `#` (a key `json_shape` never writes), then
/// each key as written in the text with its length, `{…}` for an object, `n` for null, `v` for
/// any other value. Two texts with the same shape have the same tracked fields. `None` if the
/// text is not one map.
pub(super) fn frozen_shape(text: &str, out: &mut String) -> Option<()> {
    /// The index after the string that starts at `i`.
    fn string_end(b: &[u8], i: usize) -> Option<usize> {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let mut j = i + 1;
        loop {
            match *b.get(j)? {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
    }
    /// The index of the `,` or `}` after the value that starts at `i` (any value: a string, a
    /// number, a literal, an array or a map, their strings skipped whole).
    fn value_end(b: &[u8], i: usize) -> Option<usize> {
        let (mut j, mut depth) = (i, 0usize);
        loop {
            match *b.get(j)? {
                b'"' => j = string_end(b, j)?,
                b'[' | b'{' => (j, depth) = (j + 1, depth + 1),
                b']' | b'}' if depth > 0 => (j, depth) = (j + 1, depth - 1),
                b',' | b'}' if depth == 0 => return Some(j),
                b']' => return None,
                _ => j += 1,
            }
        }
    }
    /// The map that starts at `i`; returns the index after it.
    fn map(text: &str, i: usize, out: &mut String) -> Option<usize> {
        let b = text.as_bytes();
        if b.get(i) != Some(&b'{') {
            return None;
        }
        let mut i = i + 1;
        if b.get(i) == Some(&b'}') {
            return Some(i + 1);
        }
        loop {
            let key_end = string_end(b, i)?;
            let key = &text[i + 1..key_end - 1];
            push_len(out, key.len());
            out.push_str(key);
            i = key_end;
            if b.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
            match *b.get(i)? {
                b'{' => {
                    out.push('{');
                    i = map(text, i, out)?;
                    out.push('}');
                }
                b'n' => {
                    out.push('n');
                    i = value_end(b, i)?;
                }
                _ => {
                    out.push('v');
                    i = value_end(b, i)?;
                }
            }
            match *b.get(i)? {
                b',' => i += 1,
                b'}' => return Some(i + 1),
                _ => return None,
            }
        }
    }
    out.push('#');
    (map(text, 0, out)? == text.len()).then_some(())
}

/// RoleBinding slots by namespace and by the subject they name: a decision then reads the few
/// bindings that can name its caller instead of every binding of the namespace, which with a
/// RoleBinding per elector was a scan over the whole fleet for every caller's first request.
type SubjectIndex = crate::FastMap<String, NamespaceSubjects>;

#[derive(Clone, Debug, Default)]
struct NamespaceSubjects {
    /// By the user name a subject matches (a ServiceAccount as the user
    /// `system:serviceaccount:<ns>:<name>` it authenticates as).
    users: crate::FastMap<String, Vec<usize>>,
    groups: crate::FastMap<String, Vec<usize>>,
}

/// `ApiServer::found_slots`: atomics (relaxed loads and stores, plain moves on x86-64) rather
/// than `Cell`s, so that a server, and a world, stay `Sync`; each is only a hint checked
/// against the record it names.
struct FoundSlots([AtomicUsize; 2]);

impl Default for FoundSlots {
    fn default() -> Self {
        FoundSlots([AtomicUsize::new(usize::MAX), AtomicUsize::new(usize::MAX)])
    }
}

impl Clone for FoundSlots {
    fn clone(&self) -> Self {
        FoundSlots(self.0.each_ref().map(|slot| AtomicUsize::new(slot.load(Relaxed))))
    }
}

impl ApiServer {
    /// A server whose wall clock reads `epoch + true time`, holding namespaces `default` and
    /// `kube-system` as a fresh cluster does.
    pub fn new(epoch_unix_nanos: i64) -> Self {
        let mut server = ApiServer {
            epoch_unix_nanos,
            revision: 0,
            uid_counter: 0,
            store: BTreeMap::new(),
            records: Vec::new(),
            found_slots: FoundSlots::default(),
            warnings: Vec::new(),
            spare_candidates: Spares::default(),
            #[cfg(test)]
            candidate_time_writes: 0,
            free_slots: Vec::new(),
            audit_on: false,
            audit: Vec::new(),
            symbols: Symbols::new(),
            users: Vec::new(),
            user_ids: Default::default(),
            group_lists: Default::default(),
            no_managers: Arc::default(),
            lease_refs: Vec::new(),
            lease_ref_index: BTreeMap::new(),
            rbac_generation: 0,
            subject_index: None,
            authz_memo: AuthzMemo::default(),
            create_memos: Arc::default(),
            changes: None,
        };
        let empty = server.symbols.intern("");
        debug_assert_eq!(empty, Sym::EMPTY);
        for ns in ["default", "kube-system"] {
            server.ensure_namespace(0, ns);
        }
        server
    }

    pub fn set_audit(&mut self, on: bool) {
        self.audit_on = on;
    }

    pub(crate) fn audit_on(&self) -> bool {
        self.audit_on
    }

    /// Keeps the last `capacity` committed writes for watches (see [`Change`]). Every request
    /// then takes the generic path, which commits each write whole.
    pub fn enable_changes(&mut self, capacity: usize) {
        self.changes = Some(Box::new(ChangeLog {
            capacity: capacity.max(1),
            changes: Default::default(),
            horizon: self.revision,
        }));
    }

    pub(crate) fn changes_on(&self) -> bool {
        self.changes.is_some()
    }

    /// The changes after revision `rv`, oldest first; `Err(oldest)` when changes after `rv`
    /// are no longer kept (the watch's "too old resource version"), `oldest` being the first
    /// revision still kept. Empty when changes are not kept.
    pub fn changes_since(&self, rv: u64) -> Result<Vec<Change>, u64> {
        self.changes_after(rv).map(|changes| changes.cloned().collect())
    }

    /// [`Self::changes_since`] without copying: the kept changes after `rv`, found by a binary
    /// search (they are in revision order).
    pub fn changes_after(&self, rv: u64) -> Result<impl Iterator<Item = &Change>, u64> {
        let (changes, horizon) = match &self.changes {
            Some(log) => (&log.changes, log.horizon),
            None => return Ok(std::collections::vec_deque::Iter::default()),
        };
        if rv < horizon {
            return Err(horizon + 1);
        }
        let start = changes.partition_point(|c| c.rv <= rv);
        Ok(changes.range(start..))
    }

    fn log_change(&mut self, kind: Kind, ns: &str, name: &str, change: ChangeType, object: Stored) {
        let rv = self.revision;
        if let Some(log) = &mut self.changes {
            if log.changes.len() == log.capacity
                && let Some(dropped) = log.changes.pop_front()
            {
                log.horizon = dropped.rv;
            }
            log.changes.push_back(Change {
                rv,
                kind,
                namespace: ns.to_string(),
                name: name.to_string(),
                change,
                object,
            });
        }
    }

    /// The interned strings of this server (holders, identities).
    pub fn symbols(&self) -> &Symbols {
        &self.symbols
    }

    pub fn intern(&mut self, text: &str) -> Sym {
        self.symbols.intern(text)
    }

    /// A number for a caller of the typed path (interned: the same user gets the same number).
    /// A new user is kept as the caller's `Arc` when its groups are the list the server shares
    /// (a world's node users are built so: one copy of a fleet's users, not two).
    pub fn user_id(&mut self, user: &Arc<User>) -> UserId {
        if let Some(&id) = self.user_ids.get(&**user) {
            return id;
        }
        let id = UserId(self.users.len() as u32);
        let user = match self.group_lists.get(&*user.groups) {
            Some(shared) if Arc::ptr_eq(shared, &user.groups) => Arc::clone(user),
            Some(shared) => Arc::new(User { name: user.name.clone(), groups: Arc::clone(shared) }),
            None => {
                self.group_lists.insert(Arc::clone(&user.groups));
                Arc::clone(user)
            }
        };
        self.users.push(Arc::clone(&user));
        self.user_ids.insert(user, id);
        id
    }

    pub fn user(&self, id: UserId) -> &Arc<User> {
        &self.users[id.0 as usize]
    }

    /// A number for the Lease `ns/name` (whether or not it exists yet), for the typed path.
    pub fn lease_ref(&mut self, ns: &str, name: &str) -> LeaseRef {
        if let Some(&r) = self.lease_ref_index.get(&(ns.to_string(), name.to_string())) {
            return r;
        }
        let r = LeaseRef(self.lease_refs.len() as u32);
        let slot = self.slot_of(Kind::Lease, ns, name);
        let live = slot.map(|slot| {
            let record = self.records[slot].as_mut().expect("a live slot");
            record.lease_ref = Some(r);
            let Stored::Lease(lease) = &record.object else { unreachable!("a Lease slot holds a Lease") };
            LeaseMirror::of(lease, record.rv, &mut self.symbols)
        });
        self.lease_refs.push(LeaseRefEntry {
            namespace: ns.into(),
            name: name.into(),
            slot,
            authz: Default::default(),
            live,
        });
        self.lease_ref_index.insert((ns.to_string(), name.to_string()), r);
        r
    }

    /// Gives back the room its tables of objects and of Lease numbers grew into while it was
    /// set up: a fleet's world is built once and runs for long, and a doubling's room is up
    /// to half of each table (the objects' table grows again by doubling from there, on the
    /// run's first creates).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.records.shrink_to_fit();
        self.lease_refs.shrink_to_fit();
    }

    /// The name of the Lease a number stands for.
    pub fn lease_name(&self, lease: LeaseRef) -> String {
        self.lease_refs[lease.0 as usize].name.to_string()
    }

    /// The number of `ns/name` if [`Self::lease_ref`] gave it one.
    pub fn find_lease_ref(&self, ns: &str, name: &str) -> Option<LeaseRef> {
        self.lease_ref_index.get(&(ns.to_string(), name.to_string())).copied()
    }

    pub fn audit(&self) -> &[AuditRecord] {
        &self.audit
    }

    pub fn take_audit(&mut self) -> Vec<AuditRecord> {
        std::mem::take(&mut self.audit)
    }

    /// The current global revision.
    pub fn resource_version(&self) -> u64 {
        self.revision
    }

    /// No authorisation, no audit: for metrics and assertions.
    pub fn peek_lease(&mut self, ns: &str, name: &str) -> Option<&Arc<Lease>> {
        self.materialize_named(ns, name);
        match &self.record(Kind::Lease, ns, name)?.object {
            Stored::Lease(lease) => Some(lease),
            _ => None,
        }
    }

    pub fn peek_config_map(&self, ns: &str, name: &str) -> Option<&Arc<ConfigMap>> {
        match &self.record(Kind::ConfigMap, ns, name)?.object {
            Stored::ConfigMap(cm) => Some(cm),
            _ => None,
        }
    }

    /// Any stored object as its wire JSON (managedFields included).
    /// The `(namespace, name)` of every stored object of `kind`, in list order.
    pub fn names_of(&self, kind: Kind) -> Vec<(String, String)> {
        self.store
            .get(&kind)
            .into_iter()
            .flat_map(|by_ns| by_ns.iter())
            .flat_map(|(ns, by_name)| by_name.keys().map(move |name| (ns.clone(), name.clone())))
            .collect()
    }

    pub fn peek_json(&mut self, kind: Kind, ns: &str, name: &str) -> Option<Value> {
        if kind == Kind::Lease {
            self.materialize_named(ns, name);
        }
        self.record(kind, ns, name).map(|r| r.object.to_json())
    }

    /// The stored object itself (shared, nothing rendered), for a reader that needs a field or
    /// two, or a copy to render later (the LeaseCandidate informer's cache).
    pub(crate) fn peek_stored(&self, kind: Kind, ns: &str, name: &str) -> Option<Stored> {
        self.stored_ref(kind, ns, name).cloned()
    }

    /// [`ApiServer::peek_stored`] borrowed: a reader that keeps nothing moves no reference count.
    pub(crate) fn stored_ref(&self, kind: Kind, ns: &str, name: &str) -> Option<&Stored> {
        debug_assert!(kind != Kind::Lease, "a Lease may live in its mirror: use peek_json");
        self.record(kind, ns, name).map(|r| &r.object)
    }

    /// The stored objects of one kind in namespace `ns` (shared, nothing rendered, no request
    /// made): what an informer's lister hands a controller. Not for Leases, which may live in
    /// their mirror.
    pub(crate) fn stored_in<'a>(&'a self, kind: Kind, ns: &'a str) -> impl Iterator<Item = &'a Stored> + 'a {
        debug_assert!(kind != Kind::Lease, "a Lease may live in its mirror: use peek_json");
        debug_assert!(!ns.is_empty(), "one namespace");
        self.stored(kind, ns)
    }

    /// The stored objects of one kind in namespace `ns` (`""`: every namespace), in list order
    /// (namespace, then name). Leases as they stand in the store: materialise them first.
    fn stored<'a>(&'a self, kind: Kind, ns: &'a str) -> impl Iterator<Item = &'a Stored> + 'a {
        self.store
            .get(&kind)
            .into_iter()
            .flat_map(|by_ns| by_ns.iter())
            .filter(move |(record_ns, _)| ns.is_empty() || record_ns.as_str() == ns)
            .flat_map(|(_, by_name)| by_name.values())
            .map(|&slot| &self.record_at(slot).object)
    }

    /// `kubectl auth can-i VERB KIND [NAME] -n NS --as USER`: the RBAC decision.
    pub fn can_i(&self, user: &User, verb: &str, kind: Kind, ns: &str, name: Option<&str>) -> bool {
        self.is_authorized(user, verb, kind, ns, name.unwrap_or(""))
    }

    /// Creates an object as the admin (scenario setup, `--from-cluster`). A missing namespace is
    /// created first; a given uid, creationTimestamp and managedFields are kept.
    pub fn seed_object(&mut self, now: Nanos, obj: Value) -> Result<Object, ApiError> {
        let (kind, ns, name) = self.seed(now, obj)?;
        Ok(self.record(kind, &ns, &name).expect("just created").object.to_object())
    }

    /// [`Self::seed_object`] without building the created object to hand back (a world's setup
    /// creates thousands and reads none): its kind, namespace and name.
    pub fn seed(&mut self, now: Nanos, obj: Value) -> Result<(Kind, String, String), ApiError> {
        let kind_name = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let kind = Kind::from_kind_name(kind_name).ok_or_else(|| {
            ApiError::bad_request(format!("no kind {kind_name:?} is served by the simulated API server"))
        })?;
        let meta: ObjectMeta = obj.get("metadata").map(decode_seed_metadata).transpose()?.unwrap_or_default();
        let ns = if kind.is_namespaced() {
            if meta.namespace.is_empty() { "default".to_string() } else { meta.namespace.clone() }
        } else {
            String::new()
        };
        if kind.is_namespaced() {
            self.ensure_namespace(now, &ns);
        }
        let request = Request {
            user: Arc::new(User::admin()),
            verb: Verb::Create,
            kind,
            namespace: Arc::from(ns.as_str()),
            name: Arc::from(""),
            body: Body::Json(obj),
            field_manager: None,
            force: false,
            field_validation: FieldValidation::Ignore,
        };
        self.handle_for_effect(now, &request)?;
        let record = self.record_mut(kind, &ns, &meta.name).expect("just created");
        if !meta.managed_fields.is_empty() {
            record.managers = Arc::new(managers_from_entries(&meta.managed_fields));
        }
        let managed_fields = render_managed_fields(&record.managers);
        let object_meta = record.object.meta_mut();
        if !meta.uid.is_empty() {
            object_meta.uid = meta.uid;
        }
        if meta.creation_timestamp.is_some() {
            object_meta.creation_timestamp = meta.creation_timestamp;
        }
        object_meta.managed_fields = managed_fields;
        Ok((kind, ns, meta.name))
    }

    /// The one entry point: authorise (RBAC), then dispatch on the verb.
    pub fn handle(&mut self, now: Nanos, req: &Request) -> Result<Object, ApiError> {
        self.handle_outcome(now, req).map(Outcome::into_object)
    }

    /// [`Self::handle`], and whether the request created its object (the HTTP status is then
    /// 201 Created, not 200).
    pub fn handle_created(&mut self, now: Nanos, req: &Request) -> Result<(Object, bool), ApiError> {
        self.handle_outcome(now, req).map(|outcome| {
            let created = matches!(outcome, Outcome::Written { created: true, .. });
            (outcome.into_object(), created)
        })
    }

    /// [`Self::handle`] for a caller that reads only whether the request failed: the same
    /// effects, the same errors, without building the answer's object.
    pub fn handle_for_effect(&mut self, now: Nanos, req: &Request) -> Result<(), ApiError> {
        self.handle_outcome(now, req).map(drop)
    }

    fn handle_outcome(&mut self, now: Nanos, req: &Request) -> Result<Outcome, ApiError> {
        self.warnings.clear();
        // Renewals taken by the typed path are written into the Lease before anyone reads it.
        if req.kind == Kind::Lease {
            match req.verb {
                Verb::List => self.materialize_all(&req.namespace),
                _ => self.materialize_named(&req.namespace, &req.name),
            }
        }
        if !self.audit_on {
            return self.dispatch(now, req);
        }
        let rv_before =
            self.record(req.kind, &req.namespace, &req.name).map(|r| parse_rv(&r.object.meta().resource_version));
        let result = self.dispatch(now, req);
        let mut name = req.name.to_string();
        let (code, rv_after) = match &result {
            Ok(Outcome::Read(_)) => (200, None),
            Ok(Outcome::Written { object, created }) => {
                let meta = object.meta();
                if !meta.name.is_empty() {
                    name = meta.name.clone();
                }
                (if *created { 201 } else { 200 }, Some(parse_rv(&meta.resource_version)))
            }
            Ok(Outcome::Deleted { revision }) => (200, Some(*revision)),
            Err(error) => (error.code, None),
        };
        self.audit.push(AuditRecord {
            at: now,
            user: req.user.name.clone(),
            verb: req.verb,
            kind: req.kind,
            namespace: req.namespace.to_string(),
            name,
            rv_before,
            rv_after,
            code,
            message: result.as_ref().err().map(|e| e.message.clone()).unwrap_or_default(),
        });
        result
    }

    fn dispatch(&mut self, now: Nanos, req: &Request) -> Result<Outcome, ApiError> {
        let ns: &str = if req.kind.is_namespaced() { &req.namespace } else { "" };
        // The authorisation filter sees the URL: create and list carry no name (apiserver.md §6).
        let url_name = if matches!(req.verb, Verb::Create | Verb::List) { "" } else { &req.name };
        if !self.is_authorized_request(req, ns, url_name) {
            return Err(ApiError::forbidden(req.kind, url_name, &req.user.name, req.verb.as_str(), ns));
        }
        match req.verb {
            Verb::Get => self.get(req.kind, ns, &req.name).map(Outcome::Read),
            Verb::List => Ok(Outcome::Read(self.list(req.kind, ns))),
            Verb::Create => self.create(now, req, ns),
            Verb::Update => self.update(now, req, ns),
            Verb::Patch => self.patch(now, req, ns),
            Verb::Apply => self.apply(now, req, ns),
            Verb::Delete => self.delete(req.kind, ns, &req.name),
        }
    }

    fn get(&self, kind: Kind, ns: &str, name: &str) -> Result<Object, ApiError> {
        self.record(kind, ns, name).map(|r| r.object.to_object()).ok_or_else(|| ApiError::not_found(kind, name))
    }

    /// `<Kind>List` with the current revision; items as the server sends them in typed lists
    /// (without their own kind/apiVersion). `ns == ""` lists all namespaces.
    fn list(&self, kind: Kind, ns: &str) -> Object {
        let items: Vec<Value> = self
            .stored(kind, ns)
            .map(|object| {
                let mut item = object.to_json();
                if let Value::Object(map) = &mut item {
                    map.shift_remove("kind");
                    map.shift_remove("apiVersion");
                }
                item
            })
            .collect();
        Object::Json(json!({
            "kind": format!("{}List", kind.kind_name()),
            "apiVersion": kind.api_version(),
            "metadata": {"resourceVersion": self.revision.to_string()},
            "items": items,
        }))
    }

    fn create(&mut self, now: Nanos, req: &Request, ns: &str) -> Result<Outcome, ApiError> {
        let object = self.decode_request(req)?;
        let name = if object.meta().name.is_empty() { req.name.to_string() } else { object.meta().name.clone() };
        if !req.name.is_empty() && req.name.as_ref() != name {
            return Err(name_mismatch(&name, &req.name));
        }
        check_namespace(&object, ns)?;
        self.insert_new(now, req.kind, ns, &name, object, default_manager(req, "kubectl-create"))
    }

    /// A create's or update's body decoded ([`decode_body`]), its unknown fields as the
    /// request's `fieldValidation` says: refused with the decoder's error (`Strict`: one
    /// `strict decoding error` naming each, apimachinery `runtime.NewStrictDecodingError`),
    /// named in the answer's warnings (`Warn`, [`Self::take_warnings`]), or dropped unsaid.
    fn decode_request(&mut self, req: &Request) -> Result<Stored, ApiError> {
        let (object, unknown) = decode_body(req.kind, &req.body, req.field_validation)?;
        if unknown.is_empty() {
            return Ok(object);
        }
        let errors = unknown.iter().map(|path| format!("unknown field {}", go_quote(path)));
        if req.field_validation == FieldValidation::Strict {
            let text = format!("strict decoding error: {}", errors.collect::<Vec<_>>().join(", "));
            return Err(decode_error(req.kind, &text));
        }
        self.warnings.extend(errors);
        Ok(object)
    }

    /// The warnings of the last request handled (`Warning` headers: an unknown field under
    /// `fieldValidation=Warn`), taken.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Shared by create, create-on-update and apply-create: namespace exists, name valid, not
    /// already there, object valid; the creator owns every field.
    fn insert_new(
        &mut self,
        now: Nanos,
        kind: Kind,
        ns: &str,
        name: &str,
        object: Stored,
        manager: &str,
    ) -> Result<Outcome, ApiError> {
        self.check_creatable(kind, ns, name, &object)?;
        let mut object = object;
        if let Stored::Namespace(n) = &mut object {
            Arc::make_mut(n).metadata.labels.insert(Namespace::NAME_LABEL.to_string(), name.to_string());
        }
        let managers = self.creator_managers(kind, &object, manager, self.wall_secs(now));
        if let Stored::Namespace(n) = &mut object {
            Arc::make_mut(n).set_server_defaults();
        }
        let object = self.commit(now, kind, ns, name, object, managers);
        Ok(Outcome::Written { object, created: true })
    }

    /// The managers of a created object: its creator owns every field it sets
    /// (`record_update` of the diff from nothing). The Events an elector records all have the
    /// same keys, and its Lease creates set the same fields, so the creator's field set and
    /// FieldsV1 trie are taken from an earlier create of the same kind and shape, instead of
    /// finding the fields (for JSON, rendering the object) and building the trie again (two
    /// thirds of an Event's cost). Debug builds — every test — check each answer against the
    /// generic computation.
    fn creator_managers(&mut self, kind: Kind, object: &Stored, manager: &str, now_secs: i64) -> Vec<ManagerState> {
        let from_diff = |diff: &FieldDiff| {
            let mut managers = Vec::new();
            record_update(&mut managers, manager, kind.api_version(), diff, now_secs);
            managers
        };
        let generic = |object: &Stored| from_diff(&field_diff(None, object));
        let mut shape = String::new();
        // A Lease's or a LeaseCandidate's diff is cheap (a look at its spec's fields and its
        // labels), and it is the shape:
        // a diff from nothing only adds.
        let mut typed_diff = None;
        match object {
            Stored::Json(_, json) if json.metadata.labels.is_empty() && json.metadata.annotations.is_empty() => {
                json_shape(&json.rest, &mut shape)
            }
            Stored::Frozen(_, frozen)
                if frozen.metadata.labels.is_empty()
                    && frozen.metadata.annotations.is_empty()
                    && match frozen.shape() {
                        Some(known) => {
                            debug_assert_eq!(
                                frozen_shape(frozen.text(), &mut shape).map(|()| shape.as_str()),
                                Some(known),
                                "the shape its writer gave is its text's"
                            );
                            shape.clear();
                            shape.push_str(known);
                            true
                        }
                        None => frozen_shape(frozen.text(), &mut shape).is_some(),
                    } => {}
            Stored::Lease(_) | Stored::LeaseCandidate(_) => {
                let diff = field_diff(None, object);
                debug_assert!(diff.removed.is_empty(), "a create removes nothing");
                fields_shape(&diff.changed, &mut shape);
                typed_diff = Some(diff);
            }
            _ => return generic(object),
        }
        let remembered = {
            let memos = self.create_memos.lock().expect("the memo lock is never held across a panic");
            memos.iter().find(|m| m.kind == kind && m.shape == shape).map(|m| m.creator.clone())
        };
        let managers = match remembered {
            Some(creator) => creator
                .into_iter()
                .map(|mut creator| {
                    creator.manager = manager.to_string();
                    creator.time_secs = now_secs;
                    creator
                })
                .collect(),
            None => {
                let managers = match &typed_diff {
                    Some(diff) => from_diff(diff),
                    None => generic(object),
                };
                let mut memos = self.create_memos.lock().expect("the memo lock is never held across a panic");
                if memos.len() == CREATE_MEMOS {
                    memos.remove(0);
                }
                memos.push(CreateMemo { kind, shape, creator: managers.first().cloned() });
                managers
            }
        };
        debug_assert_eq!(managers, generic(object), "a create's managers from the memo are the generic ones");
        managers
    }

    /// A create needs, in the order the apiserver asks: an existing namespace (the
    /// NamespaceLifecycle admission plugin, which `handlers/create.go` runs before the store), a
    /// valid object — name, labels, annotations and spec in one 422 (`rest.BeforeCreate`) — and
    /// then a free name (the storage's AlreadyExists: `registry/store.go` `create`).
    fn check_creatable(&self, kind: Kind, ns: &str, name: &str, object: &Stored) -> Result<(), ApiError> {
        if kind.is_namespaced() && self.record(Kind::Namespace, "", ns).is_none() {
            return Err(ApiError::not_found(Kind::Namespace, ns));
        }
        let mut errors = validate_name(kind, name);
        errors.extend(validate_object(object));
        if !errors.is_empty() {
            return Err(ApiError::invalid(kind.group(), kind.kind_name(), name, &errors));
        }
        if self.record(kind, ns, name).is_some() {
            return Err(ApiError::already_exists(kind, name));
        }
        Ok(())
    }

    /// The second, `create` authorisation (with the name) of a PUT or apply that creates.
    fn authorize_create_on_write(&self, req: &Request, ns: &str) -> Result<(), ApiError> {
        if self.is_authorized(&req.user, "create", req.kind, ns, &req.name) {
            Ok(())
        } else {
            Err(ApiError::forbidden(req.kind, &req.name, &req.user.name, "create", ns))
        }
    }

    fn update(&mut self, now: Nanos, req: &Request, ns: &str) -> Result<Outcome, ApiError> {
        if let Body::LeaseCandidate { object, time: Some(time) } = &req.body
            && req.kind == Kind::LeaseCandidate
            && let Some(written) = self.candidate_time_write(now, req, ns, object, *time)
        {
            return Ok(written);
        }
        let manager = default_manager(req, "kubectl-replace").to_string();
        self.write_remembered(now, req, ns, manager, |s, now, req, ns, manager| s.update_fully(now, req, ns, &manager))
    }

    /// `update` without the memory of unchanged writes.
    fn update_fully(&mut self, now: Nanos, req: &Request, ns: &str, manager: &str) -> Result<Outcome, ApiError> {
        let kind = req.kind;
        let object = self.decode_request(req)?;
        if object.meta().name != req.name.as_ref() {
            return Err(name_mismatch(&object.meta().name, &req.name));
        }
        check_namespace(&object, ns)?;
        let Some(record) = self.record(kind, ns, &req.name) else {
            if !allow_create_on_update(kind) {
                return Err(ApiError::not_found(kind, &req.name));
            }
            // update.go authorises a create-on-update a second time, as `create` with the name.
            self.authorize_create_on_write(req, ns)?;
            // The storage layer clears any resourceVersion of an object it creates.
            return self.insert_new(now, kind, ns, &req.name, object, manager);
        };
        let sent_rv = &object.meta().resource_version;
        if sent_rv.is_empty() {
            if !allow_unconditional_update(kind) {
                let field = FieldError::invalid("metadata.resourceVersion", "0", "must be specified for an update");
                return Err(ApiError::invalid(kind.group(), kind.resource(), &req.name, &[field]));
            }
        } else if *sent_rv != record.object.meta().resource_version {
            return Err(ApiError::optimistic_lock_conflict(kind, &req.name));
        }
        self.write_update(now, kind, ns, &req.name, object, manager, None)
    }

    /// Validate, record ownership as an Update, persist unless nothing changed. `live_json`: the
    /// live object's JSON, if the caller rendered it already.
    #[allow(clippy::too_many_arguments)]
    fn write_update(
        &mut self,
        now: Nanos,
        kind: Kind,
        ns: &str,
        name: &str,
        object: Stored,
        manager: &str,
        live_json: Option<&Value>,
    ) -> Result<Outcome, ApiError> {
        let record = self.record(kind, ns, name).expect("caller checked");
        let errors = validate_update(&object, &record.object);
        if !errors.is_empty() {
            return Err(ApiError::invalid(kind.group(), kind.kind_name(), name, &errors));
        }
        let wall_secs = self.wall_secs(now);
        let diff = field_diff_with(Some(&record.object), live_json, &object);
        if diff.is_empty() && object.same_content(&record.object) {
            // apiserver.md §4: a write that changes nothing is not persisted; RV unchanged.
            return Ok(Outcome::Written { object: record.object.clone(), created: false });
        }
        // From here on nothing can fail: move the managers out instead of copying them.
        let managers = std::mem::take(&mut self.record_mut(kind, ns, name).expect("caller checked").managers);
        let mut managers = Arc::unwrap_or_clone(managers);
        record_update(&mut managers, manager, kind.api_version(), &diff, wall_secs);
        let object = self.commit(now, kind, ns, name, object, managers);
        Ok(Outcome::Written { object, created: false })
    }

    /// A LeaseCandidate's owner renewing, or the election controller pinging, on the very object
    /// the server holds (its informer's copy is the stored one, shared): one time changes, its
    /// writer owns it alone, so the generic path would validate nothing new, diff one field and
    /// move only the writer's managedFields time. Done here without the decode, the diff and the
    /// managers' rebuild (`None`: not such a write; the generic path takes it). As on the typed
    /// Lease path, an audited server or one keeping changes for watches takes the generic path.
    /// Debug builds — every test — run the generic path on a copy of the server and check it
    /// agrees.
    fn candidate_time_write(
        &mut self,
        now: Nanos,
        req: &Request,
        ns: &str,
        sent: &Arc<LeaseCandidate>,
        time: CandidateTime,
    ) -> Option<Outcome> {
        let kind = Kind::LeaseCandidate;
        if self.audit_on || self.changes.is_some() {
            return None;
        }
        let slot = self.slot_of(kind, ns, &req.name)?;
        let record = self.records[slot].as_ref().expect("a live slot");
        let Stored::LeaseCandidate(live) = &record.object else { return None };
        if !Arc::ptr_eq(live, sent) || time.is_set_on(live) {
            return None;
        }
        let manager = default_manager(req, "kubectl-replace");
        let api_version = kind.api_version();
        let (writer, _, _) = renewal_writer(&record.managers, manager, api_version, time.bit())?;
        #[cfg(test)]
        {
            self.candidate_time_writes += 1;
        }
        // An old version of this very candidate first: its managedFields entries already share
        // the live one's texts, so the copy moves no reference count (another candidate's
        // would move two a text, atomic increments and decrements).
        let spares = &mut self.spare_candidates.0;
        let same = spares
            .iter()
            .rposition(|s| s.metadata.name == live.metadata.name && s.metadata.namespace == live.metadata.namespace);
        let spare = match same {
            Some(i) => Some(spares.swap_remove(i)),
            None => spares.pop(),
        };
        let check = cfg!(debug_assertions).then(|| self.clone());
        let wall_secs = self.wall_secs(now);
        self.revision += 1;
        let revision = self.revision;
        let record = self.records[slot].as_mut().expect("a live slot");
        let Stored::LeaseCandidate(live) = &record.object else { unreachable!("checked above") };
        let recycled = spare.and_then(|mut spare| {
            let copy = Arc::get_mut(&mut spare)?;
            copy.clone_from(live);
            time.set(copy);
            Some(spare)
        });
        let mut object = recycled.unwrap_or_else(|| Arc::new(time.set_on(live)));
        let copy = Arc::get_mut(&mut object).expect("a new copy");
        super::typed::write_decimal(&mut copy.metadata.resource_version, revision);
        sync_renewal_time(&mut copy.metadata.managed_fields, manager, api_version, wall_secs);
        Arc::make_mut(&mut record.managers)[writer].time_secs = wall_secs;
        let object = Stored::LeaseCandidate(object);
        record.object = object.clone();
        record.rv = revision;
        record.unchanged_writes.clear();
        if let Some(mut copy) = check {
            let generic = copy.update_fully(now, req, ns, manager);
            let Ok(Outcome::Written { object: expected, created: false }) = generic else {
                panic!("the generic path writes a candidate's time too: {:?}", generic.err())
            };
            assert_eq!(expected.to_json(), object.to_json(), "a candidate's time write answers as the generic path");
            let (ours, theirs) = (self.record_at(slot), copy.record_at(slot));
            assert_eq!((ours.rv, &ours.managers), (theirs.rv, &theirs.managers), "and stores what it stores");
            assert_eq!(
                (ours.lease_ref, ours.unchanged_writes.len()),
                (theirs.lease_ref, theirs.unchanged_writes.len())
            );
            assert_eq!((copy.revision, copy.warnings.len()), (self.revision, self.warnings.len()));
        }
        Some(Outcome::Written { object, created: false })
    }

    /// A LeaseCandidate a client has let go of (its informer's copy, replaced): kept for the next
    /// time write to be copied into if nobody else holds it (a recycled buffer, nothing more: no
    /// answer depends on it).
    pub(crate) fn recycle_candidate(&mut self, old: Arc<LeaseCandidate>) {
        let spares = &mut self.spare_candidates.0;
        if Arc::strong_count(&old) == 1 && Arc::weak_count(&old) == 0 && spares.len() < SPARE_CANDIDATES {
            spares.push(old);
        }
    }

    /// How many recycled LeaseCandidates wait to be written into, and how many time writes
    /// `candidate_time_write` took.
    #[cfg(test)]
    pub(super) fn candidate_time_write_counts(&self) -> (usize, u64) {
        (self.spare_candidates.0.len(), self.candidate_time_writes)
    }

    /// JSON merge patch (apiserver.md §2.1, §4): merge onto the live JSON, decode typed (a decode
    /// failure is the 422 `patch: Invalid value` error), an RV in the patch is a precondition.
    fn patch(&mut self, now: Nanos, req: &Request, ns: &str) -> Result<Outcome, ApiError> {
        let manager = default_manager(req, "kubectl-patch").to_string();
        self.write_remembered(now, req, ns, manager, |s, now, req, ns, manager| s.patch_fully(now, req, ns, &manager))
    }

    /// `patch` without the memory of unchanged writes.
    fn patch_fully(&mut self, now: Nanos, req: &Request, ns: &str, manager: &str) -> Result<Outcome, ApiError> {
        let kind = req.kind;
        if req.force {
            let field = FieldError::forbidden("force", "may not be specified for non-apply patch");
            return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[field]));
        }
        let patch = patch_body(&req.body)?;
        let record = self.record(kind, ns, &req.name).ok_or_else(|| ApiError::not_found(kind, &req.name))?;
        let live_json = record.object.to_json();
        let live_rv = record.object.meta().resource_version.clone();
        let (patched, op_errors) = match &req.body {
            // Decoded and applied to the object read (`applyJSPatch`, inside the store's update:
            // a missing object is a 404 whatever the patch); the strict decoder's errors about
            // its operations (unknown or repeated fields) first; a failed operation is
            // `errors.NewGenericServerResponse(422, …)`, whose message is not the operation's.
            Body::JsonPatch(text) => {
                let searched = req.field_validation != FieldValidation::Ignore;
                let (ops, op_errors) = super::json_patch::decode(text, searched)?;
                let patched =
                    super::json_patch::apply(live_json.clone(), &ops).map_err(|_| ApiError::json_patch_failed())?;
                (patched, op_errors)
            }
            _ => (merge_patch(&live_json, &patch).map_err(ApiError::bad_request)?, Vec::new()),
        };
        // A patch that does not decode is named by the patched object's JSON (the JSON merge
        // patcher) or by the patch as Go prints its map (the strategic one): apiserver@24a394e5
        // `handlers/patch.go:348-376`, `:771-797` (docs/sources/apiserver-wire.md §11).
        // (Rendered only when wanted: a reconciler's patch every period wants neither.)
        let strategic = matches!(req.body, Body::StrategicMergePatch(_));
        let named = || go_quote(&if strategic { go_percent_v(&patch) } else { go_json_marshal(&patched) });
        let object = Stored::decode(kind, &patched).map_err(|decode_error| {
            ApiError::invalid("", "", "", &[FieldError::invalid("patch", &named(), &decode_error)])
        })?;
        // Fields the kind lacks, once the patched object decoded (a decode error trumps them).
        if req.field_validation != FieldValidation::Ignore {
            let unknown = super::schema::unknown_fields_in_text(kind, &go_json_marshal(&patched)).unwrap_or_default();
            // The JSON decoder quotes a path (`%q`); the strategic patcher's converter does not.
            // A JSON patch's errors about its operations come first (`appliedStrictErrs`,
            // `:360-365`).
            let mut errors = op_errors;
            errors.extend(unknown.iter().map(|path| {
                if strategic {
                    format!("unknown field \"{path}\"")
                } else {
                    format!("unknown field {}", go_quote(path))
                }
            }));
            if !errors.is_empty() && req.field_validation == FieldValidation::Strict {
                let text = format!("strict decoding error: {}", errors.join(", "));
                return Err(ApiError::invalid("", "", "", &[FieldError::invalid("patch", &named(), &text)]));
            }
            self.warnings.extend(errors);
        }
        let rv = &object.meta().resource_version;
        if !rv.is_empty() && *rv != live_rv {
            return Err(ApiError::optimistic_lock_conflict(kind, &req.name));
        }
        if object.meta().name != req.name.as_ref() {
            return Err(name_mismatch(&object.meta().name, &req.name));
        }
        check_namespace(&object, ns)?;
        self.write_update(now, kind, ns, &req.name, object, manager, Some(&live_json))
    }

    /// Server-side apply (apiserver.md §5).
    fn apply(&mut self, now: Nanos, req: &Request, ns: &str) -> Result<Outcome, ApiError> {
        let manager = match req.field_manager.as_deref() {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => {
                let field = FieldError::required("fieldManager", "is required for apply patch");
                return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[field]));
            }
        };
        self.write_remembered(now, req, ns, manager, |s, now, req, ns, manager| s.apply_fully(now, req, ns, manager))
    }

    /// `full(self, …)` — a write's full path — unless the same write already changed nothing at
    /// the object's resourceVersion: then its remembered answer (see `WriteMemo`). Debug builds
    /// — every test — run the full path on a copy of the server at every remembered answer and
    /// check that it agrees and commits nothing.
    fn write_remembered(
        &mut self,
        now: Nanos,
        req: &Request,
        ns: &str,
        manager: String,
        full: fn(&mut Self, Nanos, &Request, &str, String) -> Result<Outcome, ApiError>,
    ) -> Result<Outcome, ApiError> {
        let Some(body) = req.body.json() else { return full(self, now, req, ns, manager) };
        // A remembered answer would skip the search for unknown fields (an outside client's).
        if req.field_validation != FieldValidation::Ignore {
            return full(self, now, req, ns, manager);
        }
        let shared = match &req.body {
            Body::SharedJson(shared) => Some(shared),
            _ => None,
        };
        if req.kind == Kind::Lease {
            return full(self, now, req, ns, manager);
        }
        let live_rv = match self.record(req.kind, ns, &req.name) {
            None => return full(self, now, req, ns, manager),
            Some(record) => {
                let same = |m: &&WriteMemo| {
                    m.rv == record.rv
                        && m.verb == req.verb
                        && m.force == req.force
                        && m.manager == manager
                        && (shared.is_some_and(|b| Arc::ptr_eq(&m.body, b)) || identical_json(&m.body, body))
                };
                if let Some(memo) = record.unchanged_writes.iter().find(same) {
                    let answer = match &memo.error {
                        None => Ok(Outcome::Written { object: record.object.clone(), created: false }),
                        Some(error) => Err(error.clone()),
                    };
                    if cfg!(debug_assertions) {
                        let mut copy = self.clone();
                        let revision = copy.revision;
                        match (full(&mut copy, now, req, ns, manager), &answer) {
                            (
                                Ok(Outcome::Written { object, created: false }),
                                Ok(Outcome::Written { object: kept, .. }),
                            ) => {
                                assert!(object.same_content(kept), "a no-op write again leaves the object")
                            }
                            (Err(error), Err(kept)) => assert_eq!(&error, kept, "a failed write again fails the same"),
                            _ => panic!("a write that changed nothing answers the same again"),
                        }
                        assert_eq!(copy.revision, revision, "a write that changed nothing commits nothing again");
                    }
                    return answer;
                }
                record.rv
            }
        };
        let revision = self.revision;
        let answer = full(self, now, req, ns, manager.clone());
        // Nothing committed (a no-op or a failure): the same write will answer the same.
        let unchanged = match &answer {
            Ok(Outcome::Written { created: false, .. }) => Some(None),
            Err(error) => Some(Some(error.clone())),
            Ok(_) => None,
        };
        if let Some(error) = unchanged
            && self.revision == revision
            && let Some(record) = self.record_mut(req.kind, ns, &req.name)
            && record.rv == live_rv
        {
            if record.unchanged_writes.len() == WRITE_MEMOS {
                record.unchanged_writes.remove(0);
            }
            let body = shared.map_or_else(|| Arc::new(body.clone()), Arc::clone);
            let (verb, force) = (req.verb, req.force);
            record.unchanged_writes.push(WriteMemo { rv: live_rv, verb, manager, force, body, error });
        }
        answer
    }

    /// `apply` without the memory of unchanged writes.
    fn apply_fully(&mut self, now: Nanos, req: &Request, ns: &str, manager: String) -> Result<Outcome, ApiError> {
        let kind = req.kind;
        let config = apply_config(kind, &req.body)?;
        let config_name = metadata_field(&config, "name").and_then(Value::as_str).unwrap_or_default();
        if config_name != req.name.as_ref() {
            return Err(name_mismatch(config_name, &req.name));
        }
        let config_ns = metadata_field(&config, "namespace").and_then(Value::as_str).unwrap_or_default();
        if kind.is_namespaced() && !config_ns.is_empty() && config_ns != ns {
            return Err(namespace_mismatch());
        }
        let applied = applied_field_set(&config);
        let wall_secs = self.wall_secs(now);
        if self.record(kind, ns, &req.name).is_none() {
            // patch.go authorises an apply that creates a second time, as `create` with the name.
            self.authorize_create_on_write(req, ns)?;
            let object = Stored::decode(kind, &config).map_err(|e| decode_error(kind, &e))?;
            self.check_creatable(kind, ns, &req.name, &object)?;
            let mut managers = Vec::new();
            record_apply(
                &mut managers,
                &manager,
                kind.api_version(),
                applied,
                &field_diff(None, &object),
                req.force,
                wall_secs,
            )?;
            let object = self.commit(now, kind, ns, &req.name, object, managers);
            return Ok(Outcome::Written { object, created: true });
        }
        // The live object is merged onto without its managedFields: a configuration never
        // carries any (`apply_config` refuses them), so the merged object's would be the live
        // one's; `commit` writes every entry afresh from the managers whatever the object held
        // (`sync_managed_fields`), and no diff tracks them (`UNTRACKED`). So the merged object
        // is decoded without them, to the same commit.
        let live_json =
            self.record_mut(kind, ns, &req.name).expect("checked above").object.json_without_managed_fields();
        let record = self.record(kind, ns, &req.name).expect("checked above");
        let mut merged = apply_merge(&live_json, &config);
        // Fields this manager applied before but omits now go away unless someone else owns them.
        let others = owned_by_others(&record.managers, &manager);
        // A map it owned as a whole (applied empty) keeps what others own beneath it (SMD's prune
        // puts back the items other managers own, `merge/update.go` `addBackOwnedItems`).
        for dropped in previously_applied(&record.managers, &manager).difference(&applied) {
            let owned_beneath = |f: &String| f.strip_prefix(dropped.as_str()).is_some_and(|rest| rest.starts_with(SEP));
            if !others.contains(dropped) && !others.iter().any(owned_beneath) {
                remove_field(&mut merged, dropped);
            }
        }
        let object = Stored::decode(kind, &merged).map_err(|e| decode_error(kind, &e))?;
        let rv = &object.meta().resource_version;
        if !rv.is_empty() && *rv != record.object.meta().resource_version {
            return Err(ApiError::optimistic_lock_conflict(kind, &req.name));
        }
        let errors = validate_object(&object);
        if !errors.is_empty() {
            return Err(ApiError::invalid(kind.group(), kind.kind_name(), &req.name, &errors));
        }
        let diff = field_diff_with(Some(&record.object), Some(&live_json), &object);
        let mut managers = Vec::clone(&record.managers);
        record_apply(&mut managers, &manager, kind.api_version(), applied, &diff, req.force, wall_secs)?;
        if object.same_content(&record.object) && same_ownership(&managers, &record.managers) {
            return Ok(Outcome::Written { object: record.object.clone(), created: false });
        }
        let object = self.commit(now, kind, ns, &req.name, object, managers);
        Ok(Outcome::Written { object, created: false })
    }

    fn delete(&mut self, kind: Kind, ns: &str, name: &str) -> Result<Outcome, ApiError> {
        let removed =
            self.store.get_mut(&kind).and_then(|by_ns| by_ns.get_mut(ns)).and_then(|by_name| by_name.remove(name));
        match removed {
            Some(slot) => {
                let record = self.records[slot].take();
                self.free_slots.push(slot);
                if kind == Kind::Lease
                    && let Some(&r) = self.lease_ref_index.get(&(ns.to_string(), name.to_string()))
                {
                    self.lease_refs[r.0 as usize].slot = None;
                    self.lease_refs[r.0 as usize].live = None;
                }
                self.rbac_changed(kind);
                self.revision += 1;
                if self.changes.is_some()
                    && let Some(record) = record
                {
                    let mut object = record.object;
                    object.meta_mut().resource_version = self.revision.to_string();
                    self.log_change(kind, ns, name, ChangeType::Deleted, object);
                }
                Ok(Outcome::Deleted { revision: self.revision })
            }
            None => Err(ApiError::not_found(kind, name)),
        }
    }

    /// Persists `object` under the next revision with the server-owned metadata.
    fn commit(
        &mut self,
        now: Nanos,
        kind: Kind,
        ns: &str,
        name: &str,
        mut object: Stored,
        managers: Vec<ManagerState>,
    ) -> Stored {
        self.revision += 1;
        let slot = self.slot_of(kind, ns, name);
        let existed = slot.is_some();
        // Frozen before the server's metadata is written: a recorder's Event, shared with its
        // request, is not copied as a tree first.
        object = object.for_store();
        let meta = object.meta_mut();
        // Texts that are already right (an update's name, namespace and uid) are not written
        // again: each was an allocation at every write.
        match slot.and_then(|slot| self.records[slot].as_ref()) {
            Some(live) => {
                let live = live.object.meta();
                if meta.uid != live.uid {
                    meta.uid.clone_from(&live.uid);
                }
                meta.creation_timestamp = live.creation_timestamp;
            }
            None => {
                meta.uid = self.next_uid();
                meta.creation_timestamp = Some(Time::from_unix_nanos(self.wall_nanos(now)));
            }
        }
        if meta.name != name {
            meta.name = name.to_string();
        }
        if meta.namespace != ns {
            meta.namespace = ns.to_string();
        }
        super::typed::write_decimal(&mut meta.resource_version, self.revision);
        sync_managed_fields(&mut meta.managed_fields, &managers);
        let response = object.clone();
        if self.changes.is_some() {
            let change = if existed { ChangeType::Modified } else { ChangeType::Added };
            self.log_change(kind, ns, name, change, object.clone());
        }
        let lease_ref = match kind {
            Kind::Lease => self.lease_ref_index.get(&(ns.to_string(), name.to_string())).copied(),
            _ => None,
        };
        if let Some(r) = lease_ref
            && let Stored::Lease(l) = &object
        {
            self.lease_refs[r.0 as usize].live = Some(LeaseMirror::of(l, self.revision, &mut self.symbols));
        }
        let record = Record {
            object,
            managers: self.shared_managers(managers),
            rv: self.revision,
            lease_ref,
            unchanged_writes: Vec::new(),
        };
        self.rbac_changed(kind);
        if let Some(slot) = slot {
            self.records[slot] = Some(record);
            return response;
        }
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.records[slot] = Some(record);
                slot
            }
            None => {
                self.records.push(Some(record));
                self.records.len() - 1
            }
        };
        self.store.entry(kind).or_default().entry(ns.to_string()).or_default().insert(name.to_string(), slot);
        if let Some(r) = lease_ref {
            self.lease_refs[r.0 as usize].slot = Some(slot);
        }
        response
    }

    fn ensure_namespace(&mut self, now: Nanos, ns: &str) {
        if self.record(Kind::Namespace, "", ns).is_none() {
            let mut namespace = Namespace::default();
            namespace.metadata.labels.insert(Namespace::NAME_LABEL.to_string(), ns.to_string());
            let diff = field_diff(None, &Stored::Namespace(Arc::new(namespace.clone())));
            let mut managers = Vec::new();
            record_update(&mut managers, "kube-apiserver", "v1", &diff, self.wall_secs(now));
            namespace.set_server_defaults();
            self.commit(now, Kind::Namespace, "", ns, Stored::Namespace(Arc::new(namespace)), managers);
        }
    }

    fn shared_managers(&self, managers: Vec<ManagerState>) -> Arc<Vec<ManagerState>> {
        if managers.is_empty() { Arc::clone(&self.no_managers) } else { Arc::new(managers) }
    }

    pub(crate) fn slot_of(&self, kind: Kind, ns: &str, name: &str) -> Option<usize> {
        for found in &self.found_slots.0 {
            let slot = found.load(Relaxed);
            if let Some(Some(record)) = self.records.get(slot) {
                let meta = record.object.meta();
                if record.object.kind() == kind && meta.name == name && meta.namespace == ns {
                    debug_assert_eq!(self.slot_in_store(kind, ns, name), Some(slot), "a record's key is its place");
                    return Some(slot);
                }
            }
        }
        let slot = self.slot_in_store(kind, ns, name)?;
        // The older of the two gives way.
        let [newer, older] = &self.found_slots.0;
        older.store(newer.load(Relaxed), Relaxed);
        newer.store(slot, Relaxed);
        Some(slot)
    }

    fn slot_in_store(&self, kind: Kind, ns: &str, name: &str) -> Option<usize> {
        self.store.get(&kind)?.get(ns)?.get(name).copied()
    }

    pub(super) fn record(&self, kind: Kind, ns: &str, name: &str) -> Option<&Record> {
        self.slot_of(kind, ns, name).and_then(|slot| self.records[slot].as_ref())
    }

    fn record_mut(&mut self, kind: Kind, ns: &str, name: &str) -> Option<&mut Record> {
        let slot = self.slot_of(kind, ns, name)?;
        self.records[slot].as_mut()
    }

    pub(crate) fn record_at(&self, slot: usize) -> &Record {
        self.records[slot].as_ref().expect("a live slot")
    }

    /// Called after any change of a Role or RoleBinding: cached decisions may be wrong now.
    fn rbac_changed(&mut self, kind: Kind) {
        if matches!(kind, Kind::Role | Kind::RoleBinding) {
            self.rbac_generation += 1;
        }
    }

    /// The typed path's RBAC decision, cached with the Lease until a Role or RoleBinding
    /// changes. A Lease has a handful of callers, so the cache is a short list.
    #[inline]
    pub(crate) fn is_authorized_cached(&mut self, user: UserId, verb: Verb, lease: LeaseRef) -> bool {
        let generation = self.rbac_generation;
        match self.lease_refs[lease.0 as usize].authz.get(user, verb, generation) {
            Some(allowed) => allowed,
            None => self.authorize_and_cache(user, verb, lease),
        }
    }

    /// A decision not in the Lease's cache: made, and cached.
    #[cold]
    #[inline(never)]
    fn authorize_and_cache(&mut self, user: UserId, verb: Verb, lease: LeaseRef) -> bool {
        let generation = self.rbac_generation;
        self.refresh_subject_index();
        let entry = &self.lease_refs[lease.0 as usize];
        let allowed =
            self.is_authorized(&self.users[user.0 as usize], verb.as_str(), Kind::Lease, &entry.namespace, &entry.name);
        self.lease_refs[lease.0 as usize].authz.put(user, verb, allowed, generation);
        allowed
    }

    /// How many decisions [`AuthzMemo`] holds.
    #[cfg(test)]
    pub(crate) fn remembered_decisions(&self) -> usize {
        self.authz_memo.decisions.len()
    }

    /// [`Self::is_authorized`] of a request, remembered for its caller (see [`AuthzMemo`]).
    fn is_authorized_request(&mut self, req: &Request, ns: &str, url_name: &str) -> bool {
        if req.user.is_system_master() {
            return true;
        }
        let memo = &mut self.authz_memo;
        if memo.generation != self.rbac_generation || memo.decisions.len() >= AuthzMemo::MOST {
            memo.decisions.clear();
            memo.generation = self.rbac_generation;
        }
        // The request's own strings, shared (`ns` and `url_name` are each the request's or "").
        let shared = |text: &str, of_request: &Arc<str>| {
            if text.is_empty() { Arc::clone(&memo.empty) } else { Arc::clone(of_request) }
        };
        let key = AuthzKey {
            user: ByAddress(Arc::clone(&req.user)),
            verb: req.verb,
            kind: req.kind,
            namespace: shared(ns, &req.namespace),
            name: shared(url_name, &req.name),
        };
        if let Some(&allowed) = memo.decisions.get(&key) {
            return allowed;
        }
        self.refresh_subject_index();
        let allowed = self.is_authorized(&req.user, req.verb.as_str(), req.kind, ns, url_name);
        self.authz_memo.decisions.insert(key, allowed);
        allowed
    }

    /// Rebuilds the RoleBindings' subject index if a Role or RoleBinding changed since it was
    /// built (at most once per change, and only when a decision is asked).
    pub(crate) fn refresh_subject_index(&mut self) {
        if self.subject_index.as_ref().is_some_and(|(g, _)| *g == self.rbac_generation) {
            return;
        }
        let mut index = SubjectIndex::default();
        for (ns, by_name) in self.store.get(&Kind::RoleBinding).into_iter().flatten() {
            let subjects = index.entry(ns.clone()).or_default();
            for &slot in by_name.values() {
                let Stored::RoleBinding(binding) = &self.record_at(slot).object else { continue };
                for subject in &binding.subjects {
                    let (map, key) = match subject.kind.as_str() {
                        "User" => (&mut subjects.users, subject.name.clone()),
                        "Group" => (&mut subjects.groups, subject.name.clone()),
                        "ServiceAccount" => {
                            let sa_ns = if subject.namespace.is_empty() { ns } else { &subject.namespace };
                            (&mut subjects.users, format!("system:serviceaccount:{sa_ns}:{}", subject.name))
                        }
                        _ => continue,
                    };
                    // Most subjects are named by one binding: room for one, not the four a
                    // first push would make.
                    map.entry(key).or_insert_with(|| Vec::with_capacity(1)).push(slot);
                }
            }
        }
        self.subject_index = Some((self.rbac_generation, index));
    }

    fn is_authorized(&self, user: &User, verb: &str, kind: Kind, ns: &str, name: &str) -> bool {
        if user.is_system_master() {
            return true;
        }
        let attributes = Attributes { verb, api_group: kind.group(), resource: kind.resource(), namespace: ns, name };
        let role_named = |role: &str| match &self.record(Kind::Role, ns, role)?.object {
            Stored::Role(r) => Some(r.as_ref()),
            _ => None,
        };
        let binding_at = |slot: usize| match &self.record_at(slot).object {
            Stored::RoleBinding(b) => Some(b.as_ref()),
            _ => None,
        };
        match &self.subject_index {
            // The bindings that name the user or one of its groups: the decision is whether any
            // binding that names the user grants the request, so these are all it reads.
            Some((generation, index)) if *generation == self.rbac_generation => {
                let Some(subjects) = index.get(ns) else { return false };
                let by_user = subjects.users.get(&user.name).into_iter().flatten();
                let by_group = user.groups.iter().filter_map(|g| subjects.groups.get(g)).flatten();
                rbac::is_granted(&attributes, by_user.chain(by_group).filter_map(|&slot| binding_at(slot)), role_named)
            }
            _ => {
                let bindings = self
                    .store
                    .get(&Kind::RoleBinding)
                    .and_then(|by_ns| by_ns.get(ns))
                    .into_iter()
                    .flat_map(|by_name| by_name.values())
                    .filter_map(|&slot| binding_at(slot));
                rbac::is_allowed(user, &attributes, bindings, role_named)
            }
        }
    }

    pub(crate) fn revision_bump(&mut self) {
        self.revision += 1;
    }

    /// Moves the revision on to `revision` (renewals counted by a quiet stretch).
    pub(crate) fn set_revision(&mut self, revision: u64) {
        debug_assert!(revision >= self.revision);
        self.revision = revision;
    }

    fn wall_nanos(&self, now: Nanos) -> i64 {
        self.epoch_unix_nanos + now as i64
    }

    /// managedFields and creationTimestamp are whole seconds of the server's wall clock.
    pub(crate) fn wall_secs(&self, now: Nanos) -> i64 {
        self.wall_nanos(now).div_euclid(1_000_000_000)
    }

    /// Deterministic, UUID-shaped: a counter, never OS randomness.
    fn next_uid(&mut self) -> String {
        self.uid_counter += 1;
        uid_of(self.uid_counter)
    }
}

/// Metadata of a seeded object, with decode errors as a 400.
fn decode_seed_metadata(value: &Value) -> Result<ObjectMeta, ApiError> {
    ObjectMeta::deserialize(value).map_err(|e| ApiError::bad_request(e.to_string()))
}

fn parse_rv(text: &str) -> u64 {
    text.parse().unwrap_or(0)
}

fn same_ownership(a: &[ManagerState], b: &[ManagerState]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.manager == y.manager
                && x.operation == y.operation
                && x.api_version == y.api_version
                && x.fields == y.fields
        })
}

fn default_manager<'a>(req: &'a Request, kubectl_default: &'a str) -> &'a str {
    req.field_manager.as_deref().filter(|m| !m.is_empty()).unwrap_or(kubectl_default)
}

/// An apply configuration with fields its kind lacks: structured-merge-diff's validation errors
/// (`typed/helpers.go:30-58`: one `<path>: field not declared in schema`, or `errors:` and each
/// on its own line, indented two spaces) in `structuredMergeManager.Apply`'s plain error
/// (apimachinery@eed236ce `pkg/util/managedfields/internal/structuredmerge.go:145-148`, `:79-88`:
/// the configuration's namespace and name, then the group/version and kind), which the handler
/// answers as a 500 without a reason (kubernetes/kubernetes#122480 shows the body; #139253 asks
/// for a 400, not merged at 24a394e5).
fn typed_patch_error(kind: Kind, ns: &str, name: &str, undeclared: &[String]) -> ApiError {
    let errors: Vec<String> = undeclared.iter().map(|path| format!("{path}: field not declared in schema")).collect();
    let text = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n{}", many.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n")),
    };
    let (group, version) = kind.api_version().rsplit_once('/').unwrap_or(("", kind.api_version()));
    ApiError::plain(format!(
        "failed to create typed patch object ({ns}/{name}; {group}/{version}, Kind={}): {text}",
        kind.kind_name()
    ))
}

/// rest.go `checkName`.
fn name_mismatch(object_name: &str, url_name: &str) -> ApiError {
    ApiError::bad_request(format!(
        "the name of the object ({object_name}) does not match the name on the URL ({url_name})"
    ))
}

fn namespace_mismatch() -> ApiError {
    ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request")
}

fn check_namespace(object: &Stored, ns: &str) -> Result<(), ApiError> {
    let object_ns = &object.meta().namespace;
    if object.kind().is_namespaced() && !object_ns.is_empty() && object_ns != ns {
        return Err(namespace_mismatch());
    }
    Ok(())
}

/// handlers/rest.go `transformDecodeError` with a known kind (apiserver.md §2.1).
fn decode_error(kind: Kind, error: &str) -> ApiError {
    // The version of the kind's group version: `v1`, `v1beta1` (a LeaseCandidate).
    let version = kind.api_version().rsplit('/').next().unwrap_or("v1");
    ApiError::bad_request(format!(
        "{} in version {version:?} cannot be handled as a {}: {error}",
        kind.kind_name(),
        kind.kind_name()
    ))
}

/// `transformDecodeError` when the body's kind could not even be read.
fn unrecognized_body(kind: Kind, error: &str, body: &str) -> ApiError {
    let summary = if body.is_empty() {
        "<empty>".to_string()
    } else if body.starts_with('{') {
        if body.len() > 30 { format!("{} ...", body.get(..30).unwrap_or(body)) } else { body.to_string() }
    } else {
        let bytes = &body.as_bytes()[..body.len().min(30)];
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        if body.len() > 30 { format!("{hex} ...") } else { hex }
    };
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): {error} ({summary})",
        kind.kind_name()
    ))
}

fn parse_text(kind: Kind, text: &str) -> Result<Value, ApiError> {
    serde_json::from_str(text).map_err(|e| {
        let reason = if text.trim().is_empty() { "unexpected end of JSON input".to_string() } else { e.to_string() };
        unrecognized_body(kind, &format!("couldn't get version/kind; json parse error: {reason}"), text)
    })
}

/// The typed object of a create/update body: a typed body as is (no copy, no JSON); JSON
/// checked for apiVersion/kind (defaulted when absent, as the URL gives them) and decoded,
/// then, unless `field_validation` is `Ignore`, searched for fields the kind's type lacks
/// (returned; the caller warns or refuses). A typed body has none: the simulation built it.
fn decode_body(kind: Kind, body: &Body, field_validation: FieldValidation) -> Result<(Stored, Vec<String>), ApiError> {
    // A JSON body is decoded where it lies (decoding copies what it keeps); copying it first
    // was a fifth of the cost of an elector's Event.
    let rendered;
    let value = match body {
        Body::Lease(lease) if kind == Kind::Lease => return Ok((Stored::Lease(Arc::clone(lease)), Vec::new())),
        Body::ConfigMap(cm) if kind == Kind::ConfigMap => {
            return Ok((Stored::ConfigMap(Arc::clone(cm)), Vec::new()));
        }
        Body::LeaseCandidate { object, time } if kind == Kind::LeaseCandidate => {
            let object = match time {
                Some(time) => Arc::new(time.set_on(object)),
                None => Arc::clone(object),
            };
            return Ok((Stored::LeaseCandidate(object), Vec::new()));
        }
        Body::JsonKind(body_kind, object) if *body_kind == kind => {
            return Ok((Stored::Json(kind, Arc::clone(object)), Vec::new()));
        }
        // Kept frozen, as the store keeps it: a recorder's Event is not decoded and frozen
        // again (`creator_managers` takes the shape its writer gave, `FrozenJson::shape`).
        Body::Frozen(body_kind, object) if *body_kind == kind => {
            return Ok((Stored::Frozen(kind, Arc::clone(object)), Vec::new()));
        }
        Body::Json(value) => value,
        Body::SharedJson(value) => value,
        Body::Text(text) | Body::StrategicMergePatch(text) | Body::JsonPatch(text) => {
            rendered = parse_text(kind, text)?;
            &rendered
        }
        Body::Lease(_) | Body::ConfigMap(_) | Body::LeaseCandidate { .. } | Body::JsonKind(..) | Body::Frozen(..) => {
            rendered = typed_body_json(body).expect("a typed body");
            &rendered
        }
        Body::None => {
            return Err(unrecognized_body(
                kind,
                "couldn't get version/kind; json parse error: unexpected end of JSON input",
                "",
            ));
        }
    };
    if !value.is_object() {
        let text = go_json_marshal(value);
        return Err(unrecognized_body(
            kind,
            "couldn't get version/kind; json parse error: json: cannot unmarshal into Go value of type struct",
            &text,
        ));
    }
    check_type_meta(kind, value)?;
    let object = Stored::decode(kind, value).map_err(|e| decode_error(kind, &e))?;
    // Strict decoding reads the body again only once it decoded (a wrong type trumps an
    // unknown field: sigs.k8s.io/json reports strict errors only if no other occurred).
    let unknown = match field_validation {
        FieldValidation::Ignore => Vec::new(),
        FieldValidation::Warn | FieldValidation::Strict => super::schema::unknown_fields(kind, value),
    };
    Ok((object, unknown))
}

/// A Lease as JSON text decodes: the object's fields and the wire's `apiVersion`/`kind`.
/// Mirrors [`Lease`]'s own decoding (every field defaulted, unknown fields ignored).
#[derive(Default, Deserialize)]
#[serde(default)]
struct LeaseText {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
    metadata: ObjectMeta,
    spec: super::types::LeaseSpec,
}

/// The typed body a create or update of `kind` with this JSON text decodes to, decoded from
/// the text without building a JSON tree first (the HTTP adapter's renewals: a third of the
/// server's work per PUT was that tree). `None` for anything but a plain, well-formed object of
/// `kind` with matching `apiVersion`/`kind`: the server then decodes the text itself, with
/// its own error texts. Only Leases for now. Debug builds check the answer against the
/// server's own decoding of the same text.
pub fn typed_body_from_text(kind: Kind, text: &str, field_validation: FieldValidation) -> Option<Body> {
    if kind != Kind::Lease || !text.trim_start().starts_with('{') {
        return None;
    }
    // A body with a field the Lease type lacks is the server's to warn of or refuse.
    if field_validation != FieldValidation::Ignore
        && !super::schema::unknown_fields_in_text(kind, text).is_some_and(|unknown| unknown.is_empty())
    {
        return None;
    }
    // A duplicate field, a wrong type, trailing bytes: an error here, the server's path then.
    let decoded: LeaseText = serde_json::from_str(text).ok()?;
    check_type_meta_of(kind, decoded.api_version.as_deref(), decoded.kind.as_deref()).ok()?;
    let lease = Arc::new(Lease { metadata: decoded.metadata, spec: decoded.spec });
    if cfg!(debug_assertions) {
        match decode_body(kind, &Body::Text(text.to_string()), FieldValidation::Ignore).map(|(object, _)| object) {
            Ok(Stored::Lease(generic)) => assert_eq!(*generic, *lease, "the text decodes as the server decodes it"),
            other => panic!("the server decodes {text:?} otherwise: {other:?}"),
        }
    }
    Some(Body::Lease(lease))
}

/// A typed body (a Lease, a ConfigMap, a LeaseCandidate, an Event) as the JSON a client would
/// have sent; `None` for the others.
fn typed_body_json(body: &Body) -> Option<Value> {
    match body {
        Body::Lease(lease) => Some(object_json(Kind::Lease, lease.as_ref())),
        Body::ConfigMap(cm) => Some(object_json(Kind::ConfigMap, cm.as_ref())),
        Body::LeaseCandidate { object, time: None } => Some(object_json(Kind::LeaseCandidate, object.as_ref())),
        Body::LeaseCandidate { object, time: Some(time) } => {
            Some(object_json(Kind::LeaseCandidate, &time.set_on(object)))
        }
        Body::JsonKind(kind, object) => Some(object_json(*kind, object.as_ref())),
        Body::Frozen(kind, object) => Some(object_json(*kind, &object.thaw())),
        Body::None
        | Body::Json(_)
        | Body::SharedJson(_)
        | Body::Text(_)
        | Body::StrategicMergePatch(_)
        | Body::JsonPatch(_) => None,
    }
}

/// apiVersion/kind of a body against the URL's (create.go / update.go).
fn check_type_meta(kind: Kind, value: &Value) -> Result<(), ApiError> {
    check_type_meta_of(kind, value.get("apiVersion").and_then(Value::as_str), value.get("kind").and_then(Value::as_str))
}

/// [`check_type_meta`] of a body's `apiVersion` and `kind` (absent: the URL's).
fn check_type_meta_of(kind: Kind, api_version: Option<&str>, body_kind: Option<&str>) -> Result<(), ApiError> {
    let api_version = api_version.unwrap_or(kind.api_version());
    let body_kind = body_kind.unwrap_or(kind.kind_name());
    if api_version != kind.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            kind.api_version()
        )));
    }
    if body_kind != kind.kind_name() {
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        return Err(ApiError::bad_request(format!(
            "{body_kind} in version {version:?} cannot be handled as a {}: no kind {body_kind:?} is registered for version {api_version:?} in scheme \"pkg/api/legacyscheme/scheme.go:30\"",
            kind.kind_name()
        )));
    }
    Ok(())
}

/// The body of a merge patch (of a JSON patch, only checked to be JSON: `null` here).
fn patch_body(body: &Body) -> Result<Value, ApiError> {
    match body {
        Body::Json(value) => Ok(value.clone()),
        Body::SharedJson(value) => Ok(Value::clone(value)),
        // A body that is not JSON is refused before the object is read: `json.Valid`
        // (apiserver@24a394e5 `handlers/patch.go:138-142`, `:866-868`).
        Body::Text(text) | Body::StrategicMergePatch(text) => {
            serde_json::from_str(text).map_err(|_| ApiError::bad_request("invalid JSON patch"))
        }
        // A JSON patch's operations are read once the object is (`json_patch::decode`).
        Body::JsonPatch(text) => super::json_patch::valid_json(text).map(|()| Value::Null),
        Body::Lease(_) | Body::ConfigMap(_) | Body::LeaseCandidate { .. } | Body::JsonKind(..) | Body::Frozen(..) => {
            Ok(typed_body_json(body).expect("a typed body"))
        }
        Body::None => Err(ApiError::bad_request("invalid JSON patch")),
    }
}

/// The apply configuration: must name apiVersion and kind, must not carry managedFields
/// (structuredmerge.go). Nulls are dropped (they set nothing).
fn apply_config(kind: Kind, body: &Body) -> Result<Value, ApiError> {
    // A JSON body is read where it lies and copied once, without its nulls.
    let parsed;
    let value = match body {
        Body::Json(value) => value,
        Body::SharedJson(value) => value,
        Body::Text(text) | Body::StrategicMergePatch(text) | Body::JsonPatch(text) => {
            parsed =
                serde_json::from_str(text).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
            &parsed
        }
        Body::Lease(_) | Body::ConfigMap(_) | Body::LeaseCandidate { .. } | Body::JsonKind(..) | Body::Frozen(..) => {
            parsed = typed_body_json(body).expect("a typed body");
            &parsed
        }
        Body::None => {
            return Err(ApiError::bad_request("error decoding YAML: empty apply configuration"));
        }
    };
    let Value::Object(_) = &value else {
        return Err(ApiError::bad_request("error decoding YAML: the apply configuration is not an object"));
    };
    let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if api_version != kind.api_version() {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {api_version}, expected: {}",
            kind.api_version()
        )));
    }
    let body_kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if body_kind != kind.kind_name() {
        return Err(ApiError::bad_request(format!(
            "Object 'Kind' is missing or wrong in apply configuration: got {body_kind:?}, expected {:?}",
            kind.kind_name()
        )));
    }
    if metadata_field(value, "managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    // structured-merge-diff's typed conversion of the configuration as sent (a key set to null
    // is a key), whatever fieldValidation says, before the name and namespace are checked (it
    // runs inside the patcher): a field the kind lacks fails the apply with a plain error, a 500.
    let undeclared = super::schema::undeclared_in_apply(kind, value);
    if !undeclared.is_empty() {
        let text = |key| metadata_field(value, key).and_then(Value::as_str).unwrap_or_default();
        return Err(typed_patch_error(kind, text("namespace"), text("name"), &undeclared));
    }
    Ok(without_nulls(value))
}

/// `value.pointer("/metadata/<key>")` without parsing a pointer (which allocates two strings
/// per step to unescape it).
fn metadata_field<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get("metadata")?.as_object()?.get(key)
}

/// A copy of `value` without the null members of its objects, at every depth of objects
/// (a list is copied as it is).
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect(),
        ),
        other => other.clone(),
    }
}

/// SSA merge of a configuration into the live object: objects merge key by key, everything else
/// (scalars, lists — atomic here) is replaced.
fn apply_merge(live: &Value, config: &Value) -> Value {
    let mut merged = live.clone();
    merge_into(&mut merged, config);
    merged
}

/// [`apply_merge`] in place: a key the live object has keeps its place, a new one goes last.
/// (Merging by copies cloned each level's subtree once per level above it.)
fn merge_into(target: &mut Value, config: &Value) {
    match (target, config) {
        (Value::Object(target_map), Value::Object(config_map)) => {
            for (key, value) in config_map {
                match target_map.get_mut(key) {
                    Some(existing) => merge_into(existing, value),
                    None => {
                        target_map.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (target, config) => *target = config.clone(),
    }
}

//! Server-side field ownership (`metadata.managedFields`) and server-side apply conflicts
//! (apiserver.md §1 "managedFields" and §5; sources: apimachinery `managedfields/internal`,
//! structured-merge-diff `merge/update.go`).
//!
//! A field is named by a *path*: its segments joined by [`SEP`] (`spec␟holderIdentity`). Leaves
//! of structs are fields; the keys of string maps (`metadata.labels`, `data`, …) are fields, and
//! such a map itself is a field too (rendered as `"."` in the FieldsV1 trie). Lists are atomic.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::errors::{ApiError, StatusCause};
use super::microtime::Time;
use super::types::{Lease, LeaseCandidate, ManagedFieldsEntry, ObjectMeta};

/// Separator of path segments: a control character no field name or label key can contain.
pub const SEP: char = '\u{1f}';

/// Maps whose keys are fields of their own (SMD "granular" maps of scalars).
const GRANULAR_MAPS: [&str; 4] = ["metadata\u{1f}labels", "metadata\u{1f}annotations", "data", "binaryData"];

/// System fields never tracked (apimachinery strips them from field sets).
const UNTRACKED: [&str; 11] = [
    "apiVersion",
    "kind",
    "metadata\u{1f}name",
    "metadata\u{1f}namespace",
    "metadata\u{1f}uid",
    "metadata\u{1f}resourceVersion",
    "metadata\u{1f}creationTimestamp",
    "metadata\u{1f}managedFields",
    "metadata\u{1f}generation",
    "metadata\u{1f}selfLink",
    "status",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One manager's entry: Update entries are keyed (manager, operation, apiVersion, subresource),
/// Apply entries (manager, subresource) (apiserver.md §1).
#[derive(Clone, Debug, PartialEq)]
pub struct ManagerState {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub subresource: String,
    pub time_secs: i64,
    /// Shared with clones, as the trie is: every created object of a shape gets its creator's
    /// set from the memory of earlier creates (an Event's is a dozen paths). Changed through
    /// [`ManagerState::fields_mut`], and only when a change is due.
    pub fields: Arc<BTreeSet<String>>,
    /// The FieldsV1 trie of `fields`, rebuilt only when `fields` changes; shared with the
    /// rendered entries and with clones (a created object's creator entry comes from a memory
    /// of earlier creates, and each copy of an Event's trie was a map per level).
    fields_v1: Arc<Value>,
    /// Which of [`LEASE_SPEC_PATHS`] `fields` holds (bit i: path i), and a LeaseCandidate's
    /// [`PING_TIME_PATH`] ([`PING_TIME_BIT`]), rebuilt with the trie.
    lease_mask: u8,
}

impl ManagerState {
    fn new(manager: &str, operation: Operation, api_version: &str, time_secs: i64) -> ManagerState {
        ManagerState {
            manager: manager.to_string(),
            operation,
            api_version: api_version.to_string(),
            subresource: String::new(),
            time_secs,
            fields: Arc::default(),
            fields_v1: Arc::new(Value::Null),
            lease_mask: 0,
        }
    }

    fn is(&self, manager: &str, operation: Operation, api_version: &str) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.is_empty()
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    /// The encoded identifier apimachinery sorts conflicts by: the JSON of a ManagedFieldsEntry
    /// holding only manager, operation, apiVersion (Update only) and subresource.
    fn encoded_identifier(&self) -> String {
        let mut id = format!(
            "{{\"manager\":{},\"operation\":\"{}\"",
            serde_json::Value::from(self.manager.as_str()),
            self.operation.as_str()
        );
        if self.operation == Operation::Update {
            id.push_str(&format!(",\"apiVersion\":{}", serde_json::Value::from(self.api_version.as_str())));
        }
        if !self.subresource.is_empty() {
            id.push_str(&format!(",\"subresource\":{}", serde_json::Value::from(self.subresource.as_str())));
        }
        id.push('}');
        id
    }

    /// conflict.go `printManager`: `"m"`, `"m" using v1`, `"m" with subresource "s" using v1`.
    fn printed(&self) -> String {
        let mut text = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            text.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }

    /// The field set to change (copied first if a clone shares it).
    fn fields_mut(&mut self) -> &mut BTreeSet<String> {
        Arc::make_mut(&mut self.fields)
    }

    /// Drops the fields `removed` names and, if `taken`, those `changed` names, copying the set
    /// only when one is there; whether any was. Looked up from the smaller side: a renewal's
    /// diff names one field, and a creator owns a dozen.
    fn drop_fields(&mut self, removed: &BTreeSet<String>, changed: &BTreeSet<String>, taken: bool) -> bool {
        let gone = |f: &String| removed.contains(f) || (taken && changed.contains(f));
        let named = removed.len() + if taken { changed.len() } else { 0 };
        let any = if named < self.fields.len() {
            let owned = |f: &String| self.fields.contains(f);
            removed.iter().any(owned) || (taken && changed.iter().any(owned))
        } else {
            self.fields.iter().any(gone)
        };
        if !any {
            return false;
        }
        self.fields_mut().retain(|f| !gone(f));
        true
    }

    fn refresh_trie(&mut self) {
        self.fields_v1 = Arc::new(fields_v1_trie(&self.fields));
        self.lease_mask = LEASE_SPEC_PATHS
            .iter()
            .enumerate()
            .filter(|(_, path)| self.fields.contains(**path))
            .fold(0, |mask, (i, _)| mask | (1 << i));
        if self.fields.contains(PING_TIME_PATH) {
            self.lease_mask |= PING_TIME_BIT;
        }
    }

    pub fn to_entry(&self) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: self.manager.as_str().into(),
            operation: self.operation.as_str().into(),
            api_version: self.api_version.as_str().into(),
            time: Some(Time::from_unix_secs(self.time_secs)),
            fields_type: "FieldsV1".into(),
            fields_v1: Arc::clone(&self.fields_v1),
            subresource: self.subresource.as_str().into(),
        }
    }
}

/// The tracked paths of a Lease spec, in `LeaseSpec` order; the typed path diffs them as bits.
pub const LEASE_SPEC_PATHS: [&str; 7] = [
    "spec\u{1f}holderIdentity",
    "spec\u{1f}leaseDurationSeconds",
    "spec\u{1f}acquireTime",
    "spec\u{1f}renewTime",
    "spec\u{1f}leaseTransitions",
    "spec\u{1f}strategy",
    "spec\u{1f}preferredHolder",
];

/// `renewTime`'s bit in [`LEASE_SPEC_PATHS`]: a LeaseCandidate's renewal changes only it.
pub const RENEW_TIME_BIT: u8 = 1 << 3;
/// A LeaseCandidate's `pingTime`: the election controller's ping changes only it.
pub const PING_TIME_PATH: &str = "spec\u{1f}pingTime";
/// [`PING_TIME_PATH`]'s bit in a manager's mask, past the Lease's seven.
pub const PING_TIME_BIT: u8 = 1 << 7;

/// Is this write a renewal? That is, [`record_update`] would move no ownership: the writer
/// already owns every changed spec field (`changed`, bits of [`LEASE_SPEC_PATHS`] and
/// [`PING_TIME_BIT`]), and nobody
/// else owns any of them. Then only the writer's time moves. Gives the writer's index, the spec
/// fields it owns and those the others own.
pub fn renewal_writer(
    managers: &[ManagerState],
    manager: &str,
    api_version: &str,
    changed: u8,
) -> Option<(usize, u8, u8)> {
    let mut writer = None;
    let mut others = 0;
    for (i, state) in managers.iter().enumerate() {
        if state.is(manager, Operation::Update, api_version) {
            writer = Some(i);
        } else {
            others |= state.lease_mask;
        }
    }
    let writer = writer?;
    let owned = managers[writer].lease_mask;
    (owned & changed == changed && others & changed == 0).then_some((writer, owned, others))
}

/// [`sync_managed_fields`] after a renewal (see [`renewal_writer`]): the entries already match the managers
/// except for the writer's time, so that entry's time is set and it moves to its sorted place.
pub fn sync_renewal_time(entries: &mut [ManagedFieldsEntry], manager: &str, api_version: &str, now_secs: i64) {
    // The writer renewed last time too, so its entry is usually the last: search from the end.
    let Some(i) = entries.iter().rposition(|e| {
        &*e.manager == manager
            && &*e.operation == "Update"
            && &*e.api_version == api_version
            && e.subresource.is_empty()
    }) else {
        return;
    };
    entries[i].time = Some(Time::from_unix_secs(now_secs));
    let order = |a: &ManagedFieldsEntry, b: &ManagedFieldsEntry| {
        (&*a.operation == "Update")
            .cmp(&(&*b.operation == "Update"))
            .then_with(|| a.time.map_or(0, Time::unix_secs).cmp(&b.time.map_or(0, Time::unix_secs)))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    };
    let mut j = i;
    while j + 1 < entries.len() && order(&entries[j + 1], &entries[j]).is_lt() {
        entries.swap(j, j + 1);
        j += 1;
    }
    while j > 0 && order(&entries[j], &entries[j - 1]).is_lt() {
        entries.swap(j, j - 1);
        j -= 1;
    }
}

/// managedFields in the server's order (`sortEncodedManagedFields`): operation (Apply first),
/// time, manager, apiVersion, subresource.
pub fn render_managed_fields(managers: &[ManagerState]) -> Vec<ManagedFieldsEntry> {
    sorted_managers(managers).into_iter().map(ManagerState::to_entry).collect()
}

/// Brings `entries` (typically the managedFields a client sent back unchanged) in line with
/// `managers`: an entry that is already there (the same manager, operation, apiVersion,
/// subresource and fields) is kept, moved to its place and given its time; only a new one is
/// built. The renewal hot path then neither builds nor copies a FieldsV1 trie, and two writers
/// that take turns (a LeaseCandidate's owner and the election controller: the latest write
/// sorts last) swap two entries instead of building both again.
pub fn sync_managed_fields(entries: &mut Vec<ManagedFieldsEntry>, managers: &[ManagerState]) {
    let order = sorted_managers(managers);
    // Room for exactly the managers: a first insert would make room for four, and a fleet
    // keeps ~two objects per Lease (the Lease, its leader Event) with one manager each for the
    // whole run (~190 bytes an elector).
    entries.reserve_exact(order.len().saturating_sub(entries.len()));
    let kept = |entry: &ManagedFieldsEntry, state: &ManagerState| {
        same_str(&entry.manager, &state.manager)
            && same_str(&entry.operation, state.operation.as_str())
            && same_str(&entry.api_version, &state.api_version)
            && same_str(&entry.subresource, &state.subresource)
            && same_str(&entry.fields_type, "FieldsV1")
            && (Arc::ptr_eq(&entry.fields_v1, &state.fields_v1) || entry.fields_v1 == state.fields_v1)
    };
    for (i, state) in order.iter().enumerate() {
        match entries[i..].iter().position(|entry| kept(entry, state)) {
            Some(j) => entries.swap(i, i + j),
            None => entries.insert(i, state.to_entry()),
        }
        entries[i].time = Some(Time::from_unix_secs(state.time_secs));
    }
    entries.truncate(order.len());
}

/// `a == b` for the short names of a managedFields entry, compared here eight bytes at a time:
/// `==` calls the C library's `memcmp` for each, and with five of them at every write the calls
/// were a tenth of a LeaseCandidate write loop's time; a byte loop was as slow again on the
/// longer names (`coordination.k8s.io/v1beta1`, `leader-election-controller`).
#[inline]
fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    let word = |chunk: &[u8]| u64::from_ne_bytes(chunk.try_into().expect("eight bytes"));
    (&mut x).zip(&mut y).all(|(x, y)| word(x) == word(y))
        && x.remainder().iter().zip(y.remainder()).all(|(x, y)| x == y)
}

fn sorted_managers(managers: &[ManagerState]) -> Vec<&ManagerState> {
    let mut order: Vec<&ManagerState> = managers.iter().collect();
    order.sort_by(|a, b| {
        (a.operation, a.time_secs, &a.manager, &a.api_version, &a.subresource).cmp(&(
            b.operation,
            b.time_secs,
            &b.manager,
            &b.api_version,
            &b.subresource,
        ))
    });
    order
}

/// Reads managedFields sent with a seeded object back into manager states.
pub fn managers_from_entries(entries: &[ManagedFieldsEntry]) -> Vec<ManagerState> {
    entries
        .iter()
        .map(|e| {
            let operation = if &*e.operation == "Apply" { Operation::Apply } else { Operation::Update };
            let mut state = ManagerState::new(&e.manager, operation, &e.api_version, e.time.map_or(0, Time::unix_secs));
            state.subresource = e.subresource.to_string();
            collect_trie_paths(&e.fields_v1, "", state.fields_mut());
            state.refresh_trie();
            state
        })
        .filter(|s| !s.fields.is_empty())
        .collect()
}

fn collect_trie_paths(node: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let Value::Object(map) = node else { return };
    for (key, child) in map {
        if key == "." {
            out.insert(prefix.to_string());
        } else if let Some(name) = key.strip_prefix("f:") {
            let path = if prefix.is_empty() { name.to_string() } else { format!("{prefix}{SEP}{name}") };
            if child.as_object().is_none_or(Map::is_empty) {
                out.insert(path.clone());
            }
            collect_trie_paths(child, &path, out);
        }
    }
}

/// `{"f:spec":{"f:holderIdentity":{}}}`; a granular map owned as a whole gets `".":{}` beside
/// its keys.
pub fn fields_v1_trie(fields: &BTreeSet<String>) -> Value {
    let mut root = Map::new();
    // One key buffer: a node's key is allocated only when the node is new (paths share most
    // of their prefixes), not formatted for every segment of every path.
    let mut key = String::new();
    for path in fields {
        let mut node = &mut root;
        for segment in path.split(SEP) {
            key.clear();
            key.push_str("f:");
            key.push_str(segment);
            if !node.contains_key(key.as_str()) {
                node.insert(key.clone(), Value::Object(Map::new()));
            }
            node = node.get_mut(key.as_str()).and_then(Value::as_object_mut).expect("trie nodes are objects");
        }
        if GRANULAR_MAPS.contains(&path.as_str()) {
            node.insert(".".to_string(), Value::Object(Map::new()));
        }
    }
    // A member with no children is written `{}`, not `{".":{}}` (SMD `fieldpath/serialize.go`
    // `emitContentsV1` writes "." only beside children): an empty map owned as a whole.
    for path in fields.iter().filter(|p| GRANULAR_MAPS.contains(&p.as_str())) {
        let mut node = &mut root;
        for segment in path.split(SEP) {
            key.clear();
            key.push_str("f:");
            key.push_str(segment);
            node = node.get_mut(key.as_str()).and_then(Value::as_object_mut).expect("built above");
        }
        if node.len() == 1 {
            node.clear();
        }
    }
    Value::Object(root)
}

/// `.spec.holderIdentity`: structured-merge-diff's path syntax.
pub fn smd_path(path: &str) -> String {
    format!(".{}", path.replace(SEP, "."))
}

/// What a write did to the tracked fields, comparing the live object with the new one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldDiff {
    /// Added or modified fields.
    pub changed: BTreeSet<String>,
    pub removed: BTreeSet<String>,
}

impl FieldDiff {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.removed.is_empty()
    }
}

/// Tracked fields of an object's JSON: path → value (`None` for a granular map node).
pub fn leaf_fields(object: &Value) -> BTreeMap<String, Option<&Value>> {
    let mut out = BTreeMap::new();
    if let Value::Object(map) = object {
        collect_leaves(map, "", &mut out);
    }
    out
}

fn collect_leaves<'a>(map: &'a Map<String, Value>, prefix: &str, out: &mut BTreeMap<String, Option<&'a Value>>) {
    for (key, value) in map {
        let path = child_path(prefix, key);
        if UNTRACKED.contains(&path.as_str()) {
            continue;
        }
        collect_entry(path, value, out);
    }
}

/// The tracked fields under one field at `path` (itself tracked): none for a null, a granular
/// map's keys and the map itself, an object's fields, or the leaf.
fn collect_entry<'a>(path: String, value: &'a Value, out: &mut BTreeMap<String, Option<&'a Value>>) {
    match value {
        Value::Null => {}
        Value::Object(child) if GRANULAR_MAPS.contains(&path.as_str()) => {
            for (k, v) in child {
                out.insert(child_path(&path, k), Some(v));
            }
            out.insert(path, None);
        }
        Value::Object(child) => collect_leaves(child, &path, out),
        leaf => {
            out.insert(path, Some(leaf));
        }
    }
}

/// `prefix` SEP `key` (or `key` at the top), built without `format!`: every key of both
/// objects of a diff takes one.
fn child_path(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        return key.to_string();
    }
    let mut path = String::with_capacity(prefix.len() + SEP.len_utf8() + key.len());
    path.push_str(prefix);
    path.push(SEP);
    path.push_str(key);
    path
}

/// Tracked fields of an object kept as JSON (`Stored::Json`: a LeaseCandidate, an Event), the
/// same map [`leaf_fields`] gives for its whole JSON: only its metadata is rendered (without
/// managedFields, which is untracked), and its other fields are read where they are. Rendering
/// the whole object for each side was most of a LeaseCandidate write (docs/performance.md).
pub fn json_object_leaves<'a>(
    meta: &'a Map<String, Value>,
    rest: &'a Map<String, Value>,
) -> BTreeMap<String, Option<&'a Value>> {
    let mut out = BTreeMap::new();
    // `apiVersion` and `kind` are untracked, so the wire's are not needed.
    collect_leaves(rest, "", &mut out);
    collect_leaves(meta, "metadata", &mut out);
    out
}

/// The diff of two objects' tracked fields, given as field maps ([`leaf_fields`],
/// [`json_object_leaves`]).
pub fn leaves_diff(before: &BTreeMap<String, Option<&Value>>, after: &BTreeMap<String, Option<&Value>>) -> FieldDiff {
    let mut diff = FieldDiff::default();
    for (path, value) in after {
        if before.get(path) != Some(value) {
            diff.changed.insert(path.clone());
        }
    }
    for path in before.keys() {
        if !after.contains_key(path) {
            diff.removed.insert(path.clone());
        }
    }
    diff
}

/// An object kept as JSON, as a diff reads it: its tracked metadata and its other fields.
pub type JsonObjectFields<'a> = (&'a Map<String, Value>, &'a Map<String, Value>);

/// The diff of two objects kept as JSON (`Stored::Json`), each given as its tracked metadata
/// and its other fields (`before` absent = a create): `leaves_diff` of both objects'
/// [`json_object_leaves`], computed by walking both at once and passing over every field whose
/// value is the same on both sides, so that only what changed builds paths (a LeaseCandidate's
/// renewal changes one field of about twenty). Paths are unique only while no key holds the
/// separator; an object with such a key takes the whole-map diff. Debug builds check it
/// against the whole objects' diff at every write.
pub fn json_object_diff(before: Option<JsonObjectFields>, after: JsonObjectFields) -> FieldDiff {
    let separator_in_keys = |map: &Map<String, Value>| {
        fn any(map: &Map<String, Value>) -> bool {
            // SEP is one byte in UTF-8: a byte loop, no `memchr` call for each short key.
            const { assert!(SEP.is_ascii()) };
            map.iter()
                .any(|(k, v)| k.bytes().any(|b| b == SEP as u8) || matches!(v, Value::Object(child) if any(child)))
        }
        any(map)
    };
    let plain = [Some(after), before]
        .into_iter()
        .flatten()
        .all(|(meta, rest)| !separator_in_keys(meta) && !separator_in_keys(rest));
    if !plain {
        let before = before.map(|(meta, rest)| json_object_leaves(meta, rest)).unwrap_or_default();
        return leaves_diff(&before, &json_object_leaves(after.0, after.1));
    }
    let mut diff = FieldDiff::default();
    walk_diff(before.map(|b| b.1), Some(after.1), "", &mut diff);
    walk_diff(before.map(|b| b.0), Some(after.0), "metadata", &mut diff);
    diff
}

/// [`json_object_diff`] of the fields of one map level under `prefix`.
fn walk_diff(
    before: Option<&Map<String, Value>>,
    after: Option<&Map<String, Value>>,
    prefix: &str,
    out: &mut FieldDiff,
) {
    // Two versions of one object keep their keys in one order: read them side by side, with
    // no lookup by key.
    if let (Some(b), Some(a)) = (before, after)
        && b.len() == a.len()
        && b.keys().zip(a.keys()).all(|(kb, ka)| kb == ka)
    {
        for ((key, b), (_, a)) in b.iter().zip(a) {
            walk_entry(prefix, key, Some(b), Some(a), out);
        }
        return;
    }
    for (key, a) in after.into_iter().flatten() {
        walk_entry(prefix, key, before.and_then(|m| m.get(key)), Some(a), out);
    }
    for (key, b) in before.into_iter().flatten() {
        if !after.is_some_and(|m| m.contains_key(key)) {
            walk_entry(prefix, key, Some(b), None, out);
        }
    }
}

fn walk_entry(prefix: &str, key: &str, before: Option<&Value>, after: Option<&Value>, out: &mut FieldDiff) {
    let same = match (before, after) {
        (Some(b), Some(a)) => same_value(b, a),
        (None, None) => true,
        _ => false,
    };
    if same {
        return;
    }
    let path = child_path(prefix, key);
    if UNTRACKED.contains(&path.as_str()) {
        return;
    }
    match (before, after) {
        (Some(Value::Object(b)), Some(Value::Object(a))) if !GRANULAR_MAPS.contains(&path.as_str()) => {
            walk_diff(Some(b), Some(a), &path, out)
        }
        // A leaf changed in place (a renewal's renewTime): the leaf maps below would hold this
        // one path on each side with different values, so it is changed and nothing is removed.
        (Some(b), Some(a))
            if !matches!(b, Value::Null | Value::Object(_)) && !matches!(a, Value::Null | Value::Object(_)) =>
        {
            out.changed.insert(path);
        }
        _ => {
            // A leaf that changed, a field that came or went, a granular map: the leaves of
            // each side under it, diffed as the whole-map diff would.
            let (mut b, mut a) = (BTreeMap::new(), BTreeMap::new());
            if let Some(before) = before {
                collect_entry(path.clone(), before, &mut b);
            }
            if let Some(after) = after {
                collect_entry(path, after, &mut a);
            }
            let diff = leaves_diff(&b, &a);
            out.changed.extend(diff.changed);
            out.removed.extend(diff.removed);
        }
    }
}

/// `a == b`, reading objects whose keys lie in the same order side by side instead of looking
/// each key up (hashing it) in the other.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if x.len() == y.len() => {
            if x.keys().zip(y.keys()).all(|(kx, ky)| kx == ky) {
                x.values().zip(y.values()).all(|(vx, vy)| same_value(vx, vy))
            } else {
                a == b
            }
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(vx, vy)| same_value(vx, vy)),
        _ => a == b,
    }
}

/// Diff of two JSON objects' tracked fields (`live` absent = a create).
pub fn json_diff(live: Option<&Value>, new: &Value) -> FieldDiff {
    leaves_diff(&live.map(leaf_fields).unwrap_or_default(), &leaf_fields(new))
}

/// The Lease diff computed from typed fields, without any JSON (the renewal hot path).
pub fn lease_diff(live: Option<&Lease>, new: &Lease) -> FieldDiff {
    let mut diff = FieldDiff::default();
    fn field<T: PartialEq>(diff: &mut FieldDiff, path: &str, before: Option<&Option<T>>, after: &Option<T>) {
        let before = before.and_then(Option::as_ref);
        match (before, after.as_ref()) {
            (_, Some(a)) if before != Some(a) => {
                diff.changed.insert(path.to_string());
            }
            (Some(_), None) => {
                diff.removed.insert(path.to_string());
            }
            _ => {}
        }
    }
    let old = live.map(|l| &l.spec);
    let spec = &new.spec;
    field(&mut diff, "spec\u{1f}holderIdentity", old.map(|s| &s.holder_identity), &spec.holder_identity);
    field(
        &mut diff,
        "spec\u{1f}leaseDurationSeconds",
        old.map(|s| &s.lease_duration_seconds),
        &spec.lease_duration_seconds,
    );
    field(&mut diff, "spec\u{1f}acquireTime", old.map(|s| &s.acquire_time), &spec.acquire_time);
    field(&mut diff, "spec\u{1f}renewTime", old.map(|s| &s.renew_time), &spec.renew_time);
    field(&mut diff, "spec\u{1f}leaseTransitions", old.map(|s| &s.lease_transitions), &spec.lease_transitions);
    field(&mut diff, "spec\u{1f}strategy", old.map(|s| &s.strategy), &spec.strategy);
    field(&mut diff, "spec\u{1f}preferredHolder", old.map(|s| &s.preferred_holder), &spec.preferred_holder);
    metadata_diff(&mut diff, live.map(|l| &l.metadata), &new.metadata);
    diff
}

/// The tracked-field diff of two LeaseCandidates, typed: what [`json_diff`] of their JSON gives
/// (`leaseName` and `binaryVersion` are always written, so always fields; the others only when
/// set, as `LeaseCandidateSpec` omits them), without rendering either. A candidate's renewal and
/// the election controller's ping each change one time.
pub fn lease_candidate_diff(live: Option<&LeaseCandidate>, new: &LeaseCandidate) -> FieldDiff {
    fn field<T: PartialEq>(diff: &mut FieldDiff, path: &str, before: Option<T>, after: Option<T>) {
        match (before, after) {
            (Some(b), Some(a)) if b == a => {}
            (_, Some(_)) => {
                diff.changed.insert(path.to_string());
            }
            (Some(_), None) => {
                diff.removed.insert(path.to_string());
            }
            (None, None) => {}
        }
    }
    let mut diff = FieldDiff::default();
    let (old, spec) = (live.map(|l| &l.spec), &new.spec);
    let d = &mut diff;
    field(d, "spec\u{1f}leaseName", old.map(|s| &*s.lease_name), Some(&*spec.lease_name));
    field(d, "spec\u{1f}pingTime", old.and_then(|s| s.ping_time), spec.ping_time);
    field(d, "spec\u{1f}renewTime", old.and_then(|s| s.renew_time), spec.renew_time);
    field(d, "spec\u{1f}binaryVersion", old.map(|s| &*s.binary_version), Some(&*spec.binary_version));
    // Omitted when empty.
    fn set(text: &str) -> Option<&str> {
        Some(text).filter(|t| !t.is_empty())
    }
    field(d, "spec\u{1f}emulationVersion", old.and_then(|s| set(&s.emulation_version)), set(&spec.emulation_version));
    field(d, "spec\u{1f}strategy", old.and_then(|s| set(&s.strategy)), set(&spec.strategy));
    metadata_diff(&mut diff, live.map(|l| &l.metadata), &new.metadata);
    diff
}

/// The tracked metadata's diff: labels and annotations, each a granular map.
fn metadata_diff(diff: &mut FieldDiff, live: Option<&ObjectMeta>, new: &ObjectMeta) {
    let empty = BTreeMap::new();
    for (node, old, new) in [
        ("metadata\u{1f}labels", live.map_or(&empty, |l| &l.labels), &new.labels),
        ("metadata\u{1f}annotations", live.map_or(&empty, |l| &l.annotations), &new.annotations),
    ] {
        map_diff(diff, node, old, new);
    }
}

/// The diff of a granular map (labels, annotations): each key is its own field, and the map
/// itself is one while it has any key.
fn map_diff(diff: &mut FieldDiff, node: &str, old: &BTreeMap<String, String>, new: &BTreeMap<String, String>) {
    if old == new {
        return;
    }
    for (k, v) in new {
        if old.get(k) != Some(v) {
            diff.changed.insert(format!("{node}{SEP}{k}"));
        }
    }
    for k in old.keys() {
        if !new.contains_key(k) {
            diff.removed.insert(format!("{node}{SEP}{k}"));
        }
    }
    match (old.is_empty(), new.is_empty()) {
        (true, false) => {
            diff.changed.insert(node.to_string());
        }
        (false, true) => {
            diff.removed.insert(node.to_string());
        }
        _ => {}
    }
}

/// An Update operation (create, PUT, merge patch): the updater takes every field it added or
/// changed, from everyone else; removed fields leave every set; empty managers disappear
/// (apiserver.md §1). The updater's time is refreshed only when it took something
/// (`managedFieldsUpdater`), so a no-op write leaves managedFields identical.
pub fn record_update(
    managers: &mut Vec<ManagerState>,
    manager: &str,
    api_version: &str,
    diff: &FieldDiff,
    now_secs: i64,
) {
    if diff.is_empty() {
        return;
    }
    for state in managers.iter_mut() {
        // The updater keeps what it changes; everyone else loses it.
        let is_updater = state.is(manager, Operation::Update, api_version);
        if state.drop_fields(&diff.removed, &diff.changed, !is_updater) {
            state.refresh_trie();
        }
    }
    if !diff.changed.is_empty() {
        let index = match managers.iter().position(|m| m.is(manager, Operation::Update, api_version)) {
            Some(i) => i,
            None => {
                managers.push(ManagerState::new(manager, Operation::Update, api_version, now_secs));
                managers.len() - 1
            }
        };
        let state = &mut managers[index];
        state.time_secs = now_secs;
        // A renewal changes fields its manager already owns: keep the set and the cached trie.
        if !diff.changed.iter().all(|f| state.fields.contains(f)) {
            state.fields_mut().extend(diff.changed.iter().cloned());
            state.refresh_trie();
        }
    }
    managers.retain(|m| !m.fields.is_empty());
}

/// The fields an apply configuration sets (its field set).
pub fn applied_field_set(config: &Value) -> BTreeSet<String> {
    // structured-merge-diff `typed/tofieldset.go` (`visitMapItems`, `doScalar`): every scalar
    // is a member, and a map only when it is empty. So unlike an Update's diff (where a map
    // that appears is itself added: `typed/compare.go` `compare`), an apply of
    // `metadata.labels.app` owns `f:app` alone, with no `.` for the map — as the Kubernetes
    // documentation's Server-Side Apply example shows.
    fn walk(map: &Map<String, Value>, prefix: &str, out: &mut BTreeSet<String>) {
        for (key, value) in map {
            let path = child_path(prefix, key);
            if UNTRACKED.contains(&path.as_str()) || value.is_null() {
                continue;
            }
            match value {
                Value::Object(child) if !child.is_empty() => walk(child, &path, out),
                _ => {
                    out.insert(path);
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    if let Value::Object(map) = config {
        walk(map, "", &mut out);
    }
    out
}

/// The fields the applier owned through its previous apply (to prune what it now omits).
pub fn previously_applied(managers: &[ManagerState], manager: &str) -> BTreeSet<String> {
    managers.iter().find(|m| m.is(manager, Operation::Apply, "")).map(|m| (*m.fields).clone()).unwrap_or_default()
}

/// Fields owned by anyone except the applier's Apply entry.
pub fn owned_by_others(managers: &[ManagerState], manager: &str) -> BTreeSet<String> {
    managers.iter().filter(|m| !m.is(manager, Operation::Apply, "")).flat_map(|m| m.fields.iter().cloned()).collect()
}

/// A server-side apply (apiserver.md §5): conflicts = other managers' fields ∩ fields this apply
/// adds or modifies. Without `force` any conflict is a 409 and nothing changes; with `force` the
/// conflicting fields move to the applier. The applier's set becomes exactly `applied`.
pub fn record_apply(
    managers: &mut Vec<ManagerState>,
    manager: &str,
    api_version: &str,
    applied: BTreeSet<String>,
    diff: &FieldDiff,
    force: bool,
    now_secs: i64,
) -> Result<(), ApiError> {
    let mut conflicts: Vec<(String, String, String, String)> = Vec::new(); // (identifier, printed, path, manager)
    for state in managers.iter().filter(|m| !m.is(manager, Operation::Apply, "")) {
        for path in state.fields.intersection(&diff.changed) {
            conflicts.push((state.encoded_identifier(), state.printed(), path.clone(), state.manager.clone()));
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(apply_conflict_error(conflicts));
    }
    for state in managers.iter_mut() {
        let forced = force && !state.is(manager, Operation::Apply, "");
        if state.drop_fields(&diff.removed, &diff.changed, forced) {
            state.refresh_trie();
        }
    }
    let index = match managers.iter().position(|m| m.is(manager, Operation::Apply, "")) {
        Some(i) => i,
        None => {
            managers.push(ManagerState::new(manager, Operation::Apply, api_version, now_secs));
            managers.len() - 1
        }
    };
    let state = &mut managers[index];
    state.api_version = api_version.to_string();
    state.fields = Arc::new(applied);
    state.time_secs = now_secs;
    state.refresh_trie();
    managers.retain(|m| !m.fields.is_empty());
    Ok(())
}

/// conflict.go `getConflictMessage` and `NewConflictError`.
fn apply_conflict_error(mut conflicts: Vec<(String, String, String, String)>) -> ApiError {
    conflicts.sort();
    let causes = conflicts
        .iter()
        .map(|(_, printed, path, manager)| StatusCause {
            reason: "FieldManagerConflict".to_string(),
            message: format!("conflict with {printed}"),
            field: smd_path(path),
            manager: Some(manager.clone()),
        })
        .collect();
    let message = if conflicts.len() == 1 {
        let (_, printed, path, _) = &conflicts[0];
        format!("Apply failed with 1 conflict: conflict with {printed}: {}", smd_path(path))
    } else {
        let mut lines: Vec<String> = Vec::new();
        let mut current: Option<&str> = None;
        for (identifier, printed, path, _) in &conflicts {
            if current != Some(identifier.as_str()) {
                lines.push(format!("conflicts with {printed}:"));
                current = Some(identifier);
            }
            lines.push(format!("- {}", smd_path(path)));
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    ApiError::apply_conflict(message, causes)
}

/// Removes a tracked field from an object's JSON (used to prune fields an applier dropped).
pub fn remove_field(object: &mut Value, path: &str) {
    let segments: Vec<&str> = path.split(SEP).collect();
    let mut node = object;
    for segment in &segments[..segments.len() - 1] {
        match node.get_mut(*segment) {
            Some(child) => node = child,
            None => return,
        }
    }
    if let Value::Object(map) = node {
        map.remove(segments[segments.len() - 1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A LeaseCandidate's two times have their bits: `renewTime` the Lease's, `pingTime` one
    /// no Lease path has; a manager owning either has the bit set, and only then.
    #[test]
    fn a_candidates_times_have_their_bits_in_a_managers_mask() {
        assert_eq!(1 << LEASE_SPEC_PATHS.iter().position(|p| *p == "spec\u{1f}renewTime").unwrap(), RENEW_TIME_BIT);
        assert_eq!(LEASE_SPEC_PATHS.len(), 7, "bit 7 is pingTime's");
        let mut state = ManagerState::new("m", Operation::Update, "v1", 0);
        for (fields, mask) in [
            (vec!["spec\u{1f}renewTime"], RENEW_TIME_BIT),
            (vec![PING_TIME_PATH], PING_TIME_BIT),
            (vec![PING_TIME_PATH, "spec\u{1f}renewTime", "spec\u{1f}leaseName"], PING_TIME_BIT | RENEW_TIME_BIT),
            (vec!["spec\u{1f}leaseName"], 0),
        ] {
            *state.fields_mut() = fields.iter().map(|f| f.to_string()).collect();
            state.refresh_trie();
            assert_eq!(state.lease_mask, mask, "{fields:?}");
        }
    }

    /// `same_str` is `==` on strings of every length up to past a vector's width, equal, one
    /// byte apart anywhere, and of different lengths.
    #[test]
    fn same_str_is_string_equality() {
        for len in 0..40 {
            let a: String = (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            assert!(same_str(&a, &a.clone()));
            for at in 0..len {
                let mut b = a.clone().into_bytes();
                b[at] = b'Z';
                assert!(!same_str(&a, std::str::from_utf8(&b).unwrap()));
            }
            assert!(!same_str(&a, &format!("{a}x")));
        }
    }

    /// The walking diff of objects kept as JSON gives the whole-map diff: random edits of a
    /// LeaseCandidate-like object (values changed, fields added, removed, nulled, turned from a
    /// leaf into an object and back, labels changed, a key holding the separator).
    #[test]
    fn the_walking_json_object_diff_is_the_whole_map_diff() {
        let base = json!({
            "spec": {"leaseName": "l", "binaryVersion": "1.34.0", "renewTime": "t0", "strategy": "OldestEmulationVersion",
                     "nested": {"a": 1, "b": [1, 2], "c": {"d": null}}},
            "status": null,
        });
        let meta = json!({"labels": {"app": "x", "tier": "y"}, "annotations": {"k": "v"}});
        // Edits of the spec apply while it is an object (one edit makes it a leaf).
        fn spec(o: &mut Value) -> Option<&mut Value> {
            o.get_mut("spec").filter(|s| s.is_object())
        }
        let edits: Vec<fn(&mut Value, &mut Value)> = vec![
            |o, _| _ = spec(o).map(|s| s["renewTime"] = json!("t1")),
            |o, _| _ = spec(o).map(|s| s["nested"]["a"] = json!(2)),
            |o, _| _ = spec(o).map(|s| s["nested"]["c"] = json!({"d": 1, "e": {}})),
            |o, _| _ = spec(o).map(|s| s["nested"]["b"] = json!({"x": 1})),
            |o, _| _ = spec(o).map(|s| s["leaseName"] = Value::Null),
            |o, _| _ = spec(o).map(|s| s.as_object_mut().map(|m| m.shift_remove("strategy"))),
            |o, _| o["status"] = json!({"phase": "p"}),
            |o, _| o["extra"] = json!("new"),
            |o, _| o["spec"] = json!("a leaf now"),
            |_, m| m["labels"]["app"] = json!("z"),
            |_, m| m["labels"] = Value::Null,
            |_, m| m["annotations"]["new\u{1f}key"] = json!("v"),
            |o, _| _ = spec(o).map(|s| s["odd\u{1f}key"] = json!({"a": 1})),
            |o, _| o["apiVersion"] = json!("v2"),
        ];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2_000 {
            let (mut before, mut before_meta) = (base.clone(), meta.clone());
            let (mut after, mut after_meta) = (base.clone(), meta.clone());
            for target in [(&mut before, &mut before_meta), (&mut after, &mut after_meta)] {
                for _ in 0..3 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if !x.is_multiple_of(3) {
                        edits[(x / 3 % edits.len() as u64) as usize](target.0, target.1);
                    }
                }
            }
            let (b, bm) = (before.as_object().unwrap(), before_meta.as_object().unwrap());
            let (a, am) = (after.as_object().unwrap(), after_meta.as_object().unwrap());
            let whole = leaves_diff(&json_object_leaves(bm, b), &json_object_leaves(am, a));
            assert_eq!(
                json_object_diff(Some((bm, b)), (am, a)),
                whole,
                "{before} {before_meta} → {after} {after_meta}"
            );
            let created = leaves_diff(&BTreeMap::new(), &json_object_leaves(am, a));
            assert_eq!(json_object_diff(None, (am, a)), created);
        }
    }

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| p.replace('.', "\u{1f}")).collect()
    }

    #[test]
    fn fields_v1_trie_marks_owned_string_maps_with_a_dot() {
        let trie = fields_v1_trie(&set(&["data", "data.phase", "metadata.labels", "metadata.labels.app"]));
        assert_eq!(
            serde_json::to_string(&trie).unwrap(),
            r#"{"f:data":{".":{},"f:phase":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}"#
        );
        let mut back = BTreeSet::new();
        collect_trie_paths(&trie, "", &mut back);
        assert_eq!(back, set(&["data", "data.phase", "metadata.labels", "metadata.labels.app"]));
    }

    #[test]
    fn syncing_managed_fields_only_touches_times_when_ownership_is_unchanged() {
        let mut managers = Vec::new();
        let diff = FieldDiff { changed: set(&["spec.renewTime"]), removed: BTreeSet::new() };
        record_update(&mut managers, "kcm", "coordination.k8s.io/v1", &diff, 10);
        let mut entries = render_managed_fields(&managers);
        record_update(&mut managers, "kcm", "coordination.k8s.io/v1", &diff, 12);
        sync_managed_fields(&mut entries, &managers);
        assert_eq!(entries, render_managed_fields(&managers));
        assert_eq!(entries[0].time.unwrap().unix_secs(), 12);
        let other = FieldDiff { changed: set(&["spec.holderIdentity"]), removed: BTreeSet::new() };
        record_update(&mut managers, "kcm", "coordination.k8s.io/v1", &other, 13);
        sync_managed_fields(&mut entries, &managers);
        assert_eq!(entries, render_managed_fields(&managers), "a changed set is re-rendered");
        // A new object's entries take the room of its managers and no more (a fleet keeps
        // one entry a Lease all run; a first insert would make room for four).
        let mut fresh = Vec::new();
        sync_managed_fields(&mut fresh, &managers);
        assert_eq!((fresh.len(), fresh.capacity()), (1, 1));
        // Two writers taking turns: the latest sorts last, so the entries swap places.
        let ping = FieldDiff { changed: set(&["spec.pingTime"]), removed: BTreeSet::new() };
        record_update(&mut managers, "controller", "coordination.k8s.io/v1", &ping, 14);
        sync_managed_fields(&mut entries, &managers);
        assert_eq!(entries, render_managed_fields(&managers), "a new writer is added");
        for (writer, diff, at) in [("kcm", &diff, 15), ("controller", &ping, 16), ("kcm", &diff, 17)] {
            record_update(&mut managers, writer, "coordination.k8s.io/v1", diff, at);
            let before = entries.clone();
            sync_managed_fields(&mut entries, &managers);
            assert_eq!(entries, render_managed_fields(&managers), "{writer} wrote last");
            assert_ne!(entries, before);
            assert!(Arc::ptr_eq(&entries[1].manager, &before[0].manager), "moved, not built again");
        }
        // Entries that no manager has are dropped; a stranger's entries give way to the managers'.
        let mut stale = render_managed_fields(&managers);
        stale.insert(1, ManagedFieldsEntry { manager: "gone".into(), ..stale[0].clone() });
        sync_managed_fields(&mut stale, &managers);
        assert_eq!(stale, render_managed_fields(&managers));
        let mut strangers = vec![ManagedFieldsEntry { manager: "x".into(), ..Default::default() }; 3];
        sync_managed_fields(&mut strangers, &managers);
        assert_eq!(strangers, render_managed_fields(&managers));
    }

    #[test]
    fn system_metadata_is_not_tracked() {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "resourceVersion": "3", "labels": {"a": "b"}}, "data": {"k": "v"}});
        let keys: Vec<String> = leaf_fields(&v).into_keys().map(|k| smd_path(&k)).collect();
        assert_eq!(keys, [".data", ".data.k", ".metadata.labels", ".metadata.labels.a"]);
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager_in_identifier_order() {
        let mut managers = Vec::new();
        let other = FieldDiff { changed: set(&["data.a", "data.b"]), removed: BTreeSet::new() };
        record_update(&mut managers, "zeta", "v1", &other, 1);
        record_apply(
            &mut managers,
            "alpha",
            "v1",
            set(&["data.c"]),
            &FieldDiff { changed: set(&["data.c"]), ..Default::default() },
            false,
            1,
        )
        .unwrap();
        let diff = FieldDiff { changed: set(&["data.a", "data.b", "data.c"]), removed: BTreeSet::new() };
        let err =
            record_apply(&mut managers, "me", "v1", set(&["data.a", "data.b", "data.c"]), &diff, false, 2).unwrap_err();
        assert_eq!(
            err.message,
            "Apply failed with 3 conflicts: conflicts with \"alpha\":\n- .data.c\nconflicts with \"zeta\" using v1:\n- .data.a\n- .data.b"
        );
        assert_eq!(err.details.causes[0].message, "conflict with \"alpha\"");
        assert_eq!(err.details.causes[0].field, ".data.c");
    }
}

//! The network between nodes and the API server, and the API server's own availability.
//!
//! Every node has one [`Link`] to the API server with two directions: `Up` (requests, node →
//! server) and `Down` (responses, server → node). Each direction draws its latency from its own
//! distribution and drops a message with its own probability. Partitions are intervals of true
//! time per direction.
//!
//! A partition has a mode, for the three ways a cut looks to a client:
//! - `drop` (the default): a message is delivered only if its direction is open both when it is
//!   sent and when it would arrive; the others are lost (a cable cut, a DROP rule): the client
//!   waits for its timeout, forever without one;
//! - `hold`: a message that meets the cut waits and is delivered once it heals, with its latency
//!   from then (TCP retransmitting across a short cut): a call without a timeout returns after the
//!   heal;
//! - `refuse`: a message that meets the cut fails at once (a REJECT rule, a dead endpoint, a
//!   reset connection): the client sees a connection error right away and the message never
//!   arrives.
//!
//! Every send makes the same number of random draws (one for loss, one or two for latency)
//! whatever the outcome, so partitions and loss do not shift the stream for later messages.

use crate::rng::ComponentRng;
use crate::time::Nanos;

/// A latency distribution, in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Latency {
    Fixed(Nanos),
    /// Uniform over [min, max].
    Uniform {
        min: Nanos,
        max: Nanos,
    },
    /// `floor + Exp(mean)`: the usual shape of a lightly loaded path.
    Exponential {
        floor: Nanos,
        mean: Nanos,
    },
    /// Pick one component by weight, then draw from it (rare spikes: 99% fast, 1% slow).
    Mixture(Vec<(f64, Latency)>),
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Fixed(crate::time::millis(1))
    }
}

impl Latency {
    /// The shortest latency it can draw.
    pub fn min(&self) -> Nanos {
        match self {
            Latency::Fixed(ns) => *ns,
            Latency::Uniform { min, .. } => *min,
            Latency::Exponential { floor, .. } => *floor,
            Latency::Mixture(parts) => parts.iter().map(|(_, l)| l.min()).min().unwrap_or(0),
        }
    }

    pub fn sample(&self, rng: &mut ComponentRng) -> Nanos {
        match self {
            Latency::Fixed(ns) => *ns,
            Latency::Uniform { min, max } => rng.uniform_u64(*min, *max),
            Latency::Exponential { floor, mean } => floor + rng.exponential(*mean as f64).round() as Nanos,
            Latency::Mixture(parts) => {
                let total: f64 = parts.iter().map(|(w, _)| *w).sum();
                let mut pick = rng.unit_f64() * total;
                for (weight, part) in parts {
                    if pick < *weight {
                        return part.sample(rng);
                    }
                    pick -= weight;
                }
                parts.last().map(|(_, p)| p.sample(rng)).unwrap_or(0)
            }
        }
    }

    /// An upper bound, if the distribution has one (used by the safety envelope).
    pub fn max(&self) -> Option<Nanos> {
        match self {
            Latency::Fixed(ns) => Some(*ns),
            Latency::Uniform { max, .. } => Some(*max),
            Latency::Exponential { .. } => None,
            Latency::Mixture(parts) => parts.iter().map(|(_, p)| p.max()).try_fold(0, |acc, m| m.map(|m| acc.max(m))),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            Latency::Uniform { min, max } if min > max => {
                Err(format!("uniform latency min {min}ns is above max {max}ns"))
            }
            Latency::Mixture(parts) if parts.is_empty() => Err("latency mixture needs at least one component".into()),
            Latency::Mixture(parts) => {
                for (w, p) in parts {
                    if !(w.is_finite() && *w >= 0.0) {
                        return Err(format!("latency mixture weight {w} must be a finite number >= 0"));
                    }
                    p.validate()?;
                }
                if parts.iter().all(|(w, _)| *w == 0.0) {
                    return Err("latency mixture weights are all zero".into());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Which way a message travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Node → API server (requests).
    Up,
    /// API server → node (responses).
    Down,
}

/// Which directions a partition cuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    Up,
    Down,
    Both,
}

impl Cut {
    fn blocks(self, dir: Direction) -> bool {
        matches!((self, dir), (Cut::Both, _) | (Cut::Up, Direction::Up) | (Cut::Down, Direction::Down))
    }
}

/// What a partition does to the messages it meets (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PartitionMode {
    #[default]
    Drop,
    Hold,
    Refuse,
}

impl PartitionMode {
    pub fn parse(text: &str) -> Option<PartitionMode> {
        match text {
            "drop" => Some(PartitionMode::Drop),
            "hold" => Some(PartitionMode::Hold),
            "refuse" => Some(PartitionMode::Refuse),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PartitionMode::Drop => "drop",
            PartitionMode::Hold => "hold",
            PartitionMode::Refuse => "refuse",
        }
    }
}

/// A partition of one link over `[from, until)` in true time.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    pub from: Nanos,
    pub until: Nanos,
    pub cut: Cut,
    pub mode: PartitionMode,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirectionSpec {
    pub latency: Latency,
    /// Probability in [0, 1] that a message is lost.
    pub loss: f64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkSpec {
    pub up: DirectionSpec,
    pub down: DirectionSpec,
}

/// What became of a message handed to the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Arrives(Nanos),
    Lost,
    /// Lost to a `drop` partition.
    Partitioned,
    /// Met a `hold` partition: arrives at this time, after the heal.
    Held(Nanos),
    /// Met a `refuse` partition: the sender sees a connection error now.
    Refused,
}

/// One direction's draws, prepared once from its [`DirectionSpec`]: the loss probability as an
/// integer threshold on the draw's top 53 bits, and a uniform latency's span, so a send does no
/// floating-point work and no range check (every message makes two of these draws).
#[derive(Clone, Debug)]
struct Draws {
    /// A message is lost iff `next_u64() >> 11 < loss_below` (see [`loss_threshold`]).
    loss_below: u64,
    latency: LatencyDraw,
}

#[derive(Clone, Debug)]
enum LatencyDraw {
    Fixed(Nanos),
    /// `lo + ⌊x · span / 2^64⌋`: `ComponentRng::uniform_u64(lo, lo + span - 1)` (span ≥ 1).
    Uniform {
        lo: Nanos,
        span: u64,
    },
    /// Anything else: sampled by the distribution itself.
    Other(Latency),
}

impl Draws {
    fn of(spec: &DirectionSpec) -> Draws {
        let latency = match spec.latency {
            Latency::Fixed(ns) => LatencyDraw::Fixed(ns),
            Latency::Uniform { min, max } if max >= min && max - min < u64::MAX => {
                LatencyDraw::Uniform { lo: min, span: max - min + 1 }
            }
            ref other => LatencyDraw::Other(other.clone()),
        };
        Draws { loss_below: loss_threshold(spec.loss), latency }
    }

    #[inline(always)]
    fn sample(&self, rng: &mut ComponentRng) -> (bool, Nanos) {
        match &self.latency {
            LatencyDraw::Uniform { lo, span } => uniform_sample(rng, self.loss_below, *lo, *span),
            LatencyDraw::Fixed(ns) => (rng.next_u64() >> 11 < self.loss_below, *ns),
            LatencyDraw::Other(latency) => {
                let lost = rng.next_u64() >> 11 < self.loss_below;
                (lost, latency.sample(rng))
            }
        }
    }
}

/// A message's loss and uniform latency ([`LatencyDraw::Uniform`]): two words of `rng`.
#[inline(always)]
fn uniform_sample(rng: &mut ComponentRng, loss_below: u64, lo: Nanos, span: u64) -> (bool, Nanos) {
    let (loss, latency) = rng.next_two_u64();
    (loss >> 11 < loss_below, lo + ((latency as u128 * span as u128) >> 64) as u64)
}

/// The integer form of `ComponentRng::bernoulli(p)`: with `k = next_u64() >> 11` (so the
/// uniform draw is exactly `k · 2^-53`), `k · 2^-53 < p` iff `k < ⌈p · 2^53⌉` (scaling by a power
/// of two is exact). p ≤ 0 or NaN: never; p ≥ 1: always (k < 2^53).
fn loss_threshold(p: f64) -> u64 {
    const SCALE: f64 = (1u64 << 53) as f64;
    if p.is_nan() || p <= 0.0 {
        0
    } else if p >= 1.0 {
        1 << 53
    } else {
        (p * SCALE).ceil() as u64
    }
}

/// One direction of a link: what a message sent that way meets, drawn from the direction's own
/// stream — or not drawn at all when no draw can change it (no loss and a fixed latency, the
/// default network): every send would take a draw from the stream and throw it away, so the
/// stream is neither kept (a generator is 184 bytes, two a node) nor computed. Nothing reads
/// the stream but this direction's sends, so whether its words were read is seen by nobody.
#[derive(Debug)]
enum Way {
    /// Never lost, always this latency.
    Certain(Nanos),
    Drawn(Box<(Draws, ComponentRng)>),
}

impl Way {
    /// The way whose stream is keyed `key` joined (`["link/", node, "/up"]`).
    fn new(spec: &DirectionSpec, seed: u64, key: &[&str]) -> Way {
        match Draws::of(spec) {
            Draws { loss_below: 0, latency: LatencyDraw::Fixed(ns) } => Way::Certain(ns),
            draws => Way::Drawn(Box::new((draws, ComponentRng::of_parts(seed, key)))),
        }
    }

    /// Whether a message is lost, and its latency.
    #[inline(always)]
    fn sample(&mut self) -> (bool, Nanos) {
        match self {
            Way::Certain(ns) => (false, *ns),
            Way::Drawn(drawn) => {
                let (draws, rng) = &mut **drawn;
                draws.sample(rng)
            }
        }
    }

    /// A copy of it drawing from a copy of its stream, written into `slot` (`None` for a
    /// certain way).
    fn copy<'a>(&'a self, slot: &'a mut Option<ComponentRng>) -> WayCopy<'a> {
        match self {
            Way::Certain(ns) => {
                *slot = None;
                WayCopy::Certain(*ns)
            }
            Way::Drawn(drawn) => {
                let rng = slot.insert(drawn.1.clone());
                match drawn.0 {
                    Draws { loss_below, latency: LatencyDraw::Uniform { lo, span } } => {
                        WayCopy::Uniform { loss_below, lo, span, rng }
                    }
                    ref draws => WayCopy::Drawn(draws, rng),
                }
            }
        }
    }

    /// Where its stream stands (`(0, 0)` for a certain way, which has none).
    fn position(&self) -> (u64, u8) {
        match self {
            Way::Certain(_) => (0, 0),
            Way::Drawn(drawn) => drawn.1.position(),
        }
    }

    fn seek(&mut self, position: (u64, u8)) {
        if let Way::Drawn(drawn) = self {
            drawn.1.seek(position);
        }
    }
}

/// One node's link to the API server. Not `Clone`: a copy of its boxed streams allocates; to
/// draw ahead, [`Link::rehearsal`].
#[derive(Debug)]
pub struct Link {
    up: Way,
    down: Way,
    partitions: Vec<Partition>,
}

impl Link {
    /// `node_key` is the node's stable identity; each direction that draws gets its own stream.
    pub fn new(spec: &LinkSpec, seed: u64, node_key: &str) -> Self {
        Link {
            up: Way::new(&spec.up, seed, &["link/", node_key, "/up"]),
            down: Way::new(&spec.down, seed, &["link/", node_key, "/down"]),
            partitions: Vec::new(),
        }
    }

    pub fn add_partition(&mut self, p: Partition) {
        self.partitions.push(p);
    }

    pub fn partitions(&self) -> &[Partition] {
        &self.partitions
    }

    /// Is `dir` cut at true time `t`?
    pub fn is_cut(&self, dir: Direction, t: Nanos) -> bool {
        self.cut_at(dir, t).is_some()
    }

    /// The partition cutting `dir` at `t` (the first added, if several).
    fn cut_at(&self, dir: Direction, t: Nanos) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.from <= t && t < p.until && p.cut.blocks(dir))
    }

    /// When a message held at `t` gets through: the first instant from `t` on at which `dir` is
    /// open (overlapping and back-to-back partitions are waited out together).
    fn heal_after(&self, dir: Direction, mut t: Nanos) -> Nanos {
        while let Some(p) = self.cut_at(dir, t) {
            t = p.until;
        }
        t
    }

    /// Where its random streams stand (up, down; `(0, 0)` for a certain way, which has none):
    /// all a message moves of a link.
    pub fn positions(&self) -> ((u64, u8), (u64, u8)) {
        (self.up.position(), self.down.position())
    }

    /// Moves its streams to positions a rehearsal of this link passed (the same draws taken),
    /// whose streams as it left them are `ahead` (the [`Streams`] it drew from): their buffers
    /// are taken where they still hold the positions' blocks (see `ComponentRng::seek_from`).
    pub fn seek_from(&mut self, (up, down): ((u64, u8), (u64, u8)), ahead: &Streams) {
        for (way, position, ahead) in [(&mut self.up, up, &ahead.up), (&mut self.down, down, &ahead.down)] {
            match (way, ahead) {
                (Way::Drawn(drawn), Some(ahead)) => drawn.1.seek_from(position, ahead),
                (way, _) => way.seek(position),
            }
        }
    }

    /// Sends one message at `now` in direction `dir`. (Inlined into the request path's two
    /// sends: see `world/requests.rs`.)
    #[inline(always)]
    pub fn send(&mut self, now: Nanos, dir: Direction) -> Delivery {
        let (lost, latency) = match dir {
            Direction::Up => self.up.sample(),
            Direction::Down => self.down.sample(),
        };
        self.deliver(now, dir, lost, latency)
    }

    /// Draws on copies of its streams, written into `streams` (which keep them as the
    /// rehearsal leaves them), to plan ahead (`world/quiet.rs`): what its sends would meet,
    /// moving nothing of the link (a clone would copy its boxed streams to the heap).
    pub fn rehearsal<'a>(&'a self, streams: &'a mut Streams) -> Rehearsal<'a> {
        let Streams { up, down } = streams;
        Rehearsal { up: self.up.copy(up), down: self.down.copy(down), link: self }
    }

    /// What a message sent at `now` that way meets, given its draws.
    #[inline(always)]
    fn deliver(&self, now: Nanos, dir: Direction, lost: bool, latency: Nanos) -> Delivery {
        let arrival = now.saturating_add(latency);
        if self.partitions.is_empty() {
            return if lost { Delivery::Lost } else { Delivery::Arrives(arrival) };
        }
        // The cut the message meets: one it is sent into, else one that starts under it.
        let cut = self.cut_at(dir, now).or_else(|| self.cut_at(dir, arrival)).map(|p| (p.mode, p.from));
        match cut {
            Some((PartitionMode::Drop, _)) => Delivery::Partitioned,
            Some((PartitionMode::Refuse, _)) => Delivery::Refused,
            Some((PartitionMode::Hold, from)) if !lost => {
                // Sent into the cut, or caught in flight by it: through at the heal.
                let heal = self.heal_after(dir, now.max(from));
                Delivery::Held(heal.saturating_add(latency))
            }
            _ if lost => Delivery::Lost,
            _ => Delivery::Arrives(arrival),
        }
    }
}

/// A link's sends on copies of its streams (see [`Link::rehearsal`]).
pub struct Rehearsal<'a> {
    link: &'a Link,
    up: WayCopy<'a>,
    down: WayCopy<'a>,
}

/// The copies of a link's streams a rehearsal draws from, up and down (`None` for a way that
/// draws nothing): the caller's, so that they outlive the rehearsal without being moved.
#[derive(Default)]
pub struct Streams {
    up: Option<ComponentRng>,
    down: Option<ComponentRng>,
}

/// A [`Way`] with a copy of its stream. Its uniform latency (the common case) is taken out of
/// [`Draws`] once: a plan sends thousands of messages on one rehearsal, and matching the
/// latency's kind at each cost a twentieth of a planned request.
enum WayCopy<'a> {
    Certain(Nanos),
    Uniform { loss_below: u64, lo: Nanos, span: u64, rng: &'a mut ComponentRng },
    Drawn(&'a Draws, &'a mut ComponentRng),
}

impl WayCopy<'_> {
    fn position(&self) -> (u64, u8) {
        match self {
            WayCopy::Certain(_) => (0, 0),
            WayCopy::Uniform { rng, .. } | WayCopy::Drawn(_, rng) => rng.position(),
        }
    }
}

impl Rehearsal<'_> {
    /// What [`Link::send`] would give, its draws taken from the copies.
    #[inline(always)]
    pub fn send(&mut self, now: Nanos, dir: Direction) -> Delivery {
        // A request's two ways draw in step (two words each): both refills in one pass.
        if dir == Direction::Up
            && let (WayCopy::Uniform { rng: up, .. }, WayCopy::Uniform { rng: down, .. }) =
                (&mut self.up, &mut self.down)
        {
            ComponentRng::refill_both(up, down);
        }
        let way = match dir {
            Direction::Up => &mut self.up,
            Direction::Down => &mut self.down,
        };
        let (lost, latency) = match way {
            WayCopy::Certain(ns) => (false, *ns),
            WayCopy::Uniform { loss_below, lo, span, rng } => uniform_sample(rng, *loss_below, *lo, *span),
            WayCopy::Drawn(draws, rng) => draws.sample(rng),
        };
        self.link.deliver(now, dir, lost, latency)
    }

    /// Where the copies stand (up, down), as [`Link::positions`] names places: after both
    /// ways were refilled together (`ComponentRng::refill_both`), the place a stream names
    /// `(c, 32)` reads `(c + 2, 0)`, which `seek` and `seek_from` take alike.
    pub fn positions(&self) -> ((u64, u8), (u64, u8)) {
        (self.up.position(), self.down.position())
    }
}

/// Windows in which the API server is slow or gone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerAvailability {
    /// `(from, until, extra)`: requests arriving in `[from, until)` take `extra` longer.
    pub slowdowns: Vec<(Nanos, Nanos, Nanos)>,
    /// `(from, until, mode)`: requests arriving in `[from, until)` are, by `mode`, neither
    /// applied nor answered (`drop`: the client times out, as when the API server hangs or a
    /// load balancer black-holes them), kept and applied when it ends (`hold`: TCP retransmits
    /// to a frozen server), or refused at once (`refuse`: a restarting API server has no
    /// listener, the connection is reset).
    pub outages: Vec<(Nanos, Nanos, PartitionMode)>,
}

impl ServerAvailability {
    pub fn is_down(&self, t: Nanos) -> bool {
        self.outage_at(t).is_some()
    }

    /// The outage a request arriving at `t` meets: its mode, and when the last window holding
    /// `t` ends (the first such window's mode decides).
    pub fn outage_at(&self, t: Nanos) -> Option<(PartitionMode, Nanos)> {
        let mut found: Option<(PartitionMode, Nanos)> = None;
        for &(from, until, mode) in &self.outages {
            if from <= t && t < until {
                found = Some(match found {
                    None => (mode, until),
                    Some((first, end)) => (first, end.max(until)),
                });
            }
        }
        found
    }

    /// Extra processing time for a request arriving at `t` (slowdowns add up).
    pub fn extra_processing(&self, t: Nanos) -> Nanos {
        self.slowdowns.iter().filter(|&&(from, until, _)| from <= t && t < until).map(|&(_, _, extra)| extra).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::millis;

    #[test]
    fn a_partition_loses_messages_sent_into_it_and_messages_in_flight_when_it_starts() {
        let spec =
            LinkSpec { up: DirectionSpec { latency: Latency::Fixed(millis(10)), loss: 0.0 }, ..Default::default() };
        let mut link = Link::new(&spec, 1, "n");
        link.add_partition(Partition {
            from: millis(100),
            until: millis(200),
            cut: Cut::Up,
            mode: PartitionMode::Drop,
        });
        assert_eq!(link.send(millis(50), Direction::Up), Delivery::Arrives(millis(60)));
        // Sent before the cut, would arrive inside it: lost in flight.
        assert_eq!(link.send(millis(95), Direction::Up), Delivery::Partitioned);
        assert_eq!(link.send(millis(150), Direction::Up), Delivery::Partitioned);
        // The other direction is unaffected by an Up cut.
        assert!(matches!(link.send(millis(150), Direction::Down), Delivery::Arrives(_)));
        assert_eq!(link.send(millis(200), Direction::Up), Delivery::Arrives(millis(210)));
    }

    #[test]
    fn a_hold_partition_delivers_after_the_heal_and_a_refuse_partition_fails_at_once() {
        let spec =
            LinkSpec { up: DirectionSpec { latency: Latency::Fixed(millis(10)), loss: 0.0 }, ..Default::default() };
        let mut hold = Link::new(&spec, 1, "n");
        hold.add_partition(Partition {
            from: millis(100),
            until: millis(200),
            cut: Cut::Both,
            mode: PartitionMode::Hold,
        });
        hold.add_partition(Partition {
            from: millis(200),
            until: millis(250),
            cut: Cut::Up,
            mode: PartitionMode::Hold,
        });
        // Sent into the cut: through once both back-to-back cuts heal, with its latency.
        assert_eq!(hold.send(millis(150), Direction::Up), Delivery::Held(millis(260)));
        // Caught in flight when the cut starts.
        assert_eq!(hold.send(millis(95), Direction::Up), Delivery::Held(millis(260)));
        // The down direction (1 ms by default) is cut only by the first.
        assert_eq!(hold.send(millis(150), Direction::Down), Delivery::Held(millis(201)));
        let mut refuse = Link::new(&spec, 1, "n");
        refuse.add_partition(Partition {
            from: millis(100),
            until: millis(200),
            cut: Cut::Up,
            mode: PartitionMode::Refuse,
        });
        assert_eq!(refuse.send(millis(150), Direction::Up), Delivery::Refused);
        assert_eq!(refuse.send(millis(200), Direction::Up), Delivery::Arrives(millis(210)));
    }

    /// A direction with no loss and a fixed latency keeps no stream, and its messages meet what
    /// the drawn stream would have given them (the words read and thrown away).
    #[test]
    fn a_certain_way_meets_what_its_draws_would_have_given() {
        let spec = DirectionSpec { latency: Latency::Fixed(millis(3)), loss: 0.0 };
        let mut certain = Way::new(&spec, 4, &["link/n/up"]);
        assert!(matches!(certain, Way::Certain(_)));
        let mut drawn = Way::Drawn(Box::new((Draws::of(&spec), ComponentRng::new(4, "link/n/up"))));
        for _ in 0..100 {
            assert_eq!(certain.sample(), drawn.sample());
        }
        assert_eq!(certain.sample(), (false, millis(3)));
        // Any loss, or a latency that varies, keeps the stream.
        for spec in [
            DirectionSpec { latency: Latency::Fixed(millis(3)), loss: 0.01 },
            DirectionSpec { latency: Latency::Uniform { min: 0, max: millis(3) }, loss: 0.0 },
        ] {
            assert!(matches!(Way::new(&spec, 4, &["link/n/up"]), Way::Drawn(_)));
        }
    }

    /// A rehearsal sends as the link would, and moves nothing of it.
    #[test]
    fn a_rehearsal_sends_as_the_link_and_leaves_it_where_it_was() {
        let spec = LinkSpec {
            up: DirectionSpec { latency: Latency::Uniform { min: 0, max: millis(20) }, loss: 0.3 },
            down: DirectionSpec { latency: Latency::Fixed(millis(2)), loss: 0.0 },
        };
        let mut link = Link::new(&spec, 7, "n");
        link.send(0, Direction::Up);
        let before = link.positions();
        let mut streams = Streams::default();
        let mut rehearsal = link.rehearsal(&mut streams);
        let rehearsed: Vec<_> =
            (0..50).flat_map(|i| [rehearsal.send(i, Direction::Up), rehearsal.send(i, Direction::Down)]).collect();
        let reached = rehearsal.positions();
        assert_eq!(link.positions(), before);
        let sent: Vec<_> = (0..50).flat_map(|i| [link.send(i, Direction::Up), link.send(i, Direction::Down)]).collect();
        assert_eq!(rehearsed, sent);
        assert_eq!(link.positions(), reached);
        assert!(sent.contains(&Delivery::Lost));
    }

    #[test]
    fn loss_draws_keep_the_stream_aligned() {
        let spec = |loss| LinkSpec {
            up: DirectionSpec { latency: Latency::Uniform { min: 0, max: millis(100) }, loss },
            ..Default::default()
        };
        let mut lossy = Link::new(&spec(0.5), 9, "n");
        let mut clean = Link::new(&spec(0.0), 9, "n");
        let mut lost = 0;
        for i in 0..1000 {
            match (lossy.send(i, Direction::Up), clean.send(i, Direction::Up)) {
                (Delivery::Arrives(a), Delivery::Arrives(b)) => assert_eq!(a, b),
                (Delivery::Lost, Delivery::Arrives(_)) => lost += 1,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!((400..600).contains(&lost), "lost {lost} of 1000 at p=0.5");
    }

    /// The prepared draws are the distributions' own, draw for draw: the loss threshold is
    /// `bernoulli`, the uniform span is `uniform_u64` (pinned so that no seed's trace moves).
    #[test]
    fn prepared_draws_equal_the_distributions_draws() {
        for p in [0.0, 1e-9, 0.01, 0.1, 1.0 / 3.0, 0.5, 0.999_999, 1.0, -1.0, 2.0, f64::NAN] {
            let mut a = ComponentRng::new(5, "p");
            let mut b = ComponentRng::new(5, "p");
            let below = loss_threshold(p);
            for _ in 0..20_000 {
                assert_eq!(a.next_u64() >> 11 < below, b.bernoulli(p), "p = {p}");
            }
        }
        // Probabilities at the edge of a threshold: k·2^-53 just below, at and above p.
        for k in [1u64, 2, 12345, (1 << 52) + 1, (1 << 53) - 1] {
            let p = k as f64 / (1u64 << 53) as f64;
            assert_eq!(loss_threshold(p), k, "p = k·2^-53 is lost for exactly the draws below k");
        }
        for (min, max) in [(0, 0), (1, 20_000_000), (millis(3), millis(3)), (0, u64::MAX - 1), (7, u64::MAX)] {
            let spec = DirectionSpec { latency: Latency::Uniform { min, max }, loss: 0.25 };
            let draws = Draws::of(&spec);
            let (mut a, mut b) = (ComponentRng::new(11, "u"), ComponentRng::new(11, "u"));
            for _ in 0..5_000 {
                let lost = b.bernoulli(spec.loss);
                assert_eq!(draws.sample(&mut a), (lost, spec.latency.sample(&mut b)), "{min}..={max}");
            }
        }
    }

    #[test]
    fn latency_distributions_sample_within_their_shape() {
        let mut rng = ComponentRng::new(3, "lat");
        let mix = Latency::Mixture(vec![(0.99, Latency::Fixed(millis(1))), (0.01, Latency::Fixed(millis(500)))]);
        let spikes = (0..10_000).filter(|_| mix.sample(&mut rng) == millis(500)).count();
        assert!((50..150).contains(&spikes), "{spikes} spikes");
        let exp = Latency::Exponential { floor: millis(2), mean: millis(3) };
        let mean = (0..10_000).map(|_| exp.sample(&mut rng)).sum::<u64>() as f64 / 10_000.0;
        assert!((mean - millis(5) as f64).abs() < millis(1) as f64 * 0.3, "mean {mean}");
        assert_eq!(mix.max(), Some(millis(500)));
        assert_eq!(exp.max(), None);
    }

    #[test]
    fn server_outages_and_slowdowns_are_windows() {
        let s = ServerAvailability {
            slowdowns: vec![(10, 20, 5), (15, 30, 7)],
            outages: vec![(40, 50, PartitionMode::Drop), (45, 60, PartitionMode::Hold)],
        };
        assert_eq!(s.outage_at(47), Some((PartitionMode::Drop, 60)));
        assert_eq!(s.outage_at(55), Some((PartitionMode::Hold, 60)));
        assert_eq!(s.extra_processing(16), 12);
        assert_eq!(s.extra_processing(25), 7);
        assert!(s.is_down(40) && s.is_down(50) && !s.is_down(60));
    }
}

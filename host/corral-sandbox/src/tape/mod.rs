//! Record and replay at the sandbox boundary: a [`Tape`] rides in one run's
//! store and sees every import result the guest receives from a source the
//! host owns.
//!
//! - **Recording** ([`Tape::record`]): the wall and monotonic clocks and
//!   both random generators of the run's WASI context are wrappers that
//!   append what they return (`sources.rs`); the `wasi:filesystem` wrapper
//!   appends each `open-at`, `stat` and directory entry and captures the
//!   contents of each file opened to read; the `wasi:http` gate appends
//!   each request and the response as the guest received it, its body
//!   teed as it streams; `request-approval` appends the decision, the
//!   0.3.0 client requests (`sandbox/client.rs`) their answers, `log` and
//!   `progress` their lines (within [`MAX_LOG_LINES`](crate::MAX_LOG_LINES)).
//!   The events, the
//!   captures and the insecure seed make a [`TapeLog`].
//! - **Replay** ([`Tape::replay`]): the same wrappers answer from the
//!   events instead of their source. Events are answered in order within
//!   their channel (the clocks, random, HTTP, files,
//!   approvals, client requests), so an extra clock read or a body that arrives
//!   in other chunks changes nothing. The first request that does not
//!   match the next recorded one of its channel is the
//!   [`Divergence`]; the guest then gets a neutral answer (an HTTP error,
//!   zero bytes) and the run goes on.
//!
//! Why at the sources and not at each `wasi:io/streams` read: the chunks
//! a body or a file arrives in depend on the network and the kernel, not
//! on the guest, so a log of stream reads would diverge on its own. What
//! the sources returned is the whole of what the guest could learn.
//!
//! A recording is bounded: [`Tape::record`] takes a byte cap, and what does
//! not fit is cut and named in [`TapeLog::incomplete`].

pub mod event;
pub(crate) mod sources;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use event::Channel;
pub use event::{
    BodyEnd, ClientReply, ClockKind, Decision, Event, FileCapture, HttpExchange, HttpResponse,
    MAX_HASHED_BYTES, RandomSource, Stat,
};

/// Default cap of one recording's events and captured files, in bytes
/// (before compression): 16 MiB.
pub const DEFAULT_MAX_RECORDING_BYTES: usize = 16 << 20;

/// The tape of one run: recording or replaying. Cheap to clone (the clocks,
/// the random generators and the store share one).
#[derive(Clone)]
pub struct Tape(Arc<Mutex<Deck>>);

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let deck = self.deck();
        f.debug_struct("Tape")
            .field("replay", &deck.replay)
            .field("events", &deck.events.len())
            .finish_non_exhaustive()
    }
}

struct Deck {
    replay: bool,
    events: Vec<Event>,
    files: Vec<FileCapture>,
    /// Paths with a capture.
    captured: HashSet<String>,
    /// Paths the guest changed (wrote, created, removed) before reading
    /// them: a later open is not captured, the replay redoes the change.
    touched: HashSet<String>,
    /// Replay: the next event to look at, per channel.
    cursors: [usize; Channel::COUNT],
    /// Replay: the last value of each clock.
    last_clock: [u64; 2],
    divergence: Option<Divergence>,
    /// Replay: the run's own log and progress lines.
    produced: Vec<Event>,
    /// Recording: bytes left under the cap.
    room: usize,
    /// Recording stopped at the cap.
    full: bool,
    incomplete: Vec<String>,
    insecure_seed: u128,
}

/// Where a replay first departed from its recording.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Divergence {
    /// The recorded event's position among all events, from 0; the number
    /// of events when the recording had nothing more of that kind.
    pub position: usize,
    /// The recorded event expected there, summed up
    /// ([`Event::summary`]); `None` past the recording's end.
    pub expected: Option<String>,
    /// What the replayed guest asked for instead, summed up the same way.
    pub got: String,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.expected {
            Some(expected) => write!(
                f,
                "at import #{}: the recording has {expected}, the guest asked for {}",
                self.position, self.got
            ),
            None => write!(
                f,
                "at import #{}: the recording has nothing more of this kind, the guest \
                 asked for {}",
                self.position, self.got
            ),
        }
    }
}

/// What a recording run saw.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TapeLog {
    /// Every import result, in order.
    pub events: Vec<Event>,
    /// The contents of the files the guest opened to read.
    pub files: Vec<FileCapture>,
    /// What was cut at the cap, one line each: a replay of this recording
    /// may not be faithful.
    pub incomplete: Vec<String>,
    /// The value of `wasi:random/insecure-seed`.
    pub insecure_seed: u128,
}

/// What a replay run did against its recording.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReplayLog {
    /// The first departure, if any.
    pub divergence: Option<Divergence>,
    /// The run's log and progress lines (to compare with the recorded ones).
    pub produced: Vec<Event>,
    /// Recorded input events (not clocks, not output lines) the run never
    /// asked for.
    pub unused: usize,
    /// Answers the recording could give only in part (a cut body).
    pub incomplete: Vec<String>,
}

impl Tape {
    /// A recording tape holding at most `max_bytes` of events and file
    /// contents ([`DEFAULT_MAX_RECORDING_BYTES`] by default).
    pub fn record(max_bytes: usize) -> Self {
        let mut seed = [0u8; 16];
        let _ = getrandom::fill(&mut seed);
        Self::new(
            false,
            Vec::new(),
            Vec::new(),
            u128::from_le_bytes(seed),
            max_bytes,
        )
    }

    /// A replaying tape: the guest's imports are answered from `events`,
    /// `wasi:random/insecure-seed` with `insecure_seed`.
    pub fn replay(events: Vec<Event>, files: Vec<FileCapture>, insecure_seed: u128) -> Self {
        Self::new(true, events, files, insecure_seed, 0)
    }

    fn new(
        replay: bool,
        events: Vec<Event>,
        files: Vec<FileCapture>,
        insecure_seed: u128,
        room: usize,
    ) -> Self {
        Self(Arc::new(Mutex::new(Deck {
            replay,
            events,
            captured: files.iter().map(|f| f.path.clone()).collect(),
            files,
            touched: HashSet::new(),
            cursors: [0; Channel::COUNT],
            last_clock: [0; 2],
            divergence: None,
            produced: Vec::new(),
            room,
            full: false,
            incomplete: Vec::new(),
            insecure_seed,
        })))
    }

    fn deck(&self) -> MutexGuard<'_, Deck> {
        // A panic while holding the lock leaves plain data behind.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether it answers from a recording.
    pub fn is_replay(&self) -> bool {
        self.deck().replay
    }

    /// The insecure seed the run's WASI context gets.
    pub(crate) fn insecure_seed(&self) -> u128 {
        self.deck().insecure_seed
    }

    /// What a recording run saw, taken out of the tape.
    pub fn take_log(&self) -> TapeLog {
        let mut deck = self.deck();
        TapeLog {
            events: std::mem::take(&mut deck.events),
            files: std::mem::take(&mut deck.files),
            incomplete: std::mem::take(&mut deck.incomplete),
            insecure_seed: deck.insecure_seed,
        }
    }

    /// What a replay run did, taken out of the tape.
    pub fn take_replay(&self) -> ReplayLog {
        let mut deck = self.deck();
        let mut unused = 0;
        for channel in [
            Channel::Random,
            Channel::Http,
            Channel::Files,
            Channel::Approval,
            Channel::Client,
        ] {
            let from = deck.cursors[channel.index()];
            unused += deck.events[from.min(deck.events.len())..]
                .iter()
                .filter(|e| e.channel() == channel)
                .count();
        }
        ReplayLog {
            divergence: deck.divergence.take(),
            produced: std::mem::take(&mut deck.produced),
            unused,
            incomplete: std::mem::take(&mut deck.incomplete),
        }
    }

    /// Recording: appends `event` if it fits, else notes the cut once.
    /// Returns its index when it was kept.
    pub(crate) fn push(&self, event: Event) -> Option<usize> {
        let mut deck = self.deck();
        deck.push(event)
    }

    /// Replay: the next recorded event of `got`'s channel when `same` says
    /// it answers `got`; otherwise the divergence is noted (the first
    /// only) and `None` returned.
    pub(crate) fn answer(&self, got: &Event, same: impl Fn(&Event) -> bool) -> Option<Event> {
        let mut deck = self.deck();
        deck.answer(got, same)
    }

    /// Replay: an output line of the run, kept for the comparison.
    pub(crate) fn produced(&self, event: Event) {
        let mut deck = self.deck();
        if deck.produced.len() < crate::MAX_LOG_LINES as usize {
            deck.produced.push(event);
        }
    }

    /// Replay: notes an answer given only in part.
    pub(crate) fn note_incomplete(&self, what: String) {
        self.deck().incomplete.push(what);
    }

    /// Recording: changes the event at `index` (an HTTP exchange, as its
    /// response arrives), charging `extra` bytes; `change` gets whether
    /// they fit.
    pub(crate) fn amend<R>(
        &self,
        index: usize,
        extra: usize,
        change: impl FnOnce(&mut Event, bool) -> R,
    ) -> Option<R> {
        let mut deck = self.deck();
        let fits = !deck.full && extra <= deck.room;
        if fits {
            deck.room -= extra;
        }
        deck.events.get_mut(index).map(|event| change(event, fits))
    }

    /// Recording: a note of what could not be kept.
    pub(crate) fn cut(&self, what: String) {
        let mut deck = self.deck();
        if deck.incomplete.len() < 64 {
            deck.incomplete.push(what);
        }
    }

    /// Recording: the guest changed `path` (before any capture of it).
    pub(crate) fn touch(&self, path: &str) {
        let mut deck = self.deck();
        if !deck.replay && !deck.captured.contains(path) && deck.touched.len() < 4096 {
            deck.touched.insert(path.to_owned());
        }
    }

    /// Recording: whether a file opened at `path` should be captured.
    pub(crate) fn wants_capture(&self, path: &str) -> bool {
        let deck = self.deck();
        !deck.replay && !deck.captured.contains(path) && !deck.touched.contains(path)
    }

    /// Recording: keeps a file's capture, its contents dropped (the replay
    /// needs the file) when they do not fit.
    pub(crate) fn capture(&self, mut file: FileCapture) {
        let mut deck = self.deck();
        let size = file.contents.as_ref().map_or(0, |c| c.len()) + file.path.len() + 96;
        if deck.full || size > deck.room {
            if file.contents.take().is_some() && deck.incomplete.len() < 64 {
                let note = format!(
                    "{}: {} bytes, above the room left in the recording; a replay needs \
                     the file (sha256 {})",
                    file.path, file.size, file.sha256
                );
                deck.incomplete.push(note);
            }
        } else {
            deck.room -= size;
        }
        deck.captured.insert(file.path.clone());
        deck.files.push(file);
    }

    /// Room left for one more capture, in bytes.
    pub(crate) fn room(&self) -> usize {
        let deck = self.deck();
        if deck.full { 0 } else { deck.room }
    }

    /// Replay: the clock's next recorded value, or its last one when the
    /// recording has no more (a guest may read a clock more or less often
    /// while it waits: not a divergence).
    pub(crate) fn clock(&self, clock: ClockKind, real: impl FnOnce() -> u64) -> u64 {
        let mut deck = self.deck();
        let slot = match clock {
            ClockKind::Wall => 0,
            ClockKind::Monotonic => 1,
        };
        if !deck.replay {
            let nanos = real();
            deck.push(Event::Clock { clock, nanos });
            return nanos;
        }
        let channel = Event::Clock { clock, nanos: 0 }.channel();
        match deck.next(channel) {
            Some(index) => {
                if let Event::Clock { nanos, .. } = deck.events[index] {
                    deck.last_clock[slot] = nanos;
                }
                deck.cursors[channel.index()] = index + 1;
            }
            None => deck.cursors[channel.index()] = deck.events.len(),
        }
        deck.last_clock[slot]
    }
}

impl Deck {
    fn push(&mut self, event: Event) -> Option<usize> {
        if self.full {
            return None;
        }
        let weight = event.weight();
        if weight > self.room {
            self.full = true;
            if self.incomplete.len() < 64 {
                self.incomplete.push(format!(
                    "the recording reached its cap at import #{} ({}); later imports \
                     are not recorded",
                    self.events.len(),
                    event.summary()
                ));
            }
            return None;
        }
        self.room -= weight;
        self.events.push(event);
        Some(self.events.len() - 1)
    }

    /// The index of the next event of `channel` at or after its cursor.
    fn next(&self, channel: Channel) -> Option<usize> {
        let from = self.cursors[channel.index()];
        self.events
            .get(from..)?
            .iter()
            .position(|e| e.channel() == channel)
            .map(|at| from + at)
    }

    fn answer(&mut self, got: &Event, same: impl Fn(&Event) -> bool) -> Option<Event> {
        let channel = got.channel();
        match self.next(channel) {
            Some(index) => {
                self.cursors[channel.index()] = index + 1;
                let event = &self.events[index];
                if same(event) {
                    return Some(event.clone());
                }
                let expected = Some(event.summary());
                self.diverge(index, expected, got);
                None
            }
            None => {
                self.cursors[channel.index()] = self.events.len();
                self.diverge(self.events.len(), None, got);
                None
            }
        }
    }

    fn diverge(&mut self, position: usize, expected: Option<String>, got: &Event) {
        if self.divergence.is_none() {
            self.divergence = Some(Divergence {
                position,
                expected,
                got: got.summary(),
            });
        }
    }
}

//! Who and where a turn runs: the identifiers every layer above keys its records by.
//!
//! This module sits at the bottom of the crate and imports nothing from it, so storage, events,
//! gates, contexts and session state can all share one vocabulary:
//!
//! | id | names | default |
//! |---|---|---|
//! | [`AppName`] | the application; `app:` state is shared by every session of it | `"default"` |
//! | [`UserId`] | a user of the app; `user:` state is shared by every session of that user | `"default"` |
//! | [`SessionId`] | one conversation (the [`ConversationId`] of storage is the same type) | none: the caller names it |
//! | [`ThreadId`] | a line of work inside a session, for state kept per thread | `"main"` |
//! | [`TurnId`] | one run of the runner | a fresh UUID v7 per turn |
//!
//! The defaults let a program that has one app, one user or one thread say nothing about them:
//! `RawTurnContext::new(session, prompt)` runs as app `default`, user `default`, thread `main`.
//! Records written with the defaults are found again by the same defaults, so a program can
//! name its app and users later only by migrating its rows (or by naming them `default`).
//!
//! Every id is text, compared and ordered byte-wise, cheap to clone (a shared `Arc<str>`; a
//! minted [`TurnId`] keeps its 36 characters inline), and serialized as a plain JSON string.
//!
//! ```
//! use adk::ids::{AppName, SessionId, ThreadId, UserId};
//!
//! assert_eq!(AppName::default().as_str(), "default");
//! assert_eq!(UserId::default().as_str(), "default");
//! assert_eq!(ThreadId::default().as_str(), "main");
//!
//! let session = SessionId::from("support-42");
//! assert_eq!(session.to_string(), "support-42");
//! assert_eq!(serde_json::to_string(&session).unwrap(), "\"support-42\"");
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use serde::{Deserialize, Serialize};

mod hasher;
pub(crate) use hasher::IdHasher;

/// Defines one text id: a newtype over `Arc<str>` with the conversions and traits all ids share.
macro_rules! text_id {
    ($(#[$attr:meta])* $name:ident, example = $example:literal) => {
        $(#[$attr])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self::from)
            }
        }

        impl $name {
            /// The id as text, for use as a database key.
            ///
            /// ```
            #[doc = concat!("let id = adk::ids::", stringify!($name), "::from(\"", $example, "\");")]
            #[doc = concat!("assert_eq!(id.as_str(), \"", $example, "\");")]
            /// ```
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Whether the id is the empty string (the runner refuses empty ids).
            ///
            /// ```
            #[doc = concat!("assert!(adk::ids::", stringify!($name), "::from(\"\").is_empty());")]
            /// ```
            #[must_use]
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(Arc::from(id))
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(Arc::from(id))
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                id.clone()
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }
    };
}

text_id! {
    /// The name of an application. `app:` state belongs to it, shared by all its users and
    /// sessions; storage adapters may partition every record by it.
    ///
    /// Defaults to [`AppName::DEFAULT`], `"default"`.
    ///
    /// ```
    /// use adk::ids::AppName;
    ///
    /// assert_eq!(AppName::default(), AppName::from(AppName::DEFAULT));
    /// assert_eq!(AppName::from("shop").as_str(), "shop");
    /// ```
    AppName, example = "shop"
}

text_id! {
    /// A user of an application. `user:` state belongs to (app, user), shared by all of that
    /// user's sessions in that app.
    ///
    /// Defaults to [`UserId::DEFAULT`], `"default"`. It is an identifier for keying records, not
    /// a presentation: who *spoke* a message is its [`Identity`](crate::primitives::Identity).
    ///
    /// ```
    /// use adk::ids::UserId;
    ///
    /// assert_eq!(UserId::default().as_str(), "default");
    /// assert_eq!(UserId::from("ada").to_string(), "ada");
    /// ```
    UserId, example = "ada"
}

text_id! {
    /// One session: a conversation of one user with one app. Session state (keys without a
    /// prefix) belongs to it, and storage adapters partition primitives by it.
    ///
    /// Storage calls it a conversation; [`ConversationId`] is this same type, so
    /// `StorageContext::conversation_id` and `StorageContext::session_id` agree. It has no
    /// default: the caller names the session of every turn.
    ///
    /// ```
    /// use adk::ids::{ConversationId, SessionId};
    ///
    /// let session = SessionId::from("support-42");
    /// let conversation: ConversationId = session.clone();
    /// assert_eq!(conversation, session);
    /// ```
    SessionId, example = "support-42"
}

text_id! {
    /// A thread inside a session: a line of work whose per-thread state is kept apart from the
    /// session's other threads (forks start new threads).
    ///
    /// Defaults to [`ThreadId::MAIN`], `"main"`.
    ///
    /// ```
    /// use adk::ids::ThreadId;
    ///
    /// assert_eq!(ThreadId::default().as_str(), ThreadId::MAIN);
    /// ```
    ThreadId, example = "draft-2"
}

impl ThreadId {
    /// The longest thread id, in bytes, a session store accepts.
    pub const MAX_LEN: usize = 256;

    /// Checks that the id can name a thread in a session store: not empty (the stores keep
    /// session-scoped records under the empty thread), at most [`ThreadId::MAX_LEN`] bytes, and
    /// free of control characters (a NUL byte cannot be stored in PostgreSQL text).
    ///
    /// Every session store, [`Fork`](crate::state::Fork) and the runner refuse an id that fails
    /// this check.
    ///
    /// ```
    /// use adk::ids::{ThreadId, ThreadIdProblem};
    ///
    /// assert!(ThreadId::from("draft-2").check().is_ok());
    /// let refused = ThreadId::from("").check().unwrap_err();
    /// assert_eq!(refused.problem, ThreadIdProblem::Empty);
    /// ```
    ///
    /// # Errors
    ///
    /// [`InvalidThreadId`], naming the problem and (at most the first 64 characters of) the id.
    pub fn check(&self) -> Result<(), InvalidThreadId> {
        // The default thread (`"main"`, shared by every turn that names none) passes.
        if Arc::ptr_eq(&self.0, &MAIN_THREAD) {
            return Ok(());
        }
        let id = self.as_str();
        let problem = if id.is_empty() {
            ThreadIdProblem::Empty
        } else if id.len() > Self::MAX_LEN {
            ThreadIdProblem::TooLong { len: id.len() }
        } else if id.chars().any(char::is_control) {
            ThreadIdProblem::ControlCharacter
        } else {
            return Ok(());
        };
        Err(InvalidThreadId {
            shown: shown(id),
            problem,
        })
    }
}

/// The first 64 characters of an id, with control characters escaped and `…` when cut, for error
/// messages (a 10 KB id is not copied whole into a message).
pub(crate) fn shown(id: &str) -> String {
    const SHOWN: usize = 64;
    let mut out: String = id
        .chars()
        .take(SHOWN)
        .flat_map(char::escape_debug)
        .collect();
    if id.chars().nth(SHOWN).is_some() {
        out.push('…');
    }
    out
}

/// What is wrong with a thread id; see [`ThreadId::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThreadIdProblem {
    /// The id is the empty string.
    Empty,
    /// The id is longer than [`ThreadId::MAX_LEN`] bytes.
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The id holds a control character (a NUL byte, a newline...).
    ControlCharacter,
}

impl fmt::Display for ThreadIdProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => formatter.write_str("is empty"),
            Self::TooLong { len } => write!(
                formatter,
                "is {len} bytes long, over the limit of {}",
                ThreadId::MAX_LEN
            ),
            Self::ControlCharacter => formatter.write_str("holds a control character"),
        }
    }
}

/// A thread id was refused; see [`ThreadId::check`]. Nothing was read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the thread id `{shown}` {problem}: name threads with 1 to 256 bytes of printable text \
     (`ThreadId::check`)"
)]
pub struct InvalidThreadId {
    /// The id as shown in the message: at most its first 64 characters, escaped.
    pub shown: String,
    /// What is wrong with it.
    pub problem: ThreadIdProblem,
}

/// Identifies one turn: one call of the runner with one piece of user input.
///
/// The runner mints a fresh id for every turn (a UUID v7, so ids sort by creation time);
/// tests and tools that replay a turn may supply their own with [`TurnId::from`].
///
/// Text like the other ids, compared, ordered and hashed as its text; a minted id keeps its 36
/// characters inline (no allocation, and a clone is a copy), a given one shares an `Arc<str>`.
///
/// ```
/// use adk::ids::TurnId;
///
/// let first = TurnId::new();
/// let second = TurnId::new();
/// assert_ne!(first, second);
/// assert_eq!(TurnId::from("turn-1").as_str(), "turn-1");
/// ```
#[derive(Clone)]
pub struct TurnId(TurnIdText);

/// A turn id's text: as minted, or as given.
#[derive(Clone)]
enum TurnIdText {
    /// A UUIDv7 as lower-case hyphenated text (ASCII), inline.
    Minted([u8; 36]),
    Given(Arc<str>),
}

impl TurnId {
    /// The turn id `id` is, as text kept inline.
    fn of_uuid(id: uuid::Uuid) -> Self {
        let mut text = [0; 36];
        id.hyphenated().encode_lower(&mut text);
        Self(TurnIdText::Minted(text))
    }

    /// The id as text, for use as a database key.
    ///
    /// ```
    /// let id = adk::ids::TurnId::from("turn-1");
    /// assert_eq!(id.as_str(), "turn-1");
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Written by `of_uuid` only: ASCII, so never the empty fallback.
            TurnIdText::Minted(text) => std::str::from_utf8(text).unwrap_or(""),
            TurnIdText::Given(text) => text,
        }
    }

    /// Whether the id is the empty string (the runner refuses empty ids).
    ///
    /// ```
    /// assert!(adk::ids::TurnId::from("").is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            TurnIdText::Minted(_) => false,
            TurnIdText::Given(text) => text.is_empty(),
        }
    }
}

impl PartialEq for TurnId {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for TurnId {}

impl std::hash::Hash for TurnId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As the text hashes, so a map keyed by `TurnId` is found by `&str` (`Borrow<str>`).
        self.as_str().hash(state);
    }
}

impl PartialOrd for TurnId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TurnId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for TurnId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_tuple("TurnId")
            .field(&self.as_str())
            .finish()
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl Serialize for TurnId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TurnId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

impl From<String> for TurnId {
    fn from(id: String) -> Self {
        Self(TurnIdText::Given(Arc::from(id)))
    }
}

impl From<&str> for TurnId {
    fn from(id: &str) -> Self {
        Self(TurnIdText::Given(Arc::from(id)))
    }
}

impl From<&TurnId> for TurnId {
    fn from(id: &TurnId) -> Self {
        id.clone()
    }
}

impl AsRef<str> for TurnId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for TurnId {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

/// The id storage partitions a conversation's records by. A conversation *is* a session: this
/// is [`SessionId`] under the name the storage contract has always used.
///
/// ```
/// use adk::storage::ConversationId;
///
/// let id = ConversationId::from("customer-42/support");
/// assert_eq!(id.as_str(), "customer-42/support");
/// assert_eq!(id.to_string(), "customer-42/support");
/// ```
pub type ConversationId = SessionId;

impl AppName {
    /// The app a turn runs as when the caller names none.
    pub const DEFAULT: &'static str = "default";
}

impl Default for AppName {
    fn default() -> Self {
        // Every turn that names none takes the default: share one allocation.
        static SHARED: std::sync::LazyLock<Arc<str>> =
            std::sync::LazyLock::new(|| Arc::from(AppName::DEFAULT));
        Self(Arc::clone(&SHARED))
    }
}

impl UserId {
    /// The user a turn runs as when the caller names none.
    pub const DEFAULT: &'static str = "default";
}

impl Default for UserId {
    fn default() -> Self {
        // Every turn that names none takes the default: share one allocation.
        static SHARED: std::sync::LazyLock<Arc<str>> =
            std::sync::LazyLock::new(|| Arc::from(UserId::DEFAULT));
        Self(Arc::clone(&SHARED))
    }
}

impl ThreadId {
    /// The thread a turn runs in when the caller names none.
    pub const MAIN: &'static str = "main";
}

/// The text of [`ThreadId::default`]: every turn that names no thread shares this allocation.
static MAIN_THREAD: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| Arc::from(ThreadId::MAIN));

impl Default for ThreadId {
    fn default() -> Self {
        Self(Arc::clone(&MAIN_THREAD))
    }
}

impl TurnId {
    /// Mints a fresh, time-ordered turn id.
    ///
    /// ```
    /// let id = adk::ids::TurnId::new();
    /// assert_eq!(id.as_str().len(), 36);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::of_uuid(time_ordered_uuid())
    }
}

/// The last UUIDv7 minted in this process, as `millis << 16 | counter`: its 48-bit Unix
/// timestamp in milliseconds and the 16-bit counter that orders the ids of one millisecond.
static LAST_V7: AtomicU64 = AtomicU64::new(0);

/// A fresh UUIDv7 (RFC 9562, section 5.7), later than every one minted before it in this
/// process, on any thread.
///
/// The ids of the kit (turns, messages, events) come from here, not from
/// `uuid::Uuid::now_v7`, whose process-wide context sits behind a lock and costs about 600
/// instructions an id; this is one clock read, one compare-and-swap on [`LAST_V7`] and one draw
/// from the thread's generator (two when the millisecond is new).
///
/// Layout: the 48-bit millisecond timestamp, then a 16-bit counter (RFC 9562 section 6.2,
/// method 1: the 12 bits of `rand_a` and the first 4 of `rand_b`), then 58 random bits. A new
/// millisecond seeds the counter with 15 random bits (its leftmost bit zero, the RFC's rollover
/// guard); an id in the same millisecond as the last, or in an earlier one (the clock stepped
/// back), takes the last's timestamp and counter plus one, so a counter that runs over carries
/// into the timestamp, which runs ahead of the clock until the clock catches up. The random bits
/// come from `rand`'s `ThreadRng` (ChaCha12, a cryptographically secure generator seeded from
/// the operating system and reseeded as it goes), so ids stay hard to guess (RFC 9562 section
/// 6.9) with 58 random bits each.
pub(crate) fn time_ordered_uuid() -> uuid::Uuid {
    let [id] = time_ordered_uuids();
    id
}

/// `N` fresh UUIDv7s in a row, as [`time_ordered_uuid`] mints them one by one, for one clock
/// read: the first takes the clock's millisecond (or the last id's plus one, as there), the
/// others the counters after it; each has its own 58 random bits. Every one is later than every
/// id minted before the call, on any thread, and earlier than every id minted after it.
pub(crate) fn time_ordered_uuids<const N: usize>() -> [uuid::Uuid; N] {
    time_ordered_uuids_since(since_epoch(std::time::SystemTime::now()))
}

/// [`time_ordered_uuids`] for a clock reading the caller made: `since` the Unix epoch (`None`
/// before 1970, see [`since_epoch`]).
fn time_ordered_uuids_since<const N: usize>(since: Option<std::time::Duration>) -> [uuid::Uuid; N] {
    use rand::Rng as _;

    let mut rng = rand::rng();
    let millis = unix_millis(since);
    let mut last = LAST_V7.load(AtomicOrdering::Relaxed);
    let first = loop {
        // The counter's seed is drawn only when the millisecond is new: ids minted in the
        // millisecond of the last take its counter plus one and need none.
        let first = v7_after(last, millis, || u64::from(rng.next_u32() & 0x7FFF));
        // The batch's last id; past `u64::MAX` would need a timestamp past the year 10889.
        let batch_last = first.wrapping_add(N.saturating_sub(1) as u64);
        // One location's read-modify-writes are totally ordered, whatever the ordering
        // argument: every id is later than the one before it.
        match LAST_V7.compare_exchange_weak(
            last,
            batch_last,
            AtomicOrdering::Relaxed,
            AtomicOrdering::Relaxed,
        ) {
            Ok(_) => break first,
            Err(seen) => last = seen,
        }
    };
    let mut next = first;
    std::array::from_fn(|_| {
        let id = v7_from_parts(next, rng.next_u64());
        next = next.wrapping_add(1);
        id
    })
}

/// How long after the Unix epoch `now` is; `None` for a clock before 1970.
pub(crate) fn since_epoch(now: std::time::SystemTime) -> Option<std::time::Duration> {
    now.duration_since(std::time::UNIX_EPOCH).ok()
}

/// A Unix time in whole milliseconds, without going through `u128`: a clock before 1970
/// (`None`) reads as 0, one past the 48 bits of a UUIDv7 (the year 10889) as the last of them.
fn unix_millis(since: Option<std::time::Duration>) -> u64 {
    since.map_or(0, |since| {
        since
            .as_secs()
            .saturating_mul(1000)
            .saturating_add(u64::from(since.subsec_millis()))
            .min(MAX_MILLIS)
    })
}

/// The `millis << 16 | counter` of the id after `last`, given `millis`, the clock's
/// millisecond: `millis` with a counter from `seed` if it is later than the last's, else the
/// last plus one (a counter that runs over carries into the timestamp). `seed` is called only
/// in the first case.
fn v7_after(last: u64, millis: u64, seed: impl FnOnce() -> u64) -> u64 {
    if millis > last >> 16 {
        millis << 16 | seed()
    } else {
        // Past `u64::MAX` would need a timestamp past the year 10889.
        last.wrapping_add(1)
    }
}

/// The UUIDv7 of `millis << 16 | counter` with `random`'s top 58 bits as its random bits.
fn v7_from_parts(timestamp_counter: u64, random: u64) -> uuid::Uuid {
    let millis = u128::from(timestamp_counter >> 16);
    let counter = u128::from(timestamp_counter & 0xFFFF);
    let rand_a = counter >> 4;
    let rand_b = (counter & 0xF) << 58 | u128::from(random >> 6);
    uuid::Uuid::from_u128(millis << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b)
}

/// The largest timestamp a UUIDv7 holds: 48 bits of milliseconds.
const MAX_MILLIS: u64 = (1 << 48) - 1;

/// [`time_ordered_uuid`] as lower-case hyphenated text ([`id_text`]).
pub(crate) fn time_ordered_id() -> Arc<str> {
    id_text(time_ordered_uuid())
}

/// Two of [`time_ordered_uuids`], for the clock reading `since` the Unix epoch
/// ([`since_epoch`]): the turn's user message's id (as [`time_ordered_id`] encodes one) and
/// the turn's, in that order, from the reading that also dates the message.
pub(crate) fn time_ordered_id_pair(since: Option<std::time::Duration>) -> (Arc<str>, TurnId) {
    let [first, second] = time_ordered_uuids_since(since);
    (id_text(first), TurnId::of_uuid(second))
}

/// `id` as lower-case hyphenated text, encoded into a stack buffer (not through the formatting
/// machinery) and copied once into its shared allocation.
fn id_text(id: uuid::Uuid) -> Arc<str> {
    let mut buffer = uuid::Uuid::encode_buffer();
    Arc::from(&*id.hyphenated().encode_lower(&mut buffer))
}

/// [`time_ordered_id`] as a `String`, for the records whose id field is one.
pub(crate) fn time_ordered_string() -> String {
    let mut buffer = uuid::Uuid::encode_buffer();
    time_ordered_uuid()
        .hyphenated()
        .encode_lower(&mut buffer)
        .to_owned()
}

impl Default for TurnId {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_are_uuid_v7_text_with_the_clock_s_millisecond() {
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is past 1970")
            .as_millis();
        let id = TurnId::new();
        let after = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is past 1970")
            .as_millis();
        let uuid = uuid::Uuid::parse_str(id.as_str()).expect("a turn id is a UUID");
        assert_eq!(
            uuid.hyphenated().to_string(),
            id.as_str(),
            "lower-case, hyphenated"
        );
        assert_eq!(uuid.get_version(), Some(uuid::Version::SortRand));
        assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122);
        let (seconds, nanos) = uuid
            .get_timestamp()
            .expect("a v7 UUID has a timestamp")
            .to_unix();
        let millis = u128::from(seconds) * 1000 + u128::from(nanos) / 1_000_000;
        // At most one id ahead of the clock: the counter carries only after 32,768 in a
        // millisecond.
        assert!(
            (before..=after + 1).contains(&millis),
            "{before} <= {millis} <= {after} + 1"
        );
    }

    #[test]
    fn ids_minted_one_after_another_are_unique_and_ascending_as_text() {
        let ids: Vec<Arc<str>> = (0..100_000).map(|_| time_ordered_id()).collect();
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn ids_minted_on_many_threads_are_unique_and_each_later_than_what_came_before() {
        let before = time_ordered_uuid();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| (0..20_000).map(|_| time_ordered_uuid()).collect::<Vec<_>>())
            })
            .collect();
        let mut all = std::collections::HashSet::new();
        for thread in threads {
            let ids = thread.join().expect("a minting thread finishes");
            assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
            assert!(
                ids[0] > before,
                "later than an id minted before the thread started"
            );
            all.extend(ids);
        }
        assert_eq!(all.len(), 80_000, "no id minted twice");
        let after = time_ordered_uuid();
        assert!(
            all.iter().all(|id| *id < after),
            "the next id is later than all of them"
        );
    }

    #[test]
    fn the_counter_orders_a_millisecond_and_carries_into_the_next() {
        let millis = 1_700_000_000_000_u64;
        let unused = || unreachable!("the counter of the last id's millisecond is not seeded");
        // A later millisecond takes the clock's reading and its seed.
        assert_eq!(
            v7_after(millis << 16 | 9, millis + 1, || 3),
            (millis + 1) << 16 | 3
        );
        // The same millisecond, or an earlier one (the clock stepped back): the last plus one,
        // drawing no seed.
        assert_eq!(
            v7_after(millis << 16 | 9, millis, unused),
            millis << 16 | 10
        );
        assert_eq!(
            v7_after(millis << 16 | 9, millis - 5, unused),
            millis << 16 | 10
        );
        // A counter that runs over carries into the timestamp.
        assert_eq!(
            v7_after(millis << 16 | 0xFFFF, millis, unused),
            (millis + 1) << 16
        );

        let ids = [
            millis << 16 | 0x7FFF,
            millis << 16 | 0x8000,
            millis << 16 | 0xFFFF,
        ]
        .map(|parts| v7_from_parts(parts, u64::MAX));
        assert!(
            ids[0] < ids[1] && ids[1] < ids[2],
            "the counter's every bit orders: {ids:?}"
        );
        let carried = v7_from_parts((millis + 1) << 16, 0);
        assert!(ids[2] < carried);
        for id in ids.into_iter().chain([carried]) {
            assert_eq!(id.get_version(), Some(uuid::Version::SortRand));
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        }
        let (seconds, nanos) = carried.get_timestamp().expect("v7").to_unix();
        assert_eq!(seconds * 1000 + u64::from(nanos) / 1_000_000, millis + 1);
    }

    #[test]
    fn ids_minted_in_one_batch_are_consecutive_and_between_their_neighbours() {
        let before = time_ordered_uuid();
        let [first, second, third] = time_ordered_uuids();
        let after = time_ordered_uuid();
        assert!(before < first && first < second && second < third && third < after);
        let parts = |id: uuid::Uuid| (id.as_u128() >> 64) as u64;
        // `millis << 16 | counter` of consecutive ids of a batch: the counter plus one (the
        // version nibble and rand_a sit in the high half; a carry moves the timestamp).
        let stamp = |id: uuid::Uuid| {
            let high = parts(id);
            (high >> 16) << 16 | (high & 0x0FFF) << 4 | (id.as_u128() >> 58 & 0xF) as u64
        };
        assert_eq!(stamp(second), stamp(first) + 1);
        assert_eq!(stamp(third), stamp(second) + 1);
        for id in [first, second, third] {
            assert_eq!(id.get_version(), Some(uuid::Version::SortRand));
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        }
        let random = |id: uuid::Uuid| id.as_u128() & ((1 << 58) - 1);
        assert!(
            random(first) != random(second) && random(second) != random(third),
            "each id of a batch draws its own random bits"
        );
    }

    #[test]
    fn the_clock_reads_in_whole_milliseconds_within_48_bits() {
        use std::time::{Duration, UNIX_EPOCH};
        let millis = |now| unix_millis(since_epoch(now));
        assert_eq!(
            millis(UNIX_EPOCH + Duration::new(1_700_000_000, 999_999_999)),
            1_700_000_000_999
        );
        assert_eq!(millis(UNIX_EPOCH + Duration::from_nanos(1_999_999)), 1);
        assert_eq!(
            millis(UNIX_EPOCH - Duration::from_secs(1)),
            0,
            "before 1970"
        );
        assert_eq!(
            millis(UNIX_EPOCH + Duration::from_secs(1 << 40)),
            MAX_MILLIS,
            "past the year 10889"
        );
    }

    #[test]
    fn the_random_bits_are_the_last_58() {
        let parts = 1_700_000_000_000_u64 << 16 | 0xABCD;
        let low = v7_from_parts(parts, 0).as_u128();
        let high = v7_from_parts(parts, u64::MAX).as_u128();
        assert_eq!(low ^ high, (1 << 58) - 1);
    }

    #[test]
    fn a_minted_turn_id_is_its_text_as_a_given_one_is() {
        use std::hash::BuildHasher;
        let minted = TurnId::new();
        let given = TurnId::from(minted.as_str());
        assert_eq!(minted, given);
        assert_eq!(minted.cmp(&given), std::cmp::Ordering::Equal);
        let hasher = std::collections::hash_map::RandomState::new();
        assert_eq!(hasher.hash_one(&minted), hasher.hash_one(&given));
        assert_eq!(hasher.hash_one(&minted), hasher.hash_one(minted.as_str()));
        assert_eq!(format!("{minted:?}"), format!("{given:?}"));
        assert_eq!(
            format!("{minted:?}"),
            format!("TurnId({:?})", minted.as_str())
        );
        assert_eq!(minted.to_string(), given.to_string());
        assert_eq!(
            serde_json::to_string(&minted).expect("serializes"),
            format!("\"{minted}\"")
        );
        assert!(!minted.is_empty());
        let later = TurnId::new();
        assert!(minted < later && TurnId::from(later.as_str()) > given);
        let mut map = std::collections::HashMap::new();
        map.insert(minted.clone(), 1);
        assert_eq!(map.get(given.as_str()), Some(&1), "found by its text");
    }

    #[test]
    fn defaults_are_the_documented_names() {
        assert_eq!(AppName::default().as_str(), "default");
        assert_eq!(UserId::default().as_str(), "default");
        assert_eq!(ThreadId::default().as_str(), "main");
    }

    #[test]
    fn ids_serialize_as_plain_strings_and_round_trip() {
        let user = UserId::from("ada");
        let json = serde_json::to_string(&user).expect("ids serialize");
        assert_eq!(json, "\"ada\"");
        assert_eq!(
            serde_json::from_str::<UserId>(&json).expect("a string is an id"),
            user
        );
    }

    #[test]
    fn conversation_id_is_the_session_id() {
        let conversation: ConversationId = ConversationId::from("c-1");
        let session: SessionId = conversation;
        assert_eq!(session.as_str(), "c-1");
    }

    #[test]
    fn thread_ids_that_are_empty_too_long_or_hold_control_characters_are_refused() {
        assert!(ThreadId::from("main").check().is_ok());
        assert!(
            ThreadId::from("x".repeat(ThreadId::MAX_LEN))
                .check()
                .is_ok()
        );
        let problem = |id: &str| ThreadId::from(id).check().map_err(|error| error.problem);
        assert_eq!(problem(""), Err(ThreadIdProblem::Empty));
        assert_eq!(problem("a\0b"), Err(ThreadIdProblem::ControlCharacter));
        assert_eq!(
            problem("line\nbreak"),
            Err(ThreadIdProblem::ControlCharacter)
        );
        let long = "y".repeat(10_000);
        let refused = ThreadId::from(long.as_str()).check().expect_err("too long");
        assert_eq!(refused.problem, ThreadIdProblem::TooLong { len: 10_000 });
        assert!(refused.to_string().len() < 300, "{refused}");
    }
}

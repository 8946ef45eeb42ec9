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
//! Every id is text, compared and ordered byte-wise, cheap to clone (up to 23 bytes inline,
//! longer text a shared `Arc<str>`; a minted [`TurnId`] keeps its 36 characters inline), and
//! serialized as a plain JSON string.
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

use serde::{Deserialize, Serialize};
use smol_str::SmolStr;

mod hasher;
mod mint;
mod text;
pub(crate) use hasher::IdHasher;
pub(crate) use mint::{
    since_epoch, time_ordered_id, time_ordered_id_pair, time_ordered_string, time_ordered_uuid,
};
pub(crate) use text::IdText;

/// Defines one text id: a newtype over [`SmolStr`] (inline up to 23 bytes, else a shared
/// `Arc<str>`) with the conversions and traits all ids share.
macro_rules! text_id {
    ($(#[$attr:meta])* $name:ident, example = $example:literal) => {
        $(#[$attr])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(SmolStr);

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
                Self(SmolStr::from(id))
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(SmolStr::new(id))
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
        let id = self.as_str();
        // The default thread (`"main"`, the thread of every turn that names none) passes.
        if id == Self::MAIN {
            return Ok(());
        }
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
/// characters inline (no allocation, and a clone is a copy), a given one is inline up to 23 bytes, else shared.
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
pub struct TurnId(IdText);

impl TurnId {
    /// The turn id `id` is, as text kept inline.
    fn of_uuid(id: uuid::Uuid) -> Self {
        Self(IdText::minted(id))
    }

    /// The id as text, for use as a database key.
    ///
    /// ```
    /// let id = adk::ids::TurnId::from("turn-1");
    /// assert_eq!(id.as_str(), "turn-1");
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Whether the id is the empty string (the runner refuses empty ids).
    ///
    /// ```
    /// assert!(adk::ids::TurnId::from("").is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            IdText::Minted(_) => false,
            IdText::Given(text) => text.is_empty(),
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
        Self(IdText::from(id))
    }
}

impl From<&str> for TurnId {
    fn from(id: &str) -> Self {
        Self(IdText::from(id))
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
        // Static text: every turn that names none takes it without an allocation or a count.
        Self(SmolStr::new_static(Self::DEFAULT))
    }
}

impl UserId {
    /// The user a turn runs as when the caller names none.
    pub const DEFAULT: &'static str = "default";
}

impl Default for UserId {
    fn default() -> Self {
        // Static text: every turn that names none takes it without an allocation or a count.
        Self(SmolStr::new_static(Self::DEFAULT))
    }
}

impl ThreadId {
    /// The thread a turn runs in when the caller names none.
    pub const MAIN: &'static str = "main";
}

impl Default for ThreadId {
    fn default() -> Self {
        // Static text: every turn that names none takes it without an allocation or a count.
        Self(SmolStr::new_static(Self::MAIN))
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

impl Default for TurnId {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn ids_of_up_to_23_bytes_are_held_inline_and_longer_ones_shared() {
        let short = "s".repeat(23);
        assert!(!SessionId::from(short.as_str()).0.is_heap_allocated());
        assert!(!SessionId::from(short.clone()).0.is_heap_allocated());
        let long = SessionId::from("s".repeat(24));
        assert!(long.0.is_heap_allocated());
        assert_eq!(long.clone().as_str(), "s".repeat(24));
        for default in [
            AppName::default().0,
            UserId::default().0,
            ThreadId::default().0,
        ] {
            assert!(!default.is_heap_allocated());
        }
        assert!(!TurnId::from("turn-1").is_empty());
        assert_eq!(std::mem::size_of::<SessionId>(), 24);
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

//! [`Message`]: one user or assistant entry of a conversation.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize, Serializer};

use super::answer_link::check_link;
use super::error::{Checker, StoredTimestamp};
use super::{AnswerLink, Identity, Media, PrimitiveError, PrimitiveKind, Timestamp, Tokenizable};

/// Who wrote a message. Tool results live on [`ToolCall`](super::ToolCall), and operator
/// prompts are [`StandingInstruction`](super::StandingInstruction)s, so there is no third role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person talking to the agent.
    User,
    /// The agent.
    Assistant,
}

impl Role {
    /// `"user"` or `"assistant"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One conversation entry: text, attachments, or both.
///
/// Rules (checked when built and when deserialized): the id is non-empty; the message has
/// content or at least one attachment; fixed content is non-empty; only an assistant message
/// carries an [`AnswerLink`] (the answer it is the text of), and its answer id is non-empty.
/// Without an explicit identity, a message belongs to its role (`"user"` / `"assistant"`).
/// Serialization omits `attachments` when there are none and `answer` when unlinked;
/// attachments serialize as metadata only (see [`Media`]).
///
/// ```
/// use adk::primitives::{Identity, Message, Role};
///
/// let question = Message::user("m-1", "Hello?")?
///     .with_identity(Identity::new("user-42", "Alice")?);
/// assert_eq!(question.identity().identifier(), "user-42");
///
/// let answer = Message::assistant("m-2", "Hi Alice.")?;
/// assert_eq!(answer.role(), Role::Assistant);
/// assert_eq!(answer.identity().identifier(), "assistant");
///
/// assert!(Message::new("m-3", Role::User, None, Vec::new()).is_err());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
// Cloning shares the id and the extras (identity, attachments, answer link) by reference count,
// copies short text (it is inline) and shares longer text: a stored message is cloned two or
// three times (for the adapter, the dispatch, the turn).
#[derive(Clone, Deserialize)]
#[serde(try_from = "MessageFields")]
pub struct Message {
    // Shared: a stored message is cloned into the adapter's call, the dispatch's collection and
    // the turn's, and each clone of a `String` id was an allocation.
    id: Arc<str>,
    role: Role,
    content: Option<Tokenizable>,
    // What most messages leave out (another identity than the role's, attachments, a link to
    // the answer), together and shared: 8 bytes in every message instead of 104, and one
    // reference count to clone when present.
    extras: Option<Arc<Extras>>,
    times: Times,
}

/// A message's creation and update times, kept as their seconds and nanoseconds: a `Timestamp`
/// is 16 bytes of which 4 are padding, so the two take 24 bytes here instead of 32.
#[derive(Clone, Copy)]
struct Times {
    created_second: i64,
    updated_second: i64,
    created_nanosecond: i32,
    updated_nanosecond: i32,
}

impl Times {
    #[inline]
    fn new(created_at: Timestamp, updated_at: Timestamp) -> Self {
        Self {
            created_second: created_at.as_second(),
            updated_second: updated_at.as_second(),
            created_nanosecond: created_at.subsec_nanosecond(),
            updated_nanosecond: updated_at.subsec_nanosecond(),
        }
    }

    #[inline]
    fn created_at(self) -> Timestamp {
        timestamp_of(self.created_second, self.created_nanosecond)
    }

    #[inline]
    fn updated_at(self) -> Timestamp {
        timestamp_of(self.updated_second, self.updated_nanosecond)
    }
}

/// The timestamp whose parts these are. The parts were read from a `Timestamp`, so they are in
/// its range and the default (the Unix epoch) is never taken.
#[inline]
fn timestamp_of(second: i64, nanosecond: i32) -> Timestamp {
    Timestamp::new(second, nanosecond).unwrap_or_default()
}

/// The parts of a [`Message`] most messages leave out.
#[derive(Clone, Default)]
struct Extras {
    /// `None`: the role's ([`Identity::role_default`]).
    identity: Option<Identity>,
    attachments: Vec<Media>,
    answer: Option<AnswerLink>,
}

impl fmt::Debug for Message {
    /// Every part, as when the parts were fields of their own.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Message")
            .field("id", &self.id)
            .field("role", &self.role)
            .field("content", &self.content)
            .field("attachments", &self.attachments())
            .field("identity", self.identity())
            .field("answer", &self.answer())
            .field("created_at", &self.created_at())
            .field("updated_at", &self.updated_at())
            .finish()
    }
}

/// A [`Message`] as it serializes: its parts in order, without those it leaves out.
#[derive(Serialize)]
struct MessageView<'a> {
    id: &'a str,
    role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a Tokenizable>,
    #[serde(skip_serializing_if = "<[Media]>::is_empty")]
    attachments: &'a [Media],
    identity: &'a Identity,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<&'a AnswerLink>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        MessageView {
            id: self.id(),
            role: self.role,
            content: self.content.as_ref(),
            attachments: self.attachments(),
            identity: self.identity(),
            answer: self.answer(),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
        .serialize(serializer)
    }
}

/// What [`Timestamp::now`] reads for a clock `since` the Unix epoch, from the duration the
/// caller has (`None`, a clock before 1970 or beyond the timestamp's range: [`Timestamp::now`]
/// itself).
fn timestamp_since(since: Option<std::time::Duration>) -> Timestamp {
    since
        .and_then(|since| {
            let seconds = i64::try_from(since.as_secs()).ok()?;
            let nanos = i32::try_from(since.subsec_nanos()).ok()?;
            Timestamp::new(seconds, nanos).ok()
        })
        .unwrap_or_else(Timestamp::now)
}

/// The time now, as [`Timestamp::now`] reads it (the system clock, to the nanosecond), without
/// its conversion through a signed duration: the clock's duration since the Unix epoch is made
/// a timestamp directly.
#[inline]
fn now() -> Timestamp {
    timestamp_since(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok(),
    )
}

impl Message {
    /// A message with every part given; created and updated now. The id is kept as given when
    /// it is an `Arc<str>`, and copied once from a `&str`, `String` or `Box<str>`.
    pub fn new(
        id: impl Into<Arc<str>>,
        role: Role,
        content: Option<Tokenizable>,
        attachments: Vec<Media>,
    ) -> Result<Self, PrimitiveError> {
        Self::new_at(id.into(), role, content, attachments, now())
    }

    /// A user message with text content, created and updated at `since` the Unix epoch: a
    /// clock reading the caller made for something else as well (the runner mints the message's
    /// id from the same reading). `None` (a clock before 1970) reads the clock again.
    #[inline]
    pub(crate) fn user_since(
        id: Arc<str>,
        content: Tokenizable,
        since: Option<std::time::Duration>,
    ) -> Result<Self, PrimitiveError> {
        Self::new_at(
            id,
            Role::User,
            Some(content),
            Vec::new(),
            timestamp_since(since),
        )
    }

    #[inline]
    fn new_at(
        id: Arc<str>,
        role: Role,
        content: Option<Tokenizable>,
        attachments: Vec<Media>,
        now: Timestamp,
    ) -> Result<Self, PrimitiveError> {
        let message = Self {
            id,
            role,
            content,
            extras: (!attachments.is_empty()).then(|| {
                Arc::new(Extras {
                    attachments,
                    ..Extras::default()
                })
            }),
            times: Times::new(now, now),
        };
        // A new message links no answer and has extras only for its attachments: with an id
        // and text (or attachments) it passes every rule, and anything else goes through them
        // all for the same error.
        let passes = !message.id.is_empty()
            && message
                .content
                .as_ref()
                .map_or(message.extras.is_some(), |content| {
                    !content.is_empty_static()
                });
        if !passes {
            message.validate()?;
        }
        Ok(message)
    }

    /// A user message with text content.
    pub fn user(
        id: impl Into<Arc<str>>,
        content: impl Into<Tokenizable>,
    ) -> Result<Self, PrimitiveError> {
        Self::new(id, Role::User, Some(content.into()), Vec::new())
    }

    /// An assistant message with text content.
    pub fn assistant(
        id: impl Into<Arc<str>>,
        content: impl Into<Tokenizable>,
    ) -> Result<Self, PrimitiveError> {
        Self::new(id, Role::Assistant, Some(content.into()), Vec::new())
    }

    /// The same message with other content.
    ///
    /// ```
    /// use adk::primitives::Message;
    /// let edited = Message::user("m-1", "helo")?.with_content("hello")?;
    /// assert_eq!(edited.content().unwrap().render(), "hello");
    /// # Ok::<(), adk::primitives::PrimitiveError>(())
    /// ```
    pub fn with_content(mut self, content: impl Into<Tokenizable>) -> Result<Self, PrimitiveError> {
        self.content = Some(content.into());
        self.validate()?;
        Ok(self)
    }

    /// The same message without text; refused unless it keeps at least one attachment.
    pub fn without_content(mut self) -> Result<Self, PrimitiveError> {
        self.content = None;
        self.validate()?;
        Ok(self)
    }

    /// The same message with one more attachment.
    pub fn with_attachment(mut self, attachment: Media) -> Self {
        self.extras_mut().attachments.push(attachment);
        self
    }

    /// The same message with its attachments replaced.
    pub fn with_attachments(mut self, attachments: Vec<Media>) -> Result<Self, PrimitiveError> {
        if !attachments.is_empty() || self.extras.is_some() {
            self.extras_mut().attachments = attachments;
        }
        self.validate()?;
        Ok(self)
    }

    /// The same message attributed to `identity`.
    pub fn with_identity(mut self, identity: Identity) -> Self {
        if self.extras.is_some() || identity != *Identity::role_default(self.role) {
            self.extras_mut().identity = Some(identity);
        }
        self
    }

    /// The extras to change: this message's own (copied first if a clone shares them).
    fn extras_mut(&mut self) -> &mut Extras {
        Arc::make_mut(self.extras.get_or_insert_with(Arc::default))
    }

    /// The same message as part `link` of a model answer (see [`AnswerLink`]); refused for a
    /// user message (it belongs to no answer) and for an empty answer id.
    ///
    /// ```
    /// use adk::primitives::{AnswerLink, Message};
    /// let text = Message::assistant("m-1", "Let me check.")?.with_answer(AnswerLink::new("a-1", 0))?;
    /// assert_eq!(text.answer().map(AnswerLink::answer_id), Some("a-1"));
    /// assert!(Message::user("m-2", "hi")?.with_answer(AnswerLink::new("a-1", 1)).is_err());
    /// # Ok::<(), adk::primitives::PrimitiveError>(())
    /// ```
    pub fn with_answer(mut self, link: AnswerLink) -> Result<Self, PrimitiveError> {
        self.extras_mut().answer = Some(link);
        self.validate()?;
        Ok(self)
    }

    /// The answer this message is the text of, when it was written with a link.
    pub fn answer(&self) -> Option<&AnswerLink> {
        self.extras.as_ref()?.answer.as_ref()
    }

    /// The same message with another creation time.
    pub fn with_created_at(mut self, created_at: Timestamp) -> Self {
        self.times = Times::new(created_at, self.updated_at());
        self
    }

    /// The same message with another update time.
    pub fn with_updated_at(mut self, updated_at: Timestamp) -> Self {
        self.times = Times::new(self.created_at(), updated_at);
        self
    }

    /// The caller-chosen id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Who wrote it.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Its text, if any.
    pub fn content(&self) -> Option<&Tokenizable> {
        self.content.as_ref()
    }

    /// Its attachments, in order.
    pub fn attachments(&self) -> &[Media] {
        self.extras
            .as_ref()
            .map_or(&[], |extras| extras.attachments.as_slice())
    }

    /// Who it belongs to.
    pub fn identity(&self) -> &Identity {
        match self
            .extras
            .as_ref()
            .and_then(|extras| extras.identity.as_ref())
        {
            Some(identity) => identity,
            None => Identity::role_default(self.role),
        }
    }

    /// When it was created.
    pub fn created_at(&self) -> Timestamp {
        self.times.created_at()
    }

    /// When it was last changed.
    pub fn updated_at(&self) -> Timestamp {
        self.times.updated_at()
    }

    fn validate(&self) -> Result<(), PrimitiveError> {
        let check = Checker::new(PrimitiveKind::Message, &self.id);
        check.non_empty("id", &self.id)?;
        check_link(&check, self.answer())?;
        if self.answer().is_some() && self.role == Role::User {
            return Err(check.fail(
                "answer",
                "is only for assistant messages: a user message belongs to no model answer",
            ));
        }
        match &self.content {
            Some(content) if content.is_empty_static() => {
                Err(check.fail("content", "must not be empty when given"))
            }
            None if self.attachments().is_empty() => Err(check.fail(
                "content",
                "is required: a message needs content or at least one attachment",
            )),
            _ => Ok(()),
        }
    }
}

#[derive(Deserialize)]
struct MessageFields {
    id: String,
    role: String,
    #[serde(default)]
    content: Option<Tokenizable>,
    #[serde(default)]
    attachments: Vec<Media>,
    #[serde(default)]
    identity: Option<Identity>,
    #[serde(default)]
    answer: Option<AnswerLink>,
    created_at: StoredTimestamp,
    updated_at: StoredTimestamp,
}

impl TryFrom<MessageFields> for Message {
    type Error = PrimitiveError;

    fn try_from(fields: MessageFields) -> Result<Self, Self::Error> {
        let check = Checker::new(PrimitiveKind::Message, &fields.id);
        let role = match fields.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return Err(check.fail(
                    "role",
                    format!("must be \"user\" or \"assistant\", got {other:?}"),
                ));
            }
        };
        let created_at = check.timestamp("created_at", fields.created_at)?;
        let updated_at = check.timestamp("updated_at", fields.updated_at)?;
        let extras = Extras {
            // The role's own identity, as every message serializes it, is left to the role.
            identity: fields
                .identity
                .filter(|identity| identity != Identity::role_default(role)),
            attachments: fields.attachments,
            answer: fields.answer,
        };
        let message = Self {
            id: Arc::from(fields.id),
            role,
            content: fields.content,
            extras: (extras.identity.is_some()
                || !extras.attachments.is_empty()
                || extras.answer.is_some())
            .then(|| Arc::new(extras)),
            times: Times::new(created_at, updated_at),
        };
        message.validate()?;
        Ok(message)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::bytes::MediaReader;
    use crate::primitives::MediaKind;

    fn photo() -> Media {
        Media::user_attachment(
            MediaKind::Image,
            "image/png",
            "a.png",
            MediaReader::from_bytes(vec![1u8]),
        )
        .unwrap()
    }

    #[test]
    fn message_without_content_or_attachments_is_rejected() {
        let error = Message::new("m", Role::User, None, Vec::new()).unwrap_err();
        assert_eq!(error.field(), "content");
        assert_eq!(error.code(), "E_INVALID_INITIAL_MESSAGE_VALUE");
    }

    #[test]
    fn message_with_only_attachments_is_accepted() {
        let message = Message::new("m", Role::User, None, vec![photo()]).unwrap();
        assert_eq!(message.attachments().len(), 1);
    }

    #[test]
    fn message_with_empty_id_is_rejected() {
        assert_eq!(Message::user("", "hi").unwrap_err().field(), "id");
    }

    #[test]
    fn message_with_empty_text_is_rejected() {
        assert_eq!(Message::user("m", "").unwrap_err().field(), "content");
    }

    #[test]
    fn removing_content_from_a_message_without_attachments_is_rejected() {
        let message = Message::user("m", "hi").unwrap();
        assert_eq!(message.without_content().unwrap_err().field(), "content");
    }

    #[test]
    fn default_identity_is_the_role() {
        let message = Message::user("m", "hi").unwrap();
        assert_eq!(message.identity().identifier(), "user");
        assert_eq!(message.identity().representation().render(), "user");
    }

    #[test]
    fn system_role_is_rejected_on_deserialization() {
        let error = serde_json::from_value::<Message>(serde_json::json!({
            "id": "m", "role": "system", "content": "x",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap_err();
        assert!(error.to_string().contains("`role`"), "{error}");
    }

    #[test]
    fn a_link_round_trips_and_a_user_message_with_one_is_refused() {
        let linked = Message::assistant("m", "hi")
            .unwrap()
            .with_answer(AnswerLink::new("a", 2))
            .unwrap();
        let json = serde_json::to_value(&linked).unwrap();
        assert_eq!(
            json["answer"],
            serde_json::json!({"id": "a", "position": 2})
        );
        let back: Message = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.answer(), linked.answer());

        let mut user = json.clone();
        user["role"] = "user".into();
        let error = serde_json::from_value::<Message>(user).unwrap_err();
        assert!(error.to_string().contains("`answer`"), "{error}");
        let mut empty = json;
        empty["answer"]["id"] = "".into();
        assert!(serde_json::from_value::<Message>(empty).is_err());
        let unlinked = serde_json::to_value(Message::assistant("m", "hi").unwrap()).unwrap();
        assert!(unlinked.get("answer").is_none());
    }

    /// A message is moved and copied wherever the turn's records go (the turn's, the
    /// dispatch's, the adapter's): what most messages leave out is one shared box, not inline,
    /// and its two times are kept as their parts (24 bytes where two `Timestamp`s were 32).
    /// It was 184 bytes with its identity, attachments and answer link inline, then 88.
    #[test]
    fn a_message_stays_within_80_bytes() {
        let size = std::mem::size_of::<Message>();
        assert!(size <= 80, "a message is {size} bytes");
    }

    #[test]
    fn times_read_back_as_given_at_either_end_of_the_range() {
        for at in [
            Timestamp::MIN,
            Timestamp::MAX,
            Timestamp::UNIX_EPOCH,
            Timestamp::new(-1, -1).unwrap(),
        ] {
            let message = Message::user("m", "hi")
                .unwrap()
                .with_created_at(at)
                .with_updated_at(Timestamp::MAX);
            assert_eq!(message.created_at(), at);
            assert_eq!(message.updated_at(), Timestamp::MAX);
            let back: Message =
                serde_json::from_value(serde_json::to_value(&message).unwrap()).unwrap();
            assert_eq!((back.created_at(), back.updated_at()), (at, Timestamp::MAX));
        }
    }

    /// A new message is dated now, to the nanosecond, as `Timestamp::now` reads the clock.
    #[test]
    fn a_new_message_is_created_and_updated_now() {
        let before = Timestamp::now();
        let message = Message::assistant("m", "hi").unwrap();
        let after = Timestamp::now();
        assert!(before <= message.created_at() && message.created_at() <= after);
        assert_eq!(message.created_at(), message.updated_at());
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let at = timestamp_since(Some(since));
        assert_eq!(
            (at.as_second(), at.subsec_nanosecond()),
            (
                i64::try_from(since.as_secs()).unwrap(),
                i32::try_from(since.subsec_nanos()).unwrap()
            )
        );
    }

    #[test]
    fn a_message_without_extras_holds_none_and_reads_as_before() {
        let message = Message::user("m", "hi").unwrap();
        assert!(message.extras.is_none());
        let debug = format!("{message:?}");
        assert!(
            debug.starts_with(
                "Message { id: \"m\", role: User, content: Some(Static(\"hi\")), \
                 attachments: [], identity: Identity { identifier: \"user\", \
                 representation: Static(\"user\") }, answer: None, created_at: "
            ),
            "{debug}"
        );
        // The role's identity, given or read back, is left to the role.
        let given = message
            .clone()
            .with_identity(Identity::named("user").unwrap());
        assert!(given.extras.is_none());
        let back: Message = serde_json::from_value(serde_json::to_value(&given).unwrap()).unwrap();
        assert!(back.extras.is_none());
        assert_eq!(back.identity(), message.identity());
    }

    #[test]
    fn changing_a_clone_s_extras_leaves_the_original_as_it_was() {
        let original = Message::assistant("m", "hi")
            .unwrap()
            .with_identity(Identity::new("bot-1", "Bot").unwrap())
            .with_answer(AnswerLink::new("a", 0))
            .unwrap();
        let changed = original
            .clone()
            .with_attachment(photo())
            .with_identity(Identity::named("bot-2").unwrap())
            .with_answer(AnswerLink::new("b", 1))
            .unwrap();
        assert_eq!(original.identity().identifier(), "bot-1");
        assert_eq!(original.answer().map(AnswerLink::answer_id), Some("a"));
        assert!(original.attachments().is_empty());
        assert_eq!(changed.identity().identifier(), "bot-2");
        assert_eq!(changed.answer().map(AnswerLink::answer_id), Some("b"));
        assert_eq!(changed.attachments().len(), 1);
        // Back to the role's identity, over extras it still has.
        let reset = changed.with_identity(Identity::named("assistant").unwrap());
        assert_eq!(reset.identity().identifier(), "assistant");
        assert_eq!(reset.attachments().len(), 1);
        let json = serde_json::to_value(&reset).unwrap();
        assert_eq!(json["identity"]["identifier"], "assistant");
        assert_eq!(json["answer"]["id"], "b");
        assert_eq!(json["attachments"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn empty_attachments_are_omitted_when_serialized() {
        let json = serde_json::to_value(Message::user("m", "hi").unwrap()).unwrap();
        assert!(json.get("attachments").is_none());
    }
}

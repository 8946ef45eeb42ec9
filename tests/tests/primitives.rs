//! Primitives survive a trip through storage, and bad stored records are rejected on the way
//! back in with the offending field named.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::fmt::Debug;

use adk::bytes::{ByteStore, InMemorySpoolStore, MediaReader, SpoolReader};
use adk::primitives::{
    Identity, Media, MediaKind, MediaMetadata, MediaStashEntry, Memory, Message, Retrievable,
    RetrievableContent, Role, SpooledArtifact, StandingInstruction, Thought, Timestamp,
    Tokenizable, ToolCall, ToolCallResults, TrustTier,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn assert_storable<T: Clone + Debug + Send + Sync + Serialize + DeserializeOwned + 'static>() {}

#[test]
fn every_persisted_primitive_is_clone_debug_send_sync_and_serde() {
    assert_storable::<Message>();
    assert_storable::<Memory>();
    assert_storable::<Thought>();
    assert_storable::<ToolCall>();
    assert_storable::<ToolCallResults>();
    assert_storable::<Retrievable>();
    assert_storable::<StandingInstruction>();
    assert_storable::<Tokenizable>();
    assert_storable::<Identity>();
    assert_storable::<Media>();
    assert_storable::<SpooledArtifact>();
}

/// Serializes, deserializes and serializes again: both JSON forms must be identical.
fn round_trip<T: Serialize + DeserializeOwned>(value: &T) -> (T, Value) {
    let stored = serde_json::to_value(value).unwrap();
    let restored: T = serde_json::from_value(stored.clone()).unwrap();
    assert_eq!(serde_json::to_value(&restored).unwrap(), stored);
    (restored, stored)
}

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn photo() -> Media {
    Media::user_attachment(
        MediaKind::Image,
        "image/png",
        "cat.png",
        MediaReader::from_bytes(vec![137u8, 80, 78, 71]),
    )
    .unwrap()
    .with_source("upload")
    .with_stash_entry(
        "caption",
        MediaStashEntry {
            value: json!("a cat"),
            trust_tier: TrustTier::FirstParty,
            derived_from_media: None,
        },
    )
}

#[test]
fn message_round_trips_with_identity_timestamps_and_attachment_metadata() {
    let message = Message::user("m-1", "Look at this")
        .unwrap()
        .with_identity(Identity::new("user-42", "Alice").unwrap())
        .with_attachment(photo())
        .with_created_at(at("2026-03-01T10:00:00Z"))
        .with_updated_at(at("2026-03-01T10:00:05.5Z"));
    let (restored, stored) = round_trip(&message);
    assert_eq!(stored["created_at"], "2026-03-01T10:00:00Z");
    assert_eq!(restored.role(), Role::User);
    assert_eq!(restored.identity().identifier(), "user-42");
    assert_eq!(restored.updated_at(), message.updated_at());
    assert_eq!(
        restored.attachments()[0].id(),
        message.attachments()[0].id()
    );
    assert!(restored.attachments()[0].reader().is_detached());
}

#[test]
fn memory_round_trips() {
    let memory = Memory::new("mem-1", "Prefers tea", 0.75, 0.5).unwrap();
    let (restored, _) = round_trip(&memory);
    assert_eq!(restored.confidence(), 0.75);
    assert_eq!(restored.content().render(), "Prefers tea");
}

#[test]
fn thought_round_trips_with_payload() {
    let thought = Thought::from_payload("t-1", json!({"sig": "abc"}), "vendor/v1").unwrap();
    let (restored, stored) = round_trip(&thought);
    assert_eq!(stored["content"], "");
    assert_eq!(restored.payload(), Some(&json!({"sig": "abc"})));
    assert_eq!(restored.identity().identifier(), "assistant");
}

#[test]
fn tool_call_round_trips_pending_and_completed() {
    let pending = ToolCall::new("c-1", "weather", json!({"city": "Oslo"})).unwrap();
    let (restored, stored) = round_trip(&pending);
    assert!(stored.get("results").is_none());
    assert_eq!(restored.checksum(), pending.checksum());

    let artifact = SpooledArtifact::new(SpoolReader::from_bytes("out-1", "long\noutput"));
    let completed = pending.complete(ToolCallResults::Artifacts(vec![artifact]));
    let (restored, stored) = round_trip(&completed);
    assert_eq!(stored["results"]["type"], "artifacts");
    assert!(restored.is_complete());
    assert!(
        matches!(restored.results(), Some(ToolCallResults::Artifacts(list)) if list.len() == 1)
    );
}

#[test]
fn tool_call_results_of_every_shape_round_trip() {
    let shapes = [
        ToolCallResults::from("text"),
        ToolCallResults::Artifact(SpooledArtifact::new(SpoolReader::from_bytes("a", "x"))),
        ToolCallResults::Media(photo()),
        ToolCallResults::MediaList(vec![photo(), photo()]),
    ];
    for results in shapes {
        round_trip(&results);
    }
}

#[tokio::test]
async fn retrievable_with_spooled_content_round_trips_as_a_handle_and_reattaches() {
    let store = InMemorySpoolStore::new();
    let reader = store
        .write("doc-1", "chunk one\nchunk two".into())
        .await
        .unwrap();
    let artifact = SpooledArtifact::new(reader).with_size_hints(19, 2);
    let retrievable = Retrievable::new("r-1", artifact, TrustTier::ThirdPartyPublic)
        .unwrap()
        .with_source("https://example.org")
        .with_score(0.5)
        .unwrap();
    let (restored, stored) = round_trip(&retrievable);
    assert_eq!(
        stored["content"],
        json!({"id": "doc-1", "reader": {"store": "in-memory", "id": "doc-1"},
               "byte_length": 19, "line_count": 2})
    );
    let RetrievableContent::Artifact(handle) = restored.content().clone() else {
        panic!("spooled content should come back as an artifact");
    };
    let id = handle.handle().reader.unwrap().id().to_owned();
    let reattached = handle.attach(store.read(&id).await.unwrap().unwrap());
    assert_eq!(reattached.tail(1).await.unwrap(), ["chunk two"]);
}

#[test]
fn retrievable_with_text_round_trips() {
    let retrievable = Retrievable::new("r-2", "plain", TrustTier::FirstParty)
        .unwrap()
        .with_kind("faq")
        .with_inline(true);
    let (restored, _) = round_trip(&retrievable);
    assert!(restored.inline());
    assert_eq!(restored.kind(), Some("faq"));
}

#[test]
fn standing_instructions_round_trip_as_text() {
    let (restored, stored) = round_trip(&StandingInstruction::from("Be brief."));
    assert_eq!(stored, json!("Be brief."));
    assert_eq!(restored, StandingInstruction::from("Be brief."));
    let dynamic = StandingInstruction::from(Tokenizable::dynamic(|| "Now.".to_owned()));
    assert_eq!(serde_json::to_value(&dynamic).unwrap(), json!("Now."));
}

#[test]
fn media_serializes_metadata_only() {
    let media = photo();
    let stored = serde_json::to_value(&media).unwrap();
    let keys: Vec<&str> = stored
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "kind",
            "mime_type",
            "filename",
            "source",
            "trust_tier",
            "modality_hazard",
            "stash"
        ]
    );
    assert_eq!(stored["trust_tier"], "third-party-private");
    assert_eq!(stored["modality_hazard"], "opaque-perceptual");
}

#[tokio::test]
async fn media_is_rebuilt_from_metadata_and_a_reader() {
    let media = photo();
    let metadata: MediaMetadata =
        serde_json::from_value(serde_json::to_value(&media).unwrap()).unwrap();
    let rebuilt =
        Media::from_metadata(metadata, MediaReader::from_bytes(vec![137u8, 80, 78, 71])).unwrap();
    assert_eq!(rebuilt.id(), media.id());
    assert_eq!(&rebuilt.as_bytes().await.unwrap()[..], &[137, 80, 78, 71]);

    let detached: Media = serde_json::from_value(serde_json::to_value(&media).unwrap()).unwrap();
    let error = detached.as_bytes().await.unwrap_err();
    assert!(error.to_string().contains(media.id()), "{error}");
}

/// Deserializes `record` as `T` and returns the error text, which must name `field`.
fn rejected<T: DeserializeOwned + Debug>(record: Value, field: &str) {
    let error = serde_json::from_value::<T>(record).unwrap_err().to_string();
    assert!(
        error.contains(field),
        "error should name `{field}`: {error}"
    );
}

const CREATED: &str = "2026-01-01T00:00:00Z";

#[test]
fn bad_stored_messages_are_rejected_naming_the_field() {
    rejected::<Message>(
        json!({"id": "m", "role": "system", "content": "x", "created_at": CREATED, "updated_at": CREATED}),
        "`role`",
    );
    rejected::<Message>(
        json!({"id": "", "role": "user", "content": "x", "created_at": CREATED, "updated_at": CREATED}),
        "`id`",
    );
    rejected::<Message>(
        json!({"id": "m", "role": "user", "attachments": [], "created_at": CREATED, "updated_at": CREATED}),
        "`content`",
    );
    rejected::<Message>(
        json!({"id": "m", "role": "user", "content": "x", "created_at": "yesterday", "updated_at": CREATED}),
        "created_at",
    );
    rejected::<Message>(
        json!({"id": "m", "role": "user", "content": "x", "updated_at": CREATED}),
        "created_at",
    );
}

#[test]
fn bad_stored_memories_thoughts_and_tool_calls_are_rejected_naming_the_field() {
    rejected::<Memory>(
        json!({"id": "m", "content": "x", "confidence": 2.0, "importance": 0.1, "created_at": CREATED, "updated_at": CREATED}),
        "`confidence`",
    );
    rejected::<Thought>(
        json!({"id": "t", "payload": {"x": 1}, "created_at": CREATED, "updated_at": CREATED}),
        "`replay_compatibility`",
    );
    rejected::<ToolCall>(
        json!({"id": "c", "tool": "", "args": {}, "checksum": "x", "is_complete": false, "is_error": false,
               "created_at": CREATED, "updated_at": CREATED}),
        "`tool`",
    );
    rejected::<ToolCall>(
        json!({"id": "c", "tool": "t", "args": [1], "checksum": "x", "is_complete": false, "is_error": false,
               "created_at": CREATED, "updated_at": CREATED}),
        "`args`",
    );
    rejected::<ToolCall>(
        json!({"id": "c", "tool": "t", "args": {}, "checksum": "x", "is_complete": true, "is_error": false,
               "results": {"type": "media_list", "value": []},
               "created_at": CREATED, "updated_at": CREATED}),
        "`results`",
    );
}

#[test]
fn bad_stored_retrievables_and_media_are_rejected_naming_the_field() {
    rejected::<Retrievable>(
        json!({"id": "r", "content": "x", "trust_tier": "first-party", "score": -1.0,
               "created_at": CREATED, "updated_at": CREATED}),
        "`score`",
    );
    rejected::<Retrievable>(
        json!({"id": "r", "content": "", "trust_tier": "first-party", "created_at": CREATED, "updated_at": CREATED}),
        "`content`",
    );
    rejected::<Media>(
        json!({"id": "p", "kind": "image", "mime_type": "png", "filename": "a.png",
               "trust_tier": "first-party", "modality_hazard": "inert"}),
        "`mime_type`",
    );
    rejected::<Media>(
        json!({"id": "p", "kind": "image", "mime_type": "image/png", "filename": "",
               "trust_tier": "first-party", "modality_hazard": "inert"}),
        "`filename`",
    );
    rejected::<Identity>(
        json!({"identifier": "", "representation": "x"}),
        "`identifier`",
    );
}

#[test]
fn tool_call_arguments_stored_as_a_json_string_are_accepted() {
    let call: ToolCall = serde_json::from_value(json!({
        "id": "c", "tool": "t", "args": "{\"q\": \"rust\"}", "checksum": "abc",
        "is_complete": false, "is_error": false, "created_at": CREATED, "updated_at": CREATED
    }))
    .unwrap();
    assert_eq!(call.args()["q"], "rust");
}

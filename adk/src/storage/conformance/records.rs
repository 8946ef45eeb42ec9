//! The record primitives' part of the suite: each kind's samples, and the checks every persisted
//! kind goes through (round trip, duplicates, missing ids, partitions) or, when not persisted,
//! the calls it must accept.

use std::future::Future;

use serde::Serialize;

use super::Run;
use super::report::{ConformanceFailure, Partition, Step, Subject};
use crate::primitives::{
    AnswerLink, Memory, Message, Retrievable, StandingInstruction, Thought, Timestamp, ToolCall,
    TrustTier,
};
use crate::storage::{Primitive, StorageAdapter, StorageContext, StorageError};

// One record kind as the suite sees it: how to make distinct samples, how to recognise them, and
// which adapter callbacks to use.
pub(super) trait Persisted: Clone + Serialize + Send + Sized + 'static {
    const KIND: Primitive;

    /// A sample whose key starts with `key`; `revision` 1 is the mutated form of revision 0.
    fn sample(key: &str, revision: u32) -> Result<Self, String>;

    /// The id, or for standing instructions the text, that identifies the record.
    fn key(&self) -> String;

    fn fetch<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Self>, StorageError>> + Send;

    fn store<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    fn mutate<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    fn delete<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;
}

// Forwards one primitive's callbacks and makes its samples. `$revision` 1 changes the content.
macro_rules! persisted {
    ($record:ty, $kind:expr, $fetch:ident, $store:ident, $mutate:ident, $delete:ident,
     |$key:ident, $revision:ident| $sample:expr) => {
        impl Persisted for $record {
            const KIND: Primitive = $kind;

            fn sample($key: &str, $revision: u32) -> Result<Self, String> {
                $sample
                    .map(|record| {
                        record
                            .with_created_at(SAMPLE_CREATED_AT)
                            .with_updated_at(sample_updated_at($revision))
                    })
                    .map_err(|error| error.to_string())
            }

            fn key(&self) -> String {
                self.id().to_owned()
            }

            fn fetch<A: StorageAdapter>(
                adapter: &A,
                ctx: &StorageContext,
            ) -> impl Future<Output = Result<Vec<Self>, StorageError>> + Send {
                adapter.$fetch(ctx)
            }

            fn store<A: StorageAdapter>(
                adapter: &A,
                ctx: &StorageContext,
                record: Self,
            ) -> impl Future<Output = Result<(), StorageError>> + Send {
                adapter.$store(ctx, record)
            }

            fn mutate<A: StorageAdapter>(
                adapter: &A,
                ctx: &StorageContext,
                record: Self,
            ) -> impl Future<Output = Result<(), StorageError>> + Send {
                adapter.$mutate(ctx, record)
            }

            fn delete<A: StorageAdapter>(
                adapter: &A,
                ctx: &StorageContext,
                record: Self,
            ) -> impl Future<Output = Result<(), StorageError>> + Send {
                adapter.$delete(ctx, record.id().to_owned())
            }
        }
    };
}

persisted!(
    Memory,
    Primitive::Memories,
    fetch_memories,
    store_memory,
    mutate_memory,
    delete_memory,
    |key, revision| Memory::new(
        key,
        format!("the user prefers metric units (revision {revision})"),
        0.5,
        if revision == 0 { 0.25 } else { 0.75 },
    )
);
persisted!(
    Message,
    Primitive::Messages,
    fetch_messages,
    store_message,
    mutate_message,
    delete_message,
    |key, revision| Message::assistant(
        key,
        format!("Let me look at the forecast. (revision {revision})"),
    )
    .and_then(|message| message.with_answer(sample_link(key, revision)))
);
persisted!(
    Thought,
    Primitive::Thoughts,
    fetch_thoughts,
    store_thought,
    mutate_thought,
    delete_thought,
    |key, revision| Thought::new(
        key,
        format!("the user asked about weather; check the forecast tool (revision {revision})"),
    )
    .and_then(|thought| thought.with_answer(sample_link(key, revision)))
);
persisted!(
    ToolCall,
    Primitive::ToolCalls,
    fetch_tool_calls,
    store_tool_call,
    mutate_tool_call,
    delete_tool_call,
    |key, revision| tool_call_sample(key, revision)
);
persisted!(
    Retrievable,
    Primitive::Retrievables,
    fetch_retrievables,
    store_retrievable,
    mutate_retrievable,
    delete_retrievable,
    |key, revision| Retrievable::new(
        key,
        format!("Rain is expected in the afternoon. (revision {revision})"),
        TrustTier::FirstParty,
    )
);

// Standing instructions are identified by value: the key is the text, and the mutated form is
// the same value (mutating must not add a second copy).
impl Persisted for StandingInstruction {
    const KIND: Primitive = Primitive::StandingInstructions;

    fn sample(key: &str, _revision: u32) -> Result<Self, String> {
        StandingInstruction::new(format!("{key}: answer in one short paragraph"))
            .map_err(|error| error.to_string())
    }

    fn key(&self) -> String {
        self.render()
    }

    fn fetch<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Self>, StorageError>> + Send {
        adapter.refresh_standing_instructions(ctx)
    }

    fn store<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        adapter.store_standing_instruction(ctx, record)
    }

    fn mutate<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        adapter.mutate_standing_instruction(ctx, record)
    }

    fn delete<A: StorageAdapter>(
        adapter: &A,
        ctx: &StorageContext,
        record: Self,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        adapter.delete_standing_instruction(ctx, record)
    }
}

impl<Adapter: StorageAdapter> Run<'_, Adapter> {
    pub(super) async fn primitive<Record: Persisted>(
        &mut self,
        persisted: bool,
    ) -> Result<(), ConformanceFailure> {
        if persisted {
            self.round_trip::<Record>().await
        } else {
            self.accepts_calls::<Record>().await
        }
    }

    pub(super) fn sample<Record: Persisted>(
        &self,
        number: u32,
        revision: u32,
    ) -> Result<Record, ConformanceFailure> {
        let key = format!(
            "{}-{}-{number}",
            self.prefix,
            Record::KIND.singular().replace(' ', "-")
        );
        Record::sample(&key, revision).map_err(|reason| ConformanceFailure {
            subject: Subject::Primitive(Record::KIND),
            step: Step::Store,
            expected: format!("a valid sample {} to store", Record::KIND.singular()),
            found: format!("the sample was rejected: {reason}"),
            error: None,
        })
    }

    pub(super) async fn round_trip<Record: Persisted>(&mut self) -> Result<(), ConformanceFailure> {
        let subject = Subject::Primitive(Record::KIND);
        let first: Record = self.sample(1, 0)?;
        let second: Record = self.sample(2, 0)?;
        let third: Record = self.sample(3, 0)?;

        for record in [&first, &second, &third] {
            let outcome = Record::store(self.adapter, self.ctx, record.clone()).await;
            self.call_succeeded(subject, Step::Store, "store", &record.key(), outcome)?;
        }
        self.expect_fetched(
            Step::FetchAfterStore,
            &[first.clone(), second.clone(), third.clone()],
        )
        .await?;
        let stored = [first.clone(), second.clone(), third.clone()];
        self.refuses_a_duplicate(&stored).await?;
        self.refuses_missing_ids::<Record>(&stored).await?;
        for (partition, other) in self.others {
            self.keeps_partitions_apart(*partition, other, &stored)
                .await?;
        }

        let revised: Record = self.sample(2, 1)?;
        let outcome = Record::mutate(self.adapter, self.ctx, revised.clone()).await;
        self.call_succeeded(subject, Step::Mutate, "mutate", &revised.key(), outcome)?;
        self.expect_fetched(
            Step::FetchAfterMutate,
            &[first.clone(), revised.clone(), third.clone()],
        )
        .await?;

        let outcome = Record::delete(self.adapter, self.ctx, revised.clone()).await;
        self.call_succeeded(subject, Step::Delete, "delete", &revised.key(), outcome)?;
        self.expect_fetched(Step::FetchAfterDelete, &[first.clone(), third.clone()])
            .await?;

        for record in [first, third] {
            let key = record.key();
            let outcome = Record::delete(self.adapter, self.ctx, record).await;
            self.call_succeeded(subject, Step::Delete, "delete", &key, outcome)?;
        }
        self.expect_fetched::<Record>(Step::FetchAfterDelete, &[])
            .await
    }

    // A second store of `stored[0]`'s id (with revised content) is a Conflict and changes
    // nothing. A standing instruction is its own key, so storing it again may also succeed —
    // as long as it is still kept once.
    pub(super) async fn refuses_a_duplicate<Record: Persisted>(
        &mut self,
        stored: &[Record],
    ) -> Result<(), ConformanceFailure> {
        let step = Step::DuplicateStore;
        let again: Record = self.sample(1, 1)?;
        let outcome = Record::store(self.adapter, self.ctx, again.clone()).await;
        let idempotent = Record::KIND == Primitive::StandingInstructions;
        match outcome {
            Err(StorageError::Conflict { kind, ref id })
                if kind == Record::KIND && *id == again.key() => {}
            Ok(()) if idempotent => {}
            other => {
                return Err(self.wrong_outcome::<Record>(
                    step,
                    format!(
                        "the second store of `{}` to fail with StorageError::Conflict {{ kind: \
                         {:?}, id: \"{}\" }}",
                        again.key(),
                        Record::KIND,
                        again.key()
                    ),
                    other,
                ));
            }
        }
        self.checks_passed += 1;
        self.expect_fetched_in(self.ctx, step, stored).await
    }

    // A mutate of an id never stored is NotFound; a delete of one succeeds or is NotFound; and
    // neither changes the stored records.
    pub(super) async fn refuses_missing_ids<Record: Persisted>(
        &mut self,
        stored: &[Record],
    ) -> Result<(), ConformanceFailure> {
        let missing: Record = self.sample(9, 0)?;
        let outcome = Record::mutate(self.adapter, self.ctx, missing.clone()).await;
        self.expect_not_found::<Record>(Step::MutateMissing, "mutate", &missing.key(), outcome)?;
        self.expect_fetched_in(self.ctx, Step::MutateMissing, stored)
            .await?;
        let outcome = Record::delete(self.adapter, self.ctx, missing.clone()).await;
        self.expect_deleted_or_not_found::<Record>(Step::DeleteMissing, &missing.key(), outcome)?;
        self.expect_fetched_in(self.ctx, Step::DeleteMissing, stored)
            .await
    }

    // `stored` is what the first partition holds. `other` sees none of it, cannot change it,
    // and may store under the same id as a record of its own.
    pub(super) async fn keeps_partitions_apart<Record: Persisted>(
        &mut self,
        partition: Partition,
        other: &StorageContext,
        stored: &[Record],
    ) -> Result<(), ConformanceFailure> {
        self.expect_fetched_in::<Record>(other, Step::FetchFromOther(partition), &[])
            .await?;

        let step = Step::ChangeFromOther(partition);
        let revised: Record = self.sample(2, 1)?;
        let outcome = Record::mutate(self.adapter, other, revised.clone()).await;
        self.expect_not_found::<Record>(step, "mutate", &revised.key(), outcome)?;
        let target = stored[2].clone();
        let key = target.key();
        let outcome = Record::delete(self.adapter, other, target).await;
        self.expect_deleted_or_not_found::<Record>(step, &key, outcome)?;
        self.expect_fetched_in(self.ctx, step, stored).await?;

        let step = Step::StoreInOther(partition);
        let theirs: Record = self.sample(1, 1)?;
        let outcome = Record::store(self.adapter, other, theirs.clone()).await;
        self.call_succeeded(
            Subject::Primitive(Record::KIND),
            step,
            "store",
            &theirs.key(),
            outcome,
        )?;
        self.expect_fetched_in(other, step, std::slice::from_ref(&theirs))
            .await?;
        self.expect_fetched_in(self.ctx, step, stored).await?;
        let key = theirs.key();
        let outcome = Record::delete(self.adapter, other, theirs).await;
        self.call_succeeded(
            Subject::Primitive(Record::KIND),
            step,
            "delete",
            &key,
            outcome,
        )?;
        self.expect_fetched_in(self.ctx, step, stored).await
    }

    pub(super) fn expect_not_found<Record: Persisted>(
        &mut self,
        step: Step,
        operation: &str,
        key: &str,
        outcome: Result<(), StorageError>,
    ) -> Result<(), ConformanceFailure> {
        match outcome {
            Err(StorageError::NotFound { kind, ref id }) if kind == Record::KIND && id == key => {
                self.checks_passed += 1;
                Ok(())
            }
            other => Err(self.wrong_outcome::<Record>(
                step,
                format!(
                    "the {operation} of `{key}` to fail with StorageError::NotFound {{ kind: \
                     {:?}, id: \"{key}\" }}",
                    Record::KIND
                ),
                other,
            )),
        }
    }

    pub(super) fn expect_deleted_or_not_found<Record: Persisted>(
        &mut self,
        step: Step,
        key: &str,
        outcome: Result<(), StorageError>,
    ) -> Result<(), ConformanceFailure> {
        match outcome {
            Ok(()) => {}
            Err(StorageError::NotFound { kind, ref id }) if kind == Record::KIND && id == key => {}
            other => {
                return Err(self.wrong_outcome::<Record>(
                    step,
                    format!("the delete of `{key}` to succeed or fail with StorageError::NotFound"),
                    other,
                ));
            }
        }
        self.checks_passed += 1;
        Ok(())
    }

    pub(super) fn wrong_outcome<Record: Persisted>(
        &self,
        step: Step,
        expected: String,
        outcome: Result<(), StorageError>,
    ) -> ConformanceFailure {
        let (found, error) = match outcome {
            Ok(()) => ("success".to_owned(), None),
            Err(error) => (format!("{error:?}"), Some(error)),
        };
        ConformanceFailure {
            subject: Subject::Primitive(Record::KIND),
            step,
            expected,
            found,
            error,
        }
    }

    pub(super) async fn accepts_calls<Record: Persisted>(
        &mut self,
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::Primitive(Record::KIND);
        let record: Record = self.sample(1, 0)?;
        let revised: Record = self.sample(1, 1)?;
        let key = record.key();
        let outcome = Record::store(self.adapter, self.ctx, record).await;
        self.call_succeeded(subject, Step::Store, "store", &key, outcome)?;
        let outcome = Record::fetch(self.adapter, self.ctx).await.map(drop);
        self.call_succeeded(subject, Step::Fetch, "fetch", "", outcome)?;
        let outcome = Record::mutate(self.adapter, self.ctx, revised.clone()).await;
        self.call_succeeded(subject, Step::Mutate, "mutate", &key, outcome)?;
        let outcome = Record::delete(self.adapter, self.ctx, revised).await;
        self.call_succeeded(subject, Step::Delete, "delete", &key, outcome)
    }

    pub(super) fn call_succeeded(
        &mut self,
        subject: Subject,
        step: Step,
        operation: &str,
        key: &str,
        outcome: Result<(), StorageError>,
    ) -> Result<(), ConformanceFailure> {
        match outcome {
            Ok(()) => {
                self.checks_passed += 1;
                Ok(())
            }
            Err(error) => Err(ConformanceFailure {
                subject,
                step,
                expected: if key.is_empty() {
                    format!("the {operation} to succeed")
                } else {
                    format!("the {operation} of `{key}` to succeed")
                },
                found: format!("the error \"{error}\""),
                error: Some(error),
            }),
        }
    }

    // Fetches, keeps only this run's records, and compares them with `expected`: same keys in
    // the same order first, then the same content record by record.
    pub(super) async fn expect_fetched<Record: Persisted>(
        &mut self,
        step: Step,
        expected: &[Record],
    ) -> Result<(), ConformanceFailure> {
        self.expect_fetched_in(self.ctx, step, expected).await
    }

    pub(super) async fn expect_fetched_in<Record: Persisted>(
        &mut self,
        ctx: &StorageContext,
        step: Step,
        expected: &[Record],
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::Primitive(Record::KIND);
        let fetched = match Record::fetch(self.adapter, ctx).await {
            Ok(fetched) => fetched,
            Err(error) => {
                return Err(ConformanceFailure {
                    subject,
                    step,
                    expected: "the fetch to succeed".into(),
                    found: format!("the error \"{error}\""),
                    error: Some(error),
                });
            }
        };
        let ours: Vec<Record> = fetched
            .into_iter()
            .filter(|record| record.key().starts_with(&self.prefix))
            .collect();
        let failure = |expected: String, found: String| ConformanceFailure {
            subject,
            step,
            expected,
            found,
            error: None,
        };
        let expected_keys: Vec<String> = expected.iter().map(Persisted::key).collect();
        let found_keys: Vec<String> = ours.iter().map(Persisted::key).collect();
        if expected_keys != found_keys {
            return Err(failure(
                format!("{} {}", key_noun::<Record>(), list(&expected_keys)),
                format!("{} {}", key_noun::<Record>(), list(&found_keys)),
            ));
        }
        for (position, (wanted, got)) in expected.iter().zip(&ours).enumerate() {
            let wanted_json = to_json(wanted);
            let got_json = to_json(got);
            if wanted_json != got_json {
                return Err(failure(
                    format!(
                        "`{}` at position {position} to be {wanted_json}",
                        wanted.key()
                    ),
                    got_json.to_string(),
                ));
            }
        }
        self.checks_passed += 1;
        Ok(())
    }

    pub(super) async fn tools(&mut self) -> Result<(), ConformanceFailure> {
        let outcome = self.adapter.fetch_tools(self.ctx).await.map(drop);
        self.call_succeeded(Subject::Tools, Step::Fetch, "fetch", "", outcome)
    }
}

pub(super) fn key_noun<Record: Persisted>() -> &'static str {
    if Record::KIND == Primitive::StandingInstructions {
        "instructions"
    } else {
        "ids"
    }
}

pub(super) fn list(keys: &[String]) -> String {
    format!("[{}]", keys.join(", "))
}

pub(super) fn to_json(record: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(record)
        .unwrap_or_else(|error| serde_json::Value::String(format!("<not serializable: {error}>")))
}

// A pending call to a forecast tool; its mutated form is the same call completed with results,
// which is how an executor records what a tool returned.
pub(super) fn tool_call_sample(
    key: &str,
    revision: u32,
) -> Result<ToolCall, crate::primitives::PrimitiveError> {
    let pending = ToolCall::new(key, "forecast", serde_json::json!({ "city": "Lisbon" }))?
        .with_answer(sample_link(key, 0))?;
    Ok(if revision == 0 {
        pending
    } else {
        pending
            .complete("Sunny, 24 °C")
            .with_completed_at(Some(sample_updated_at(revision)))
    })
}

// The answer link of a message, thought or tool call sample: part of the stored record, so a
// storage that drops it (or keeps the first revision's on a mutate) fails the round trip.
pub(super) fn sample_link(key: &str, revision: u32) -> AnswerLink {
    AnswerLink::new(format!("{key}-answer"), revision)
}

// Sample times are fixed whole seconds, so an adapter over a database that keeps timestamps to
// the microsecond (or the second) hands back exactly what it was given.
pub(super) const SAMPLE_CREATED_AT: Timestamp = Timestamp::constant(1_767_225_600, 0);

pub(super) fn sample_updated_at(revision: u32) -> Timestamp {
    Timestamp::constant(1_767_225_600 + 60 * i64::from(revision), 0)
}

//! Durability: a turn's writes survive a reopen and a SIGKILL mid-stream, and 200 concurrent
//! turns lose no write.

use super::*;

fn storing_runner(storage: SqliteStorage) -> TurnRunner {
    TurnRunner::builder()
        .storage(storage)
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                let turn: u64 = ctx.stash.get("test.turn")?.ok_or("no turn number")?;
                ctx.store_message(Message::user(format!("{turn}-question"), "why?")?)
                    .await?;
                tokio::task::yield_now().await;
                ctx.store_message(Message::assistant(format!("{turn}-answer"), "because")?)
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

fn turn(conversation: &str, number: u64) -> RawTurnContext {
    RawTurnContext::new(conversation, "You are a test.")
        .stash(serde_json::json!({ "test": { "turn": number } }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_writes_survive_reopening_the_file() {
    let (folder, storage) = open_fresh().await;
    let outcome = storing_runner(storage).run(turn("kept", 7)).await.unwrap();
    assert!(outcome.is_completed());
    drop(outcome);

    let reopened = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    let ctx = StorageContext::new("kept");
    assert_eq!(
        message_ids(&reopened.fetch_messages(&ctx).await.unwrap()),
        ["7-question", "7-answer"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_stream_leaves_a_sound_database_with_every_acknowledged_write() {
    let folder = tempfile::tempdir().unwrap();
    let database = folder.path().join("crash.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sqlite_turns"))
        .arg(&database)
        .arg("crashing")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acknowledged = Vec::new();
    while acknowledged.len() < 200 {
        match lines.next() {
            Some(line) => acknowledged.push(line.unwrap()),
            None => panic!("the child stopped early after {acknowledged:?}"),
        }
    }
    // SIGKILL on Unix: no destructor, no flush, no checkpoint runs in the child.
    child.kill().unwrap();
    child.wait().unwrap();
    // Lines already in the pipe were printed after their writes were acknowledged too.
    acknowledged.extend(lines.map_while(Result::ok));

    let storage = SqliteStorage::open(&database).await.unwrap();
    assert_eq!(storage.integrity_check().await.unwrap(), "ok");
    let stored: HashSet<String> = message_ids(
        &storage
            .fetch_messages(&StorageContext::new("crashing"))
            .await
            .unwrap(),
    )
    .into_iter()
    .collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|id| !stored.contains(*id))
        .collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_turns_lose_no_write_and_keep_each_turns_order() {
    const TURNS: u64 = 200;
    const CONVERSATIONS: u64 = 4;
    let (_folder, storage) = open_fresh().await;
    let runner = storing_runner(storage.clone());
    let tasks: Vec<_> = (0..TURNS)
        .map(|number| {
            let runner = runner.clone();
            tokio::spawn(async move {
                let conversation = format!("busy-{}", number % CONVERSATIONS);
                runner.run(turn(&conversation, number)).await
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap().unwrap().is_completed());
    }

    for conversation in 0..CONVERSATIONS {
        let ctx = StorageContext::new(format!("busy-{conversation}"));
        let ids = message_ids(&storage.fetch_messages(&ctx).await.unwrap());
        let turns: Vec<u64> = (0..TURNS)
            .filter(|number| number % CONVERSATIONS == conversation)
            .collect();
        assert_eq!(ids.len(), turns.len() * 2, "conversation {conversation}");
        for number in turns {
            let question = ids
                .iter()
                .position(|id| *id == format!("{number}-question"));
            let answer = ids.iter().position(|id| *id == format!("{number}-answer"));
            match (question, answer) {
                (Some(question), Some(answer)) => assert!(
                    question < answer,
                    "turn {number}: the answer was fetched before the question"
                ),
                _ => panic!("turn {number} lost a message: {ids:?}"),
            }
        }
    }
}

//! Several processes: four worker processes sharing conversations on one database, one of them
//! killed mid-turn, lose and duplicate nothing.

use super::*;

/// What one worker process printed: its acknowledged writes, its refused contested stores, and
/// the turns whose state commit landed or was refused as stale.
#[derive(Default)]
struct WorkerReport {
    acknowledged: Vec<String>,
    refused: Vec<String>,
    state_committed: Vec<u64>,
    state_refused: Vec<u64>,
}

fn read_report(lines: impl Iterator<Item = String>, report: &mut WorkerReport) {
    for line in lines {
        if let Some(id) = line.strip_prefix("ack ") {
            report.acknowledged.push(id.to_owned());
        } else if let Some(id) = line.strip_prefix("refused ") {
            report.refused.push(id.to_owned());
        } else if let Some(turn) = line.strip_prefix("state-ack ") {
            report.state_committed.push(turn.parse().unwrap());
        } else if let Some(turn) = line.strip_prefix("state-stale ") {
            report.state_refused.push(turn.parse().unwrap());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_sharing_conversations_with_one_killed_mid_turn_lose_and_duplicate_nothing()
{
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    const WORKERS: u64 = 4;
    const TURNS: u64 = 120;
    const CONVERSATIONS: u64 = 3;
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("processes");
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();

    let mut children: Vec<_> = (0..WORKERS)
        .map(|worker| {
            Command::new(env!("CARGO_BIN_EXE_postgres_turns"))
                .args([
                    url.clone(),
                    schema.clone(),
                    worker.to_string(),
                    TURNS.to_string(),
                    CONVERSATIONS.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut reports: Vec<WorkerReport> = (0..WORKERS).map(|_| WorkerReport::default()).collect();

    // Worker 0 is killed (SIGKILL) right after it wrote the first half of a turn, once it has
    // some acknowledged turns behind it.
    let mut victim_lines = BufReader::new(children[0].stdout.take().unwrap()).lines();
    let mut killed_mid_turn = None;
    for line in victim_lines.by_ref() {
        let line = line.unwrap();
        if let Some(turn) = line.strip_prefix("mid ")
            && reports[0].acknowledged.len() >= 40
        {
            children[0].kill().unwrap();
            killed_mid_turn = Some(turn.to_owned());
            break;
        }
        read_report(std::iter::once(line), &mut reports[0]);
    }
    let killed_mid_turn = killed_mid_turn.expect("worker 0 ended before it could be killed");
    children[0].wait().unwrap();
    // Lines already in the pipe were printed after their turn completed, so they count too.
    read_report(victim_lines.map_while(Result::ok), &mut reports[0]);

    for (worker, child) in children.iter_mut().enumerate().skip(1) {
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        read_report(lines.map_while(Result::ok), &mut reports[worker]);
        let status = child.wait().unwrap();
        assert!(status.success(), "worker {worker} failed: {status}");
        assert_eq!(
            reports[worker].acknowledged.len() + reports[worker].refused.len(),
            (TURNS * 2) as usize,
            "worker {worker} did not account for every write of every turn"
        );
        assert_eq!(
            reports[worker].state_committed.len() + reports[worker].state_refused.len(),
            TURNS as usize,
            "worker {worker} did not account for every turn's state commit"
        );
    }

    let storage = PostgresStorage::connect_with(options).await.unwrap();
    let mut copies: HashMap<String, usize> = HashMap::new();
    for conversation in 0..CONVERSATIONS {
        let ctx = StorageContext::new(format!("shared-{conversation}"));
        for id in message_ids(&storage.fetch_messages(&ctx).await.unwrap()) {
            *copies.entry(id).or_default() += 1;
        }
    }

    // Every acknowledged write is there, exactly once.
    for (worker, report) in reports.iter().enumerate() {
        for id in &report.acknowledged {
            assert_eq!(
                copies.get(id),
                Some(&1),
                "worker {worker} acknowledged `{id}`"
            );
        }
    }
    // Nothing is stored twice, and each contested message was stored by at most one worker:
    // every other attempt was refused, and the refusal reported.
    assert!(copies.values().all(|count| *count == 1), "{copies:?}");
    for turn in 0..TURNS {
        let id = format!("contested-{turn}");
        let acknowledged = reports
            .iter()
            .filter(|report| report.acknowledged.contains(&id))
            .count();
        let refused = reports
            .iter()
            .filter(|report| report.refused.contains(&id))
            .count();
        assert!(
            acknowledged <= 1,
            "`{id}` acknowledged by {acknowledged} workers"
        );
        // The three surviving workers all got to turn `turn` and reported on it.
        assert!(
            acknowledged + refused >= 3,
            "`{id}`: a store went unreported"
        );
        if copies.contains_key(&id) && acknowledged == 0 {
            // Only the killed worker can have stored it without saying so.
            assert_eq!(id, format!("contested-{killed_mid_turn}"));
        }
    }
    // The killed turn wrote its first half; that write was never acknowledged.
    let half = format!("w0-{killed_mid_turn}");
    assert_eq!(copies.get(&half), Some(&1));
    assert!(!reports[0].acknowledged.contains(&half));

    // No state update was lost silently: the shared counter counts exactly the commits that
    // were acknowledged, and each worker's own counter in each conversation exactly its
    // acknowledged commits there. A refused commit applied nothing, not even its uncontested
    // key; and refusals happened, so the check was not won by luck.
    let sessions = storage.session_store().await.unwrap();
    let committed: usize = reports
        .iter()
        .map(|report| report.state_committed.len())
        .sum();
    let refused: usize = reports
        .iter()
        .map(|report| report.state_refused.len())
        .sum();
    let user = sessions
        .user_state(&Default::default(), &Default::default())
        .await
        .unwrap();
    assert_eq!(
        user.get("turns"),
        Some(&serde_json::json!(committed)),
        "{committed} commits acknowledged, {refused} refused"
    );
    assert!(
        refused > 0,
        "no commit was ever stale: the workers did not contend"
    );
    for conversation in 0..CONVERSATIONS {
        let key = SessionKey::new("default", "default", format!("shared-{conversation}"));
        let state = sessions.get_session(&key).await.unwrap().unwrap().state;
        for (worker, report) in reports.iter().enumerate() {
            let landed = report
                .state_committed
                .iter()
                .filter(|turn| **turn % CONVERSATIONS == conversation)
                .count();
            let stored = state
                .get(&format!("w{worker}_turns"))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            assert_eq!(
                stored, landed as u64,
                "worker {worker}'s counter in conversation {conversation}"
            );
        }
    }

    // The database the four processes leave behind still meets both whole contracts.
    Conformance::new(storage)
        .persists_all(Primitive::ALL)
        .run()
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    let passed = state_conformance::check(&sessions)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, state_conformance::RULES);
}

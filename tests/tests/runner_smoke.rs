use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, from_fn};
use adk::storage::NoopStorage;

#[tokio::test]
async fn a_turn_walks_every_pipeline_in_order() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let events = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let (l1, l2, l3, e) = (log.clone(), log.clone(), log.clone(), events.clone());
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .observe(move |event| e.lock().unwrap().push(event.name()))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let log = l1.clone();
            Box::pin(async move {
                log.lock().unwrap().push("input pre".into());
                let outcome = next.run(ctx).await;
                log.lock().unwrap().push(format!("input post {outcome:?}"));
                Ok::<(), BoxError>(())
            })
        }))
        .turn_output(from_fn(move |ctx: &mut TurnContext, next| {
            let log = l2.clone();
            Box::pin(async move {
                log.lock().unwrap().push("output".into());
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let log = l3.clone();
            Box::pin(async move {
                log.lock().unwrap().push("executor".into());
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("c1", "prompt"))
        .await
        .unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        *log.lock().unwrap(),
        ["input pre", "input post Completed", "executor", "output"]
    );
    assert_eq!(
        *events.lock().unwrap(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "dispatchEnd",
            "turnEnd"
        ]
    );
}

#[test]
fn the_runner_is_send_sync_and_clone() {
    fn assert_traits<T: Send + Sync + Clone + 'static>() {}
    assert_traits::<TurnRunner>();
}

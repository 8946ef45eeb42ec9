//! Double signals and on_ack handlers.

use super::*;

#[tokio::test]
async fn a_second_signal_after_an_ack_is_refused_and_the_ack_stands() {
    let log = Log::new();
    let events = EventRecorder::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        Box::pin(async move {
            let handler_log = log.clone();
            ctx.on_ack(move |_| handler_log.push("on_ack"));
            ctx.ack()?;
            let again = ctx.ack().map_err(|error| error.code());
            let nack = ctx
                .nack(Refusal { policy: "late" })
                .map_err(|error| error.code());
            log.push(format!("{again:?} {nack:?} acked={}", ctx.is_acked()));
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log).build();
    let outcome = run(&runner).await;

    assert_eq!(
        log.entries(),
        [
            "on_ack",
            "Err(AlreadySignalled) Err(AlreadySignalled) acked=true",
            "out-pre",
            "out-post"
        ]
    );
    assert_eq!(
        ErrorCode::AlreadySignalled.as_str(),
        "E_LLM_EXECUTION_ALREADY_SIGNALLED"
    );
    assert_eq!(
        events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn a_second_signal_after_a_nack_is_refused_and_the_first_nack_stands() {
    let log = Log::new();
    let events = EventRecorder::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        Box::pin(async move {
            ctx.nack(Refusal { policy: "first" })?;
            let ack = ctx.ack().map_err(|error| error.code());
            let again = ctx
                .nack(Refusal { policy: "second" })
                .map_err(|error| error.code());
            log.push(format!("{ack:?} {again:?}"));
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log).build();
    let outcome = run(&runner).await;

    assert_eq!(log.joined(), "Err(AlreadySignalled) Err(AlreadySignalled)");
    let ended_with = dispatch_end(&events).2.expect("the nack's error");
    assert_eq!(
        *cause_of::<Refusal>(&ended_with),
        Refusal { policy: "first" }
    );
    assert_eq!(
        *cause_of::<Refusal>(failed_with(&outcome)),
        Refusal { policy: "first" }
    );
}

// ---------------------------------------------------------------------------------------------
// on_ack handlers

#[tokio::test]
async fn on_ack_handlers_run_in_registration_order_and_an_unsubscribed_one_does_not_run() {
    let logged = logged_by(|ctx: &mut DispatchContext, log: Log| {
        Box::pin(async move {
            for name in ["first", "second", "third"] {
                let handler_log = log.clone();
                let subscription = ctx.on_ack(move |_| handler_log.push(name));
                if name == "second" {
                    log.push(format!(
                        "unsubscribe second: {}",
                        subscription.unsubscribe()
                    ));
                }
            }
            let late = log.clone();
            let fourth = ctx.on_ack(move |_| late.push("fourth"));
            ctx.ack()?;
            log.push(format!(
                "unsubscribe after it ran: {}",
                fourth.unsubscribe()
            ));
            Ok(())
        })
    })
    .await;

    assert_eq!(
        logged,
        [
            "unsubscribe second: true",
            "first",
            "third",
            "fourth",
            "unsubscribe after it ran: false"
        ]
    );
}

#[tokio::test]
async fn on_ack_handlers_do_not_run_on_nack() {
    let logged = logged_by(|ctx: &mut DispatchContext, log: Log| {
        Box::pin(async move {
            let handler_log = log.clone();
            let subscription = ctx.on_ack(move |_| handler_log.push("handler"));
            ctx.nack(Refusal { policy: "none" })?;
            log.push(format!(
                "still registered after the nack: {}",
                subscription.unsubscribe()
            ));
            Ok(())
        })
    })
    .await;

    assert_eq!(logged, ["still registered after the nack: true"]);
}

#[tokio::test]
async fn a_panicking_on_ack_handler_does_not_stop_the_others_or_the_turn() {
    let log = Log::new();
    let events = EventRecorder::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        Box::pin(async move {
            let before = log.clone();
            ctx.on_ack(move |_| before.push("before"));
            ctx.on_ack(|_| panic!("an on_ack handler broke"));
            let after = log.clone();
            ctx.on_ack(move |ctx| after.push(format!("after, acked={}", ctx.is_acked())));
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log).build();
    let outcome = run(&runner).await;

    assert_eq!(log.joined(), "before after, acked=true out-pre out-post");
    assert_eq!(
        events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

//! Turn gates (spec 3.9): a middleware waits for an answer from outside the turn.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use adk::context::{Aborted, DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::events::Event;
use adk::gate::{DEFAULT_GATE_TIMEOUT, GateError, GateRequest, ResolveError};
use adk::pipeline::{BoxError, from_fn};
use adk::storage::NoopStorage;
use adk::{TurnOutcome, TurnRunner};

type Answer = Arc<Mutex<Option<Result<bool, GateError>>>>;

/// A runner whose turn_input waits on an approval gate (`bool`) and records what it got; the
/// listener answers gates with `answer` and records every event name.
fn runner_with(
    timeout: Option<Duration>,
    answer: impl Fn(&adk::gate::GateHandle) + Send + Sync + 'static,
) -> (TurnRunner, Answer, Arc<Mutex<Vec<String>>>) {
    let got: Answer = Arc::default();
    let names: Arc<Mutex<Vec<String>>> = Arc::default();
    let got_in_middleware = Arc::clone(&got);
    let names_in_listener = Arc::clone(&names);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .observe(move |event| {
            let mut name = event.name().to_owned();
            match event {
                Event::TurnGateOpen { gate } => answer(gate),
                Event::TurnGateClosed { result, .. } => {
                    name = format!("{name}:{}", result.as_str())
                }
                _ => {}
            }
            names_in_listener.lock().unwrap().push(name);
        })
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let got = Arc::clone(&got_in_middleware);
            Box::pin(async move {
                let mut request = GateRequest::new("approve", "a human must approve")
                    .payload(serde_json::json!({"amount": 250}));
                if let Some(timeout) = timeout {
                    request = request.timeout(timeout);
                }
                let answer = ctx.wait_for::<bool>(request).await;
                *got.lock().unwrap() = Some(answer);
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    (runner, got, names)
}

async fn run(runner: &TurnRunner) -> TurnOutcome {
    runner
        .run(RawTurnContext::new("conversation", "prompt"))
        .await
        .expect("valid input")
}

#[tokio::test]
async fn a_resolved_gate_returns_the_value_and_reports_resolved() {
    let (runner, got, names) = runner_with(None, |gate| {
        assert_eq!(gate.id(), "approve");
        assert_eq!(gate.payload()["amount"], 250);
        gate.resolve(true).expect("a bool fits");
    });
    let outcome = run(&runner).await;
    assert!(outcome.is_completed());
    assert!(matches!(*got.lock().unwrap(), Some(Ok(true))));
    let names = names.lock().unwrap();
    assert_eq!(
        names[..3],
        ["turnStart", "turnGateOpen", "turnGateClosed:resolved"]
    );
}

#[tokio::test]
async fn a_resolution_of_the_wrong_type_is_refused_and_the_gate_stays_open() {
    let refused = Arc::new(Mutex::new(None));
    let refused_in_listener = Arc::clone(&refused);
    let (runner, got, _) = runner_with(None, move |gate| {
        let wrong = gate.resolve("yes please");
        assert!(
            !gate.is_settled(),
            "a refused resolution must leave the gate open"
        );
        *refused_in_listener.lock().unwrap() = Some(wrong.map_err(|error| error.to_string()));
        gate.resolve(false).expect("a bool fits");
    });
    let _ = run(&runner).await;
    let refused = refused.lock().unwrap().clone().expect("the listener ran");
    let message = refused.expect_err("a string is not a bool");
    assert!(message.contains("`bool`"), "{message}");
    assert!(matches!(*got.lock().unwrap(), Some(Ok(false))));
}

#[tokio::test]
async fn a_rejected_gate_returns_the_answerers_error() {
    let (runner, got, names) = runner_with(None, |gate| {
        assert!(gate.reject("the reviewer said no"));
        assert!(
            !gate.reject("twice"),
            "a settled gate refuses a second answer"
        );
        assert!(matches!(
            gate.resolve(true),
            Err(ResolveError::AlreadySettled { .. })
        ));
    });
    let _ = run(&runner).await;
    match &*got.lock().unwrap() {
        Some(Err(GateError::Rejected { cause, .. })) => {
            assert_eq!(cause.to_string(), "the reviewer said no");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert!(
        names
            .lock()
            .unwrap()
            .contains(&"turnGateClosed:rejected".to_owned())
    );
}

#[tokio::test]
async fn an_unanswered_gate_times_out_with_its_own_error_kind() {
    let (runner, got, names) = runner_with(Some(Duration::from_millis(20)), |_| {});
    let _ = run(&runner).await;
    let got = got.lock().unwrap();
    let error = got
        .as_ref()
        .expect("middleware ran")
        .as_ref()
        .expect_err("no answer");
    assert!(matches!(error, GateError::TimedOut { .. }));
    assert_eq!(error.code().as_str(), "E_TURN_GATE_TIMEOUT");
    assert!(
        names
            .lock()
            .unwrap()
            .contains(&"turnGateClosed:timeout".to_owned())
    );
}

#[tokio::test(start_paused = true)]
async fn a_gate_nobody_answers_times_out_after_the_default_timeout() {
    // No timeout set and nobody answers: the paused clock jumps ahead while the turn waits.
    let (runner, got, names) = runner_with(None, |_| {});
    let started = tokio::time::Instant::now();
    let _ = run(&runner).await;
    let got = got.lock().unwrap();
    let error = got
        .as_ref()
        .expect("middleware ran")
        .as_ref()
        .expect_err("no answer");
    assert!(
        matches!(error, GateError::TimedOut { after, .. } if *after == DEFAULT_GATE_TIMEOUT),
        "{error}"
    );
    assert!(started.elapsed() >= DEFAULT_GATE_TIMEOUT);
    assert!(
        names
            .lock()
            .unwrap()
            .contains(&"turnGateClosed:timeout".to_owned())
    );
}

#[tokio::test]
async fn an_explicitly_aborted_gate_reports_aborted() {
    let (runner, got, names) = runner_with(None, |gate| {
        assert!(gate.abort());
    });
    let _ = run(&runner).await;
    let got = got.lock().unwrap();
    let error = got
        .as_ref()
        .expect("middleware ran")
        .as_ref()
        .expect_err("aborted");
    assert_eq!(error.code().as_str(), "E_TURN_GATE_ABORTED");
    assert!(
        names
            .lock()
            .unwrap()
            .contains(&"turnGateClosed:aborted".to_owned())
    );
}

#[tokio::test]
async fn aborting_the_turn_settles_an_open_gate_as_aborted() {
    let token = tokio_util_token();
    let canceller = token.clone();
    let (runner, got, names) = runner_with(None, move |_| {
        // Answer nobody; cancel the turn from another task shortly after.
        let canceller = canceller.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            canceller.cancel();
        });
    });
    let outcome = runner
        .run(RawTurnContext::new("conversation", "prompt").cancellation(token))
        .await
        .expect("valid input");
    assert!(matches!(
        outcome.status,
        adk::runner::TurnStatus::Aborted(_)
    ));
    let got = got.lock().unwrap();
    assert!(matches!(got.as_ref(), Some(Err(GateError::Aborted { .. }))));
    let names = names.lock().unwrap();
    assert!(names.contains(&"turnGateClosed:aborted".to_owned()));
    assert!(
        !names.iter().any(|name| name == "error"),
        "abort emits no error: {names:?}"
    );
    assert_eq!(names.last().map(String::as_str), Some("turnEnd"));
}

#[tokio::test]
async fn a_gate_opened_before_next_blocks_downstream_middleware_until_answered() {
    let order = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let (first, second) = (Arc::clone(&order), Arc::clone(&order));
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .observe(|event| {
            if let Event::TurnGateOpen { gate } = event {
                let gate = gate.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    gate.resolve(()).expect("unit fits");
                });
            }
        })
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let order = Arc::clone(&first);
            Box::pin(async move {
                ctx.wait_for::<()>(GateRequest::new("g", "wait")).await?;
                order.lock().unwrap().push("gate answered");
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let order = Arc::clone(&second);
            Box::pin(async move {
                order.lock().unwrap().push("downstream ran");
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(|_ctx: &mut DispatchContext| {
            Box::pin(async move { Err::<(), BoxError>(Aborted::new("not needed here").into()) })
        }))
        .build();
    let _ = run(&runner).await;
    assert_eq!(*order.lock().unwrap(), ["gate answered", "downstream ran"]);
}

fn tokio_util_token() -> adk::context::CancellationToken {
    adk::context::CancellationToken::new()
}

// docs/gates.md: "A `GateError` is an ordinary error: `?` fails the middleware (and the turn,
// with `E_TURN_GATE_TIMEOUT`, `E_TURN_GATE_REJECTED` or `E_TURN_GATE_ABORTED`)". The turn's
// error carries the gate's code, not the pipeline's, from turn middleware, dispatch middleware
// and the executor alike; the error event says the same.

/// Runs one turn whose `wait_at` waits 5 ms on a gate nobody answers and fails with `?`;
/// returns the outcome's error code and the codes of the error events.
async fn gate_timeout_codes(wait_at: &str) -> (Option<&'static str>, Vec<&'static str>) {
    let request =
        || GateRequest::new("approve", "nobody answers").timeout(Duration::from_millis(5));
    let errors: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let seen = Arc::clone(&errors);
    let mut builder = TurnRunner::builder()
        .storage(NoopStorage::new())
        .observe(move |event| {
            if let Event::Error { error, .. } = event {
                seen.lock().unwrap().push(error.code().as_str());
            }
        });
    match wait_at {
        "turn_input" => {
            builder = builder.turn_input(from_fn(move |ctx: &mut TurnContext, next| {
                Box::pin(async move {
                    let _: bool = ctx.wait_for(request()).await?;
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            }))
        }
        "dispatch_input" => {
            builder = builder.dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
                Box::pin(async move {
                    let _: bool = ctx.wait_for(request()).await?;
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            }))
        }
        _ => {}
    }
    let in_executor = wait_at == "executor";
    let runner = builder
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            Box::pin(async move {
                if in_executor {
                    let _: bool = ctx.wait_for(request()).await?;
                }
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner).await;
    let code = outcome.error().map(|error| error.code().as_str());
    let events = errors.lock().unwrap().clone();
    (code, events)
}

#[tokio::test]
async fn question_mark_on_a_gate_timeout_fails_the_turn_with_e_turn_gate_timeout() {
    for wait_at in ["turn_input", "dispatch_input", "executor"] {
        let (code, events) = gate_timeout_codes(wait_at).await;
        assert_eq!(code, Some("E_TURN_GATE_TIMEOUT"), "waiting in {wait_at}");
        assert_eq!(events, ["E_TURN_GATE_TIMEOUT"], "waiting in {wait_at}");
    }
}

#[tokio::test]
async fn question_mark_on_a_rejected_gate_fails_the_turn_with_e_turn_gate_rejected() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .observe(|event| {
            if let Event::TurnGateOpen { gate } = event {
                assert!(gate.reject("no"), "the gate is open");
            }
        })
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let _: bool = ctx.wait_for(GateRequest::new("approve", "ask")).await?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner).await;
    assert_eq!(
        outcome.error().map(|error| error.code().as_str()),
        Some("E_TURN_GATE_REJECTED")
    );
}

//! A change to middleware state that panics leaves the state as it was (HPD's rule for a
//! throwing transform): the panic is caught by `update_middleware_state` /
//! `try_update_middleware_state` and returned as `MiddlewareStateError::Panicked`, so the
//! middleware further up never sees a half-done change.

use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::middleware_state::{MiddlewareState, MiddlewareStateError};
use adk::pipeline::{BoxError, Next, from_fn};
use adk::storage::NoopStorage;

/// Two fields a change sets one after the other: a panic between them is a half-done change.
#[derive(MiddlewareState, Default, Clone, Debug, PartialEq)]
struct Booking {
    seats: u32,
    paid: bool,
}

fn acking() -> impl adk::dispatch::Executor {
    executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

#[tokio::test]
async fn a_panicking_update_leaves_the_state_unchanged_for_the_middleware_further_up() {
    let seen_above: Arc<Mutex<Option<Booking>>> = Arc::default();
    let error_below: Arc<Mutex<Option<String>>> = Arc::default();
    let (seen, error) = (Arc::clone(&seen_above), Arc::clone(&error_below));
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(from_fn(
            move |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
                let seen = Arc::clone(&seen);
                Box::pin(async move {
                    let _ = next.run(ctx).await;
                    *seen.lock().expect("not poisoned") =
                        ctx.middleware_state::<Booking>().cloned();
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .turn_input(from_fn(
            move |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
                let error = Arc::clone(&error);
                Box::pin(async move {
                    ctx.update_middleware_state::<Booking>(|booking| booking.seats = 1)?;
                    let refused = ctx.update_middleware_state::<Booking>(|booking| {
                        booking.seats = 3;
                        panic!("the card was declined");
                        #[allow(unreachable_code)]
                        {
                            booking.paid = true;
                        }
                    });
                    *error.lock().expect("not poisoned") = match refused {
                        Err(refused @ MiddlewareStateError::Panicked { .. }) => {
                            Some(refused.to_string())
                        }
                        other => Some(format!("not Panicked: {other:?}")),
                    };
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .executor(acking())
        .build();
    let outcome = runner
        .run(RawTurnContext::new("s-1", "You are a test."))
        .await
        .expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);

    assert_eq!(
        *seen_above.lock().expect("not poisoned"),
        Some(Booking {
            seats: 1,
            paid: false
        }),
        "the middleware further up sees the state before the panicking change"
    );
    let error = error_below.lock().expect("not poisoned").clone();
    let error = error.expect("the inner middleware ran");
    assert!(
        error.contains("panicked") && error.contains("the card was declined"),
        "{error}"
    );
}

#[tokio::test]
async fn a_panicking_try_update_of_an_unset_state_leaves_it_unset() {
    let mut ctx = TurnContext::new(
        RawTurnContext::new("s-1", "You are a test."),
        adk::storage::SharedStorage::new(NoopStorage::new()),
        Default::default(),
    )
    .expect("valid");
    let refused = ctx.try_update_middleware_state(|booking: &mut Booking| {
        booking.seats = 2;
        if booking.seats > 1 {
            panic!("no seats left");
        }
        Ok::<(), MiddlewareStateError>(())
    });
    assert!(
        matches!(refused, Err(MiddlewareStateError::Panicked { ref message, .. }) if message == "no seats left"),
        "{refused:?}"
    );
    assert_eq!(ctx.middleware_state::<Booking>(), None);
    // The state still takes changes afterwards.
    ctx.update_middleware_state::<Booking>(|booking| booking.paid = true)
        .expect("updates");
    assert_eq!(
        ctx.middleware_state::<Booking>(),
        Some(&Booking {
            seats: 0,
            paid: true
        })
    );
}

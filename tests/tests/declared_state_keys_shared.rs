//! Two `#[derive(MiddlewareState)]` types with one key, in two modules: their records would
//! overwrite each other. The program-wide check names both types, and the runner refuses to
//! build, in every build profile (nothing here depends on `debug_assertions`).

use adk::TurnRunner;
use adk::context::DispatchContext;
use adk::declarations::Conflict;
use adk::dispatch::executor_fn;
use adk::storage::NoopStorage;

mod breaker {
    #[derive(adk::middleware_state::MiddlewareState, Default, Clone)]
    #[middleware_state(key = "acme.breaker")]
    pub struct Breaker {
        pub failures: u32,
    }
}

mod limiter {
    #[derive(adk::middleware_state::MiddlewareState, Default, Clone)]
    #[middleware_state(key = "acme.breaker")]
    pub struct Limiter {
        pub tokens: u32,
    }
}

#[test]
fn two_state_types_with_one_key_are_reported_naming_both() {
    let conflicts =
        adk::middleware_state::check_declared_keys().expect_err("two types share a key");
    assert_eq!(conflicts.conflicts.len(), 1, "{conflicts}");
    let Conflict::SharedKey {
        path,
        first,
        second,
    } = &conflicts.conflicts[0]
    else {
        panic!("expected a shared key: {conflicts}");
    };
    assert_eq!(*path, "acme.breaker");
    let mut types = [first.0, second.0];
    types.sort();
    assert!(types[0].ends_with("breaker::Breaker"), "{conflicts}");
    assert!(types[1].ends_with("limiter::Limiter"), "{conflicts}");
    let _ = (
        breaker::Breaker::default().failures,
        limiter::Limiter::default().tokens,
    );
}

#[test]
fn try_build_returns_the_shared_key_rather_than_panicking() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|_: &mut DispatchContext| {
            Box::pin(async { Ok(()) })
        }))
        .try_build();
    let Err(conflicts) = result else {
        panic!("the runner was built although two state types share a key");
    };
    assert!(
        conflicts
            .to_string()
            .contains("`acme.breaker` is the key of both"),
        "{conflicts}"
    );
}

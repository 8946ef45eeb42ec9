//! A `#[middleware]` fn takes its name the way a plain `async fn` does: only in the value
//! namespace, where a `let`, a closure parameter, a `match` arm, an `if let` or another fn's
//! parameter of that name shadows it, as it would shadow a plain fn. Before, the name was a unit
//! struct, which every such pattern matched instead ("`history` is interpreted as a unit
//! struct"). A type or a module of the same name, which a plain fn allows, is fine too.
#![deny(warnings)]

use adk::TurnContext;
use adk::TurnRunner;
use adk::pipeline::{BoxError, Next, Stack, TurnInput};

#[adk::middleware(pipeline = turn_input)]
async fn history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

/// A closure parameter named like the middleware it sits in.
#[adk::middleware(pipeline = turn_input)]
async fn breaker(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let tripped = [false, true].iter().filter(|breaker| **breaker).count();
    let history: Vec<String> = vec![format!("{tripped} tripped")];
    assert_eq!(history.len(), 1);
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
pub(crate) async fn retry(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

/// A module of the middleware's name, next to it.
mod retry {
    pub const ATTEMPTS: u32 = 3;
}

/// A type of the middleware's name, next to it.
#[allow(non_camel_case_types, dead_code)]
struct breaker {
    open: bool,
}

fn lets_and_closures() -> usize {
    let history: Vec<String> = vec!["hello".to_owned()];
    let count = |history: &Vec<String>| history.len();
    count(&history)
}

fn patterns(value: Option<u32>) -> u32 {
    let doubled = match value {
        Some(history) => history * 2,
        None => 0,
    };
    if let Some(history) = value {
        return history + doubled;
    }
    let (history, breaker) = (1, 2);
    history + breaker
}

fn parameter(history: &str) -> usize {
    history.len()
}

fn main() {
    assert_eq!(lets_and_closures(), 1);
    assert_eq!(patterns(Some(2)), 6);
    assert_eq!(patterns(None), 3);
    assert_eq!(parameter("abc"), 3);
    assert_eq!(retry::ATTEMPTS, 3);
    assert!(!breaker { open: false }.open);
    // Registered by name, as before.
    let mut stack = Stack::<TurnInput>::new();
    stack.push(history);
    stack.push(breaker);
    stack.push(retry);
    assert_eq!(stack.len(), 3);
    let _ = TurnRunner::builder().turn_input(history).turn_input(breaker);
}

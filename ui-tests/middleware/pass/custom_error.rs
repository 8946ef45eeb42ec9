//! `?` on the user's own error type; the macro boxes it into `BoxError`.
#![deny(warnings)]

use std::fmt;

use adk::TurnContext;
use adk::pipeline::{Next, Stack, TurnInput};

#[derive(Debug)]
enum PolicyError {
    Blocked(String),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Blocked(word) => write!(formatter, "the input contains the blocked word {word:?}"),
        }
    }
}

impl std::error::Error for PolicyError {}

fn check(text: &str) -> Result<(), PolicyError> {
    if text.contains("forbidden") {
        return Err(PolicyError::Blocked("forbidden".to_owned()));
    }
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn enforce_policy(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), PolicyError> {
    check("an ordinary message")?;
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(enforce_policy);
    assert_eq!(stack.len(), 1);
}

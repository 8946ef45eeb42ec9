//! Which context each pipeline's middleware receive. The markers are the chain's
//! (`adk::pipeline`); binding them to the contexts here keeps the chain free of context types.

use super::{DispatchContext, ToolContext, TurnContext};
use crate::pipeline::{
    DispatchInput, DispatchOutput, Pipeline, Scope, ToolExecution, TurnInput, TurnOutput,
};

impl Pipeline for TurnInput {
    type Context = TurnContext;
    const NAME: &'static str = "turn_input";
    const SCOPE: Scope = Scope::Turn;
}

impl Pipeline for TurnOutput {
    type Context = TurnContext;
    const NAME: &'static str = "turn_output";
    const SCOPE: Scope = Scope::Turn;
}

impl Pipeline for DispatchInput {
    type Context = DispatchContext;
    const NAME: &'static str = "dispatch_input";
    const SCOPE: Scope = Scope::Dispatch;
}

impl Pipeline for DispatchOutput {
    type Context = DispatchContext;
    const NAME: &'static str = "dispatch_output";
    const SCOPE: Scope = Scope::Dispatch;
}

impl Pipeline for ToolExecution {
    type Context = ToolContext;
    const NAME: &'static str = "tool_execution";
    const SCOPE: Scope = Scope::Tool;
}

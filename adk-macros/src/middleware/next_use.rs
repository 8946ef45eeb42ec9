//! How a middleware body uses its `next`: judged by uses of the binding itself, not by the name.
//!
//! The rule, as users read it in `adk::middleware`'s docs:
//!
//! - **Every path that returns `Ok` runs the chain, aborts, or hands `next` on.** A path counts
//!   as settled once it awaits a `next.run(..)` future, passes `next` (or that future) to a
//!   function, closure, async block, struct or macro, or calls `.abort(..)` on the context
//!   parameter itself, by its name (`ctx.abort(reason)`): `abort` called on anything else — a
//!   `JoinHandle`, an `AbortHandle` — stops that value, not the turn, and settles nothing.
//!   `ctx.complete_with(reply)` (a `turn_input` middleware answering in the executor's place)
//!   and a tool middleware's `ctx.refuse(..)` / `ctx.respond(..)` settle a path the same way.
//!   A path that returns an error — `return Err(..)`, `Err(..)?`, a tail `Err(..)`, `bail!`,
//!   `panic!` — needs nothing: it is reported as a failure, not a short-circuit. A path that
//!   returns `Ok` with none of these is an error at that path (the `return`, the branch, or the
//!   `if` whose missing `else` falls through).
//! - **Every `next.run(..)` future is awaited, returned, or handed on.** Thrown away by
//!   `next.run(ctx);`, `_ = next.run(ctx);`, `let _ = ..`, `drop(..)`, or bound to a name that is
//!   never awaited or handed on, it is an error at the call.
//! - **Whatever takes the chain is run in turn.** A closure or async block that captures `next`
//!   (or its future), and what a call that takes it returns, hold the chain: they settle a path
//!   once awaited (a closure: called, and its result awaited), returned or handed on, and are
//!   reported where `next` was moved in when thrown away instead (`cond.then(|| ..);`,
//!   `helper(next);`, an async block or closure bound and never run).
//! - Only the `next` parameter binding counts: `iter().next()` is a method named `next`, and a
//!   `let next = ..` that shadows the parameter is another value.
//! - A branch taken only when `ctx.is_aborted()` holds (`if ctx.is_aborted() { return Ok(()) }`)
//!   is settled: the turn is already aborted there, which explains the short-circuit. As with
//!   `abort`, only the context parameter's own `is_aborted()` counts.
//! - A `while`/`for` loop may run zero times, so running `next` inside one does not settle the
//!   path after it; a `loop` settles at its `break`s.
//! - A parameter named `_next` (or `_`) opts out of the path rule, for middleware that refuses
//!   on purpose; thrown-away futures are still reported.

mod plainly;
mod shapes;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

pub(crate) use plainly::plainly_settled;
use shapes::{is_drop, is_error_exit, merge, pattern_names};

/// What the body analysis found.
#[derive(Default)]
pub(crate) struct NextUse {
    /// True when some path runs or hands on the chain.
    pub(crate) ever_run: bool,
    /// Paths that return `Ok` without settling, as the tokens to point at. `None` when no single
    /// place can be named (the caret goes on the parameter).
    pub(crate) unsettled: Vec<Option<TokenStream>>,
    /// Chain values thrown away, as the tokens that made them, each with whether it was a
    /// holder of the chain (a closure, an async block or a call that took `next` or its future)
    /// rather than a `next.run(..)` future.
    pub(crate) thrown_away: Vec<(TokenStream, bool)>,
    /// `.abort(..)` calls on something other than the context, reached on a path nothing had
    /// settled yet, as the call's tokens: the likely reason such a path is unsettled.
    pub(crate) foreign_aborts: Vec<TokenStream>,
}

/// Analyses `block`, the body of a middleware whose `next` parameter is bound to `next` and
/// whose context parameter is bound to `context` (`None` when it is not a plain name, so that
/// nothing can call `abort` on it by name).
pub(crate) fn analyse(
    context: Option<&syn::Ident>,
    next: &syn::Ident,
    block: &syn::Block,
) -> NextUse {
    // Which problems exist does not depend on the witnesses, only where they are shown.
    let found = analyse_with(context, next, block, false);
    if found.unsettled.is_empty() && found.thrown_away.is_empty() {
        return found;
    }
    analyse_with(context, next, block, true)
}

fn analyse_with(
    context: Option<&syn::Ident>,
    next: &syn::Ident,
    block: &syn::Block,
    witnesses: bool,
) -> NextUse {
    let mut outermost = Vec::new();
    let mut tokens = Vec::new();
    if let Some(context) = context {
        outermost.push((context.to_string(), Some(tokens.len())));
        tokens.push(Token::Context);
    }
    outermost.push((next.to_string(), Some(tokens.len())));
    tokens.push(Token::Next);
    let mut analysis = Analysis {
        scopes: vec![outermost],
        consumed: vec![false; tokens.len()],
        tokens,
        loops: Vec::new(),
        result: NextUse::default(),
        witnesses,
    };
    let (value, flow) = analysis.block(block, Flow::Open(None));
    let flow = match analysis.consume(&value) {
        true => flow.map(|_| Flow::Settled),
        false => flow,
    };
    let tail_is_error = block.stmts.last().is_some_and(
        |statement| matches!(statement, syn::Stmt::Expr(expr, None) if is_error_exit(expr)),
    );
    if let Some(Flow::Open(witness)) = flow
        && !tail_is_error
    {
        analysis.result.unsettled.push(witness);
    }
    for (index, token) in analysis.tokens.iter().enumerate() {
        if let Token::Future(call, holder) = token
            && !analysis.consumed[index]
        {
            analysis.result.thrown_away.push((call.clone(), *holder));
        }
    }
    analysis.result
}

/// A value the analysis follows: the `next` parameter (or a rename of it), an unawaited
/// `next.run(..)` future bound to a name, or the context parameter (by its own name only, for
/// `ctx.abort(..)` and `ctx.is_aborted()`).
enum Token {
    Context,
    Next,
    /// The `next.run(..)` call the future came from, or (`true`) the closure, async block or
    /// call that holds the chain.
    Future(TokenStream, bool),
}

/// What an expression evaluates to, as far as the chain is concerned.
#[derive(Clone)]
enum Value {
    Other,
    /// The `next` parameter or a rename of it.
    Next,
    /// A `next.run(..)` future, or a holder of the chain that must be run the same way: a
    /// closure or async block that captured it, or what a call that took it returned. Bound to
    /// token `token`, or fresh from `call`.
    Future {
        token: Option<usize>,
        call: TokenStream,
        holder: bool,
    },
}

/// The state of the path reaching a point. `None` (as `Option<Flow>`) is a point no path
/// reaches: after `return`, `break`, `panic!`.
#[derive(Clone)]
enum Flow {
    /// The chain ran, was handed on, the turn was aborted, or the path ends in an error.
    Settled,
    /// Nothing settled yet; the tokens name the place where a settled path and this one parted.
    Open(Option<TokenStream>),
}

struct Analysis {
    /// Names in scope, innermost last, each with the token it refers to (`None`: another value).
    scopes: Vec<Vec<(String, Option<usize>)>>,
    tokens: Vec<Token>,
    consumed: Vec<bool>,
    /// For each enclosing loop, the flows of its `break`s.
    loops: Vec<Vec<(Option<Flow>, TokenStream)>>,
    result: NextUse,
    /// Whether to keep the tokens errors point at. Keeping them copies every branch's tokens,
    /// and a body that passes needs none, so the first pass runs without them.
    witnesses: bool,
}

type Evaluated = (Value, Option<Flow>);

impl Analysis {
    /// `tokens` as the place an error would point at, when this pass keeps them.
    fn witness(&self, tokens: &dyn ToTokens) -> TokenStream {
        if self.witnesses {
            tokens.to_token_stream()
        } else {
            TokenStream::new()
        }
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|scope| scope.iter().rev())
            .find(|(bound, _)| bound == name)
            .and_then(|(_, token)| *token)
    }

    fn bind(&mut self, name: String, token: Option<usize>) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name, token));
        }
    }

    fn bind_pattern(&mut self, pattern: &syn::Pat) {
        let mut names = Vec::new();
        pattern_names(pattern, &mut names);
        for name in names {
            self.bind(name, None);
        }
    }

    fn new_token(&mut self, token: Token) -> usize {
        self.tokens.push(token);
        self.consumed.push(false);
        self.tokens.len() - 1
    }

    /// `value` is run or handed on. True when it carried the chain.
    fn consume(&mut self, value: &Value) -> bool {
        match value {
            Value::Other => false,
            Value::Next => {
                self.result.ever_run = true;
                true
            }
            Value::Future { token, .. } => {
                if let Some(token) = token {
                    self.consumed[*token] = true;
                }
                self.result.ever_run = true;
                true
            }
        }
    }

    /// `value` is dropped unused. A fresh future is reported here; a bound one when the analysis
    /// ends, if nothing else awaited it.
    fn discard(&mut self, value: &Value) {
        if let Value::Future {
            token: None,
            call,
            holder,
        } = value
        {
            self.result.thrown_away.push((call.clone(), *holder));
        }
    }

    fn value_of_token(&self, token: usize) -> Value {
        match &self.tokens[token] {
            // The context carries no chain: handing it on settles nothing.
            Token::Context => Value::Other,
            Token::Next => Value::Next,
            Token::Future(call, holder) => Value::Future {
                token: Some(token),
                call: call.clone(),
                holder: *holder,
            },
        }
    }

    fn block(&mut self, block: &syn::Block, flow: Flow) -> Evaluated {
        self.scopes.push(Vec::new());
        let mut flow = Some(flow);
        let mut value = Value::Other;
        for statement in &block.stmts {
            let Some(current) = flow.clone() else {
                // Unreachable code cannot settle or unsettle anything, but uses in it still
                // count as uses (rustc warns about it on its own).
                self.unreachable_statement(statement);
                continue;
            };
            let (statement_value, next_flow) = self.statement(statement, current);
            flow = next_flow;
            value = statement_value;
        }
        self.scopes.pop();
        if let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last()
            && is_error_exit(tail)
            && flow.is_some()
        {
            flow = Some(Flow::Settled);
        }
        (value, flow)
    }

    fn unreachable_statement(&mut self, statement: &syn::Stmt) {
        let saved = std::mem::take(&mut self.result.unsettled);
        let _ = self.statement(statement, Flow::Settled);
        self.result.unsettled = saved;
    }

    /// The value is the statement's when it is the block's tail, `Other` otherwise.
    fn statement(&mut self, statement: &syn::Stmt, flow: Flow) -> Evaluated {
        match statement {
            syn::Stmt::Local(local) => (Value::Other, self.local(local, flow)),
            syn::Stmt::Item(_) => (Value::Other, Some(flow)),
            syn::Stmt::Expr(expr, None) => self.expr(expr, flow),
            syn::Stmt::Expr(expr, Some(_)) => {
                let (value, flow) = self.expr(expr, flow);
                self.discard(&value);
                (Value::Other, flow)
            }
            syn::Stmt::Macro(statement) => (Value::Other, self.mac(&statement.mac, flow)),
        }
    }

    fn local(&mut self, local: &syn::Local, flow: Flow) -> Option<Flow> {
        let pattern = match &local.pat {
            syn::Pat::Type(typed) => &*typed.pat,
            other => other,
        };
        let Some(init) = &local.init else {
            self.bind_pattern(pattern);
            return Some(flow);
        };
        let (value, mut flow) = self.expr(&init.expr, flow);
        if let Some((_, diverge)) = &init.diverge
            && let Some(current) = flow.clone()
        {
            // `let .. else { .. }`: the else block leaves, and is judged where it leaves.
            let _ = self.expr(diverge, current);
        }
        match (pattern, &value) {
            (syn::Pat::Wild(_), _) => self.discard(&value),
            (syn::Pat::Ident(binding), Value::Next) if binding.subpat.is_none() => {
                let token = self.new_token(Token::Next);
                self.bind(binding.ident.to_string(), Some(token));
                // The rename is judged by its own uses; the original was moved into it.
                return flow;
            }
            (
                syn::Pat::Ident(binding),
                Value::Future {
                    token,
                    call,
                    holder,
                },
            ) if binding.subpat.is_none() => {
                let token = match token {
                    Some(token) => *token,
                    None => self.new_token(Token::Future(call.clone(), *holder)),
                };
                self.bind(binding.ident.to_string(), Some(token));
                return flow;
            }
            // Destructured into something else: trusted, like a hand-off.
            (_, Value::Next | Value::Future { .. }) if self.consume(&value) => {
                flow = flow.map(|_| Flow::Settled);
            }
            _ => {}
        }
        self.bind_pattern(pattern);
        flow
    }

    /// Evaluates the expressions of a call's arguments, a tuple or a struct literal: each chain
    /// value among them is handed on.
    fn handed_on<'e>(
        &mut self,
        exprs: impl IntoIterator<Item = &'e syn::Expr>,
        mut flow: Option<Flow>,
    ) -> Option<Flow> {
        for expr in exprs {
            let current = flow?;
            let (value, next_flow) = self.expr(expr, current);
            flow = next_flow;
            if self.consume(&value) {
                flow = flow.map(|_| Flow::Settled);
            }
        }
        flow
    }

    /// Evaluates a call's arguments: a chain value among them is taken by the call, whose
    /// result then holds the chain (it settles nothing until that result is run). True when
    /// one did.
    fn taken_by_call<'e>(
        &mut self,
        exprs: impl IntoIterator<Item = &'e syn::Expr>,
        mut flow: Option<Flow>,
    ) -> (bool, Option<Flow>) {
        let mut carried = false;
        for expr in exprs {
            let Some(current) = flow else {
                return (carried, None);
            };
            let (value, next_flow) = self.expr(expr, current);
            flow = next_flow;
            carried |= self.consume(&value);
        }
        (carried, flow)
    }

    /// What a call returns: a holder of the chain when it took the chain.
    fn call_result(&self, carried: bool, call: &dyn ToTokens) -> Value {
        if carried {
            Value::Future {
                token: None,
                call: self.witness(call),
                holder: true,
            }
        } else {
            Value::Other
        }
    }

    fn expr(&mut self, expr: &syn::Expr, flow: Flow) -> Evaluated {
        match expr {
            syn::Expr::Path(path) => {
                let value = match path.path.get_ident() {
                    Some(ident) if path.qself.is_none() => self
                        .lookup(&ident.to_string())
                        .map_or(Value::Other, |token| self.value_of_token(token)),
                    _ => Value::Other,
                };
                (value, Some(flow))
            }
            syn::Expr::Await(awaited) => {
                let (value, flow) = self.expr(&awaited.base, flow);
                let settled = self.consume(&value);
                (
                    Value::Other,
                    flow.map(|flow| if settled { Flow::Settled } else { flow }),
                )
            }
            syn::Expr::MethodCall(call) => {
                let (receiver, flow) = self.expr(&call.receiver, flow);
                let (carried, mut flow) = self.taken_by_call(&call.args, flow);
                let value = match receiver {
                    Value::Next if call.method == "run" => Value::Future {
                        token: None,
                        call: self.witness(call),
                        holder: false,
                    },
                    // `next.pipeline()` reads; it does not run the chain.
                    Value::Next => Value::Other,
                    // A combinator (`.boxed()`, `.map(..)`) is still the chain's future.
                    future @ Value::Future { .. } => future,
                    // `cond.then(|| next.run(ctx))`: the result holds the chain.
                    Value::Other => self.call_result(carried, call),
                };
                // A tool middleware settles its call with `refuse` or `respond`, as others abort;
                // a `turn_input` middleware settles its turn with `complete_with(reply)`.
                if (call.method == "refuse"
                    || call.method == "respond"
                    || call.method == "complete_with")
                    && self.is_context(&call.receiver)
                {
                    flow = flow.map(|_| Flow::Settled);
                }
                if call.method == "abort" {
                    if self.is_context(&call.receiver) {
                        flow = flow.map(|_| Flow::Settled);
                    } else if matches!(flow, Some(Flow::Open(_))) {
                        let witness = self.witness(call);
                        self.result.foreign_aborts.push(witness);
                    }
                }
                (value, flow)
            }
            syn::Expr::Call(call) => {
                let (function, flow) = self.expr(&call.func, flow);
                // Calling a closure that holds the chain runs it into its result.
                let called = self.consume(&function);
                if is_drop(&call.func) {
                    let mut flow = flow;
                    for argument in &call.args {
                        let Some(current) = flow else { break };
                        let (value, next_flow) = self.expr(argument, current);
                        self.discard(&value);
                        flow = next_flow;
                    }
                    return (Value::Other, flow);
                }
                let (carried, flow) = self.taken_by_call(&call.args, flow);
                (self.call_result(carried || called, call), flow)
            }
            syn::Expr::Return(returned) => {
                let (value, flow) = match &returned.expr {
                    Some(inner) => self.expr(inner, flow),
                    None => (Value::Other, Some(flow)),
                };
                let settled = self.consume(&value);
                let error = returned.expr.as_deref().is_some_and(is_error_exit);
                if let Some(Flow::Open(_)) = flow
                    && !settled
                    && !error
                {
                    let witness = self.witness(returned);
                    self.result.unsettled.push(Some(witness));
                }
                (Value::Other, None)
            }
            syn::Expr::Try(tried) => {
                let (value, flow) = self.expr(&tried.expr, flow);
                if is_error_exit(&tried.expr) {
                    return (Value::Other, None);
                }
                if self.consume(&value) {
                    return (Value::Other, flow.map(|_| Flow::Settled));
                }
                (Value::Other, flow)
            }
            syn::Expr::Macro(mac) => (Value::Other, self.mac(&mac.mac, flow)),
            syn::Expr::Block(block) => {
                if block.label.is_some() {
                    self.loops.push(Vec::new());
                    let (value, fall) = self.block(&block.block, flow);
                    let breaks = self.loops.pop().unwrap_or_default();
                    let mut branches = breaks;
                    branches.push((fall, self.witness(&block.block)));
                    return (value, merge(branches));
                }
                self.block(&block.block, flow)
            }
            syn::Expr::Unsafe(block) => self.block(&block.block, flow),
            syn::Expr::Const(block) => self.block(&block.block, flow),
            syn::Expr::TryBlock(block) => self.block(&block.block, flow),
            syn::Expr::Async(block) => self.deferred(flow, expr, |analysis| {
                let _ = analysis.block(&block.block, Flow::Settled);
            }),
            syn::Expr::Closure(closure) => self.deferred(flow, expr, |analysis| {
                analysis.scopes.push(Vec::new());
                for input in &closure.inputs {
                    analysis.bind_pattern(input);
                }
                let (value, _) = analysis.expr(&closure.body, Flow::Settled);
                analysis.consume(&value);
                analysis.scopes.pop();
            }),
            syn::Expr::If(branch) => self.if_expr(branch, flow),
            syn::Expr::Let(binding) => {
                let (value, flow) = self.expr(&binding.expr, flow);
                let flow = if self.consume(&value) {
                    flow.map(|_| Flow::Settled)
                } else {
                    flow
                };
                self.bind_pattern(&binding.pat);
                (Value::Other, flow)
            }
            syn::Expr::Match(matched) => self.match_expr(matched, flow),
            syn::Expr::While(looped) => {
                self.scopes.push(Vec::new());
                let (_, cond_flow) = self.expr(&looped.cond, flow);
                let header = {
                    let while_token = &looped.while_token;
                    let cond = &looped.cond;
                    quote!(#while_token #cond)
                };
                let after = self.loop_body(&looped.body, cond_flow.clone(), header);
                self.scopes.pop();
                (Value::Other, after)
            }
            syn::Expr::ForLoop(looped) => {
                let (_, flow) = self.expr(&looped.expr, flow);
                self.scopes.push(Vec::new());
                self.bind_pattern(&looped.pat);
                let header = {
                    let for_token = &looped.for_token;
                    let pat = &looped.pat;
                    let in_token = &looped.in_token;
                    let iterated = &looped.expr;
                    quote!(#for_token #pat #in_token #iterated)
                };
                let after = self.loop_body(&looped.body, flow, header);
                self.scopes.pop();
                (Value::Other, after)
            }
            syn::Expr::Loop(looped) => {
                self.loops.push(Vec::new());
                let _ = self.block(&looped.body, flow);
                let breaks = self.loops.pop().unwrap_or_default();
                (Value::Other, merge(breaks))
            }
            syn::Expr::Break(broken) => {
                let (value, flow) = match &broken.expr {
                    Some(inner) => self.expr(inner, flow),
                    None => (Value::Other, Some(flow)),
                };
                let flow = if self.consume(&value) {
                    flow.map(|_| Flow::Settled)
                } else {
                    flow
                };
                let tokens = self.witness(broken);
                if let Some(breaks) = self.loops.last_mut() {
                    breaks.push((flow, tokens));
                }
                (Value::Other, None)
            }
            syn::Expr::Continue(_) => (Value::Other, None),
            syn::Expr::Assign(assign) => {
                let (value, flow) = self.expr(&assign.right, flow);
                if matches!(&*assign.left, syn::Expr::Infer(_)) {
                    self.discard(&value);
                    return (Value::Other, flow);
                }
                let (_, flow) = match flow {
                    Some(flow) => self.expr(&assign.left, flow),
                    None => (Value::Other, None),
                };
                // Stored somewhere the analysis does not follow: trusted.
                let flow = if self.consume(&value) {
                    flow.map(|_| Flow::Settled)
                } else {
                    flow
                };
                (Value::Other, flow)
            }
            syn::Expr::Paren(inner) => self.expr(&inner.expr, flow),
            syn::Expr::Group(inner) => self.expr(&inner.expr, flow),
            syn::Expr::Reference(inner) => {
                let (value, flow) = self.expr(&inner.expr, flow);
                match value {
                    // `&next` reads it (`next.pipeline()` through a reference).
                    Value::Next => (Value::Other, flow),
                    other => (other, flow),
                }
            }
            syn::Expr::Field(field) => {
                let (_, flow) = self.expr(&field.base, flow);
                (Value::Other, flow)
            }
            syn::Expr::Unary(unary) => {
                let (_, flow) = self.expr(&unary.expr, flow);
                (Value::Other, flow)
            }
            syn::Expr::Cast(cast) => {
                let (_, flow) = self.expr(&cast.expr, flow);
                (Value::Other, flow)
            }
            syn::Expr::Index(index) => (
                Value::Other,
                self.handed_on([&*index.expr, &*index.index], Some(flow)),
            ),
            syn::Expr::Binary(binary) => (
                Value::Other,
                self.handed_on([&*binary.left, &*binary.right], Some(flow)),
            ),
            syn::Expr::Range(range) => (
                Value::Other,
                self.handed_on(
                    range
                        .start
                        .iter()
                        .chain(range.end.iter())
                        .map(|expr| &**expr),
                    Some(flow),
                ),
            ),
            syn::Expr::Tuple(tuple) => (Value::Other, self.handed_on(&tuple.elems, Some(flow))),
            syn::Expr::Array(array) => (Value::Other, self.handed_on(&array.elems, Some(flow))),
            syn::Expr::Repeat(repeat) => {
                (Value::Other, self.handed_on([&*repeat.expr], Some(flow)))
            }
            syn::Expr::Struct(literal) => {
                let fields = literal.fields.iter().map(|field| &field.expr);
                let rest = literal.rest.iter().map(|rest| &**rest);
                (Value::Other, self.handed_on(fields.chain(rest), Some(flow)))
            }
            syn::Expr::Yield(yielded) => (
                Value::Other,
                self.handed_on(yielded.expr.iter().map(|expr| &**expr), Some(flow)),
            ),
            _ => (Value::Other, Some(flow)),
        }
    }

    /// A closure or async block: what it does with the chain happens when someone calls or
    /// awaits it. One that captures the chain is a holder of it, which must itself be awaited
    /// (a closure: called, and its result awaited), returned or handed on; its own `return`s
    /// are its own.
    fn deferred(
        &mut self,
        flow: Flow,
        expr: &syn::Expr,
        body: impl FnOnce(&mut Self),
    ) -> Evaluated {
        let before = self.result.ever_run;
        let consumed_before = self.consumed.clone();
        let unsettled = std::mem::take(&mut self.result.unsettled);
        let loops = std::mem::take(&mut self.loops);
        self.result.ever_run = false;
        body(self);
        let captured = self.result.ever_run || self.consumed != consumed_before;
        self.result.ever_run |= before;
        self.result.unsettled = unsettled;
        self.loops = loops;
        if captured {
            let holder = Value::Future {
                token: None,
                call: self.witness(expr),
                holder: true,
            };
            return (holder, Some(flow));
        }
        (Value::Other, Some(flow))
    }

    fn if_expr(&mut self, branch: &syn::ExprIf, flow: Flow) -> Evaluated {
        self.scopes.push(Vec::new());
        let (_, cond_flow) = self.expr(&branch.cond, flow);
        let Some(cond_flow) = cond_flow else {
            self.scopes.pop();
            return (Value::Other, None);
        };
        let aborted = self.aborted_check(&branch.cond);
        let then_entry = match aborted {
            Some(true) => Flow::Settled,
            _ => cond_flow.clone(),
        };
        let else_entry = match aborted {
            Some(false) => Flow::Settled,
            _ => cond_flow,
        };
        let (then_value, then_flow) = self.block(&branch.then_branch, then_entry);
        self.scopes.pop();
        let then_tokens = self.witness(&branch.then_branch);
        let (else_value, else_flow, else_tokens) = match &branch.else_branch {
            Some((_, otherwise)) => {
                let (value, flow) = self.expr(otherwise, else_entry);
                let tokens = self.witness(otherwise);
                (value, flow, tokens)
            }
            None => {
                let if_token = &branch.if_token;
                let cond = &branch.cond;
                let tokens = if self.witnesses {
                    quote!(#if_token #cond)
                } else {
                    TokenStream::new()
                };
                (Value::Other, Some(else_entry), tokens)
            }
        };
        let value = match then_value {
            Value::Other => else_value,
            value => value,
        };
        (
            value,
            merge(vec![(then_flow, then_tokens), (else_flow, else_tokens)]),
        )
    }

    fn match_expr(&mut self, matched: &syn::ExprMatch, flow: Flow) -> Evaluated {
        let (scrutinee, flow) = self.expr(&matched.expr, flow);
        let Some(mut flow) = flow else {
            return (Value::Other, None);
        };
        if self.consume(&scrutinee) {
            flow = Flow::Settled;
        }
        let mut value = Value::Other;
        let mut branches = Vec::new();
        for arm in &matched.arms {
            self.scopes.push(Vec::new());
            self.bind_pattern(&arm.pat);
            let mut arm_flow = Some(flow.clone());
            if let Some((_, guard)) = &arm.guard {
                arm_flow = self.handed_on([&**guard], arm_flow);
            }
            let (arm_value, arm_flow) = match arm_flow {
                Some(current) => self.expr(&arm.body, current),
                None => (Value::Other, None),
            };
            let arm_flow = match (&arm_flow, is_error_exit(&arm.body)) {
                (Some(_), true) => Some(Flow::Settled),
                _ => arm_flow,
            };
            self.scopes.pop();
            if matches!(value, Value::Other) {
                value = arm_value;
            }
            branches.push((arm_flow, self.witness(&arm.pat)));
        }
        (value, merge(branches))
    }

    /// A `while` or `for` body, which may run zero times. Its `break`s join the path after it.
    fn loop_body(
        &mut self,
        body: &syn::Block,
        entry: Option<Flow>,
        header: TokenStream,
    ) -> Option<Flow> {
        let entry = entry?;
        let ran_before = self.result.ever_run;
        self.result.ever_run = false;
        self.loops.push(Vec::new());
        let _ = self.block(body, entry.clone());
        let breaks = self.loops.pop().unwrap_or_default();
        let ran_inside = self.result.ever_run;
        self.result.ever_run |= ran_before;
        let zero_times = match entry {
            Flow::Open(None) if ran_inside => Flow::Open(Some(header.clone())),
            other => other,
        };
        let mut branches = breaks;
        branches.push((Some(zero_times), header));
        merge(branches)
    }

    fn mac(&mut self, mac: &syn::Macro, flow: Flow) -> Option<Flow> {
        let name = mac
            .path
            .segments
            .last()
            .map(|segment| segment.ident.to_string())
            .unwrap_or_default();
        if matches!(
            name.as_str(),
            "panic" | "unreachable" | "todo" | "unimplemented" | "bail"
        ) {
            return None;
        }
        // Macro bodies are opaque: a chain named inside one is trusted, as a hand-off.
        let mut mentioned = Vec::new();
        self.mentions(mac.tokens.clone(), &mut mentioned);
        let mut settled = false;
        for token in mentioned {
            let value = self.value_of_token(token);
            settled |= self.consume(&value);
        }
        Some(if settled { Flow::Settled } else { flow })
    }

    /// Whether `expr` is the context parameter itself, by its own name (through parentheses,
    /// `&`, `&mut` or `*`), not a shadowing binding or another value.
    fn is_context(&self, expr: &syn::Expr) -> bool {
        match expr {
            syn::Expr::Path(path) if path.qself.is_none() => {
                path.path.get_ident().is_some_and(|ident| {
                    self.lookup(&ident.to_string())
                        .is_some_and(|token| matches!(self.tokens[token], Token::Context))
                })
            }
            syn::Expr::Paren(inner) => self.is_context(&inner.expr),
            syn::Expr::Group(inner) => self.is_context(&inner.expr),
            syn::Expr::Reference(inner) => self.is_context(&inner.expr),
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Deref(_),
                expr,
                ..
            }) => self.is_context(expr),
            _ => false,
        }
    }

    /// `Some(true)` for a condition that holds only when the turn is aborted
    /// (`ctx.is_aborted()`, on the context parameter itself), `Some(false)` for its negation.
    fn aborted_check(&self, cond: &syn::Expr) -> Option<bool> {
        match cond {
            syn::Expr::MethodCall(call)
                if call.method == "is_aborted" && self.is_context(&call.receiver) =>
            {
                Some(true)
            }
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Not(_),
                expr,
                ..
            }) => self.aborted_check(expr).map(|holds| !holds),
            syn::Expr::Paren(inner) => self.aborted_check(&inner.expr),
            syn::Expr::Group(inner) => self.aborted_check(&inner.expr),
            _ => None,
        }
    }

    fn mentions(&self, tokens: TokenStream, found: &mut Vec<usize>) {
        for tree in tokens {
            match tree {
                proc_macro2::TokenTree::Ident(ident) => {
                    if let Some(token) = self.lookup(&ident.to_string()) {
                        found.push(token);
                    }
                }
                proc_macro2::TokenTree::Group(group) => self.mentions(group.stream(), found),
                _ => {}
            }
        }
    }
}

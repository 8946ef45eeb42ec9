//! The quick check before the full analysis: a body whose tokens alone show it passes the rule
//! (one `next.run(..)` awaited at the top), so the common middleware is never parsed.

use proc_macro2::TokenStream;

/// True when `body`, the tokens between the fn's braces, plainly passes the rule (in `next_use`),
/// judged from its tokens alone without parsing it: the shape most middleware has, with one use of
/// `next`, at the top of the body, as a statement that awaits `next.run(..)` unconditionally,
/// and no `return` before it other than in an `if ctx.is_aborted() { .. }` with no `else`, where
/// `ctx` is `context`, the context parameter's own name (`None`: no such branch is exempt).
///
/// It only ever says yes to a body the full analysis passes too (after the awaited run every
/// path is settled; before it the only way out of the fn is `?`, a panic or another error, or
/// a `return` in the exempt branch). Anything else, say no and let [`analyse`](super::analyse)
/// judge it: a false no costs time, never a wrong verdict. Why bother: the unoptimised `syn` that
/// `cargo check` runs spends about half a million instructions parsing one short body.
pub(crate) fn plainly_settled(
    context: Option<&syn::Ident>,
    next: &syn::Ident,
    body: TokenStream,
) -> bool {
    use proc_macro2::TokenTree;

    let name = next.to_string();
    let context = context.map(ToString::to_string);
    let trees: Vec<TokenTree> = body.into_iter().collect();
    // Each group is read once, for both words: every token read crosses the bridge to rustc,
    // which is most of what this look costs.
    // By index: the tree is `return`, or a group with a `return` somewhere inside.
    let mut has_return = vec![false; trees.len()];
    let mut use_at = None;
    // The first tree that mentions the context's name, at any depth.
    let mut first_context_at = None;
    for (index, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(ident) => {
                let text = ident.to_string();
                if first_context_at.is_none() && context.as_deref() == Some(text.as_str()) {
                    first_context_at = Some(index);
                }
                if text == name {
                    if use_at.is_some() {
                        return false;
                    }
                    use_at = Some(index);
                }
                has_return[index] = text == "return";
            }
            TokenTree::Group(group) => {
                let words = Words::in_tokens(group.stream(), &name, context.as_deref());
                if words.next {
                    return false;
                }
                if first_context_at.is_none() && words.context {
                    first_context_at = Some(index);
                }
                has_return[index] = words.r#return;
            }
            _ => {}
        }
    }
    let Some(use_at) = use_at else {
        return false;
    };
    // `next . run ( .. ) . await`
    let awaited_run = matches!(
        trees.get(use_at + 1..use_at + 6),
        Some([
            TokenTree::Punct(dot),
            TokenTree::Ident(run),
            TokenTree::Group(arguments),
            TokenTree::Punct(second_dot),
            TokenTree::Ident(awaited),
        ]) if dot.as_char() == '.'
            && *run == "run"
            && arguments.delimiter() == proc_macro2::Delimiter::Parenthesis
            && second_dot.as_char() == '.'
            && *awaited == "await"
    );
    if !awaited_run {
        return false;
    }
    let Some(statement_start) = statement_start_before(&trees, use_at) else {
        return false;
    };
    // Up to and including the run's arguments, nothing may leave the fn with `Ok`.
    !returns_before(
        &trees[..use_at + 4],
        &has_return,
        statement_start,
        context.as_deref(),
        first_context_at,
    )
}

/// Which of the three words the token-level look cares about appear in some tokens, at any depth.
#[derive(Default)]
struct Words {
    /// The `next` parameter's name.
    next: bool,
    /// The context parameter's name.
    context: bool,
    r#return: bool,
}

impl Words {
    fn in_tokens(tokens: TokenStream, next: &str, context: Option<&str>) -> Self {
        let mut words = Self::default();
        words.add(tokens, next, context);
        words
    }

    fn add(&mut self, tokens: TokenStream, next: &str, context: Option<&str>) {
        for tree in tokens {
            match tree {
                proc_macro2::TokenTree::Ident(ident) => {
                    let text = ident.to_string();
                    self.next |= text == next;
                    self.context |= context == Some(text.as_str());
                    self.r#return |= text == "return";
                }
                proc_macro2::TokenTree::Group(group) => {
                    self.add(group.stream(), next, context);
                }
                _ => {}
            }
            if self.next {
                return;
            }
        }
    }
}

/// Where the statement holding the use at `use_at` starts, when the use is the statement
/// itself or the value of `let _ =`, `let name =`, `let mut name =` or `return`, and that
/// statement starts the body or follows a `;` or a block.
fn statement_start_before(trees: &[proc_macro2::TokenTree], use_at: usize) -> Option<usize> {
    use proc_macro2::TokenTree;

    let is_ident = |index: usize, text: &str| matches!(trees.get(index), Some(TokenTree::Ident(ident)) if *ident == text);
    let is_equals = |index: usize| {
        matches!(
            trees.get(index),
            Some(TokenTree::Punct(punct))
                if punct.as_char() == '=' && punct.spacing() == proc_macro2::Spacing::Alone
        )
    };
    let start = if use_at >= 1 && is_ident(use_at - 1, "return") {
        use_at - 1
    } else if use_at >= 3
        && is_equals(use_at - 1)
        && matches!(trees[use_at - 2], TokenTree::Ident(_))
        && is_ident(use_at - 3, "let")
    {
        use_at - 3
    } else if use_at >= 4
        && is_equals(use_at - 1)
        && matches!(trees[use_at - 2], TokenTree::Ident(_))
        && is_ident(use_at - 3, "mut")
        && is_ident(use_at - 4, "let")
    {
        use_at - 4
    } else {
        use_at
    };
    starts_statement(trees, start).then_some(start)
}

/// Whether a statement can start at `index`: at the top, after `;`, or after a block.
fn starts_statement(trees: &[proc_macro2::TokenTree], index: usize) -> bool {
    match index.checked_sub(1).map(|before| &trees[before]) {
        None => true,
        Some(proc_macro2::TokenTree::Punct(punct)) => punct.as_char() == ';',
        Some(proc_macro2::TokenTree::Group(group)) => {
            group.delimiter() == proc_macro2::Delimiter::Brace
        }
        Some(_) => false,
    }
}

/// Whether `return` appears in `trees`, at any depth (`has_return`, by index, says it for each
/// tree), outside the block of a statement `if <context>.is_aborted() { .. }` with no `else`.
/// `statement_start` is where the statement using `next` starts: a `return` there is its own,
/// not one before it.
fn returns_before(
    trees: &[proc_macro2::TokenTree],
    has_return: &[bool],
    statement_start: usize,
    context: Option<&str>,
    first_context_at: Option<usize>,
) -> bool {
    trees.iter().enumerate().any(|(index, tree)| {
        has_return[index]
            && match tree {
                proc_macro2::TokenTree::Group(_) => !context.is_some_and(|context| {
                    is_aborted_branch(trees, index, context, first_context_at)
                }),
                _ => index != statement_start,
            }
    })
}

/// Whether the group at `index` is the block of `if <context>.is_aborted() { .. }`, a statement
/// with no `else`: the turn is already aborted in it, which settles every path through it. Only
/// the context parameter's own name counts: `handle.is_aborted()` says nothing about the turn.
/// And only when the condition is the name's first mention in the body: before it, a `let` or a
/// pattern could have bound the name to another value, which only the full analysis can tell.
fn is_aborted_branch(
    trees: &[proc_macro2::TokenTree],
    index: usize,
    context: &str,
    first_context_at: Option<usize>,
) -> bool {
    use proc_macro2::TokenTree;

    let Some(condition_at) = index.checked_sub(5) else {
        return false;
    };
    if first_context_at != Some(condition_at + 1) {
        return false;
    }
    let shape = matches!(
        &trees[condition_at..=index],
        [
            TokenTree::Ident(if_keyword),
            TokenTree::Ident(receiver),
            TokenTree::Punct(dot),
            TokenTree::Ident(method),
            TokenTree::Group(arguments),
            TokenTree::Group(block),
        ] if *if_keyword == "if"
            && *receiver == context
            && dot.as_char() == '.'
            && *method == "is_aborted"
            && arguments.delimiter() == proc_macro2::Delimiter::Parenthesis
            && arguments.stream().is_empty()
            && block.delimiter() == proc_macro2::Delimiter::Brace
    );
    let has_else = matches!(trees.get(index + 1), Some(TokenTree::Ident(word)) if *word == "else");
    shape && !has_else && starts_statement(trees, condition_at)
}

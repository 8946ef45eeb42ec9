//! The rules of a middleware state declaration, checked on what `parse` read: a non-generic
//! struct, known options given once each, values of the right form, and no option that only
//! persistent state uses on a transient one.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Path};

use super::parse::{ItemKind, ParsedState, RawOption};

const OPTIONS: [&str; 6] = [
    "persistent",
    "scope",
    "version",
    "key",
    "migrate",
    "default_on_mismatch",
];

/// Where persistent state is stored.
#[derive(Clone, Copy)]
pub(super) enum Scope {
    Session,
    Thread,
}

/// The options, checked. Absent options take their defaults in `expand`.
#[derive(Default)]
pub(super) struct Options {
    pub(super) persistent: Option<Span>,
    pub(super) scope: Option<Scope>,
    pub(super) version: Option<u32>,
    pub(super) key: Option<LitStr>,
    pub(super) migrate: Option<Path>,
    pub(super) default_on_mismatch: bool,
}

pub(super) fn options(parsed: &ParsedState, errors: &mut Vec<syn::Error>) -> Options {
    check_item(parsed, errors);
    let mut options = Options::default();
    // Options that only persistent state uses, with where they were written.
    let mut persistent_only: Vec<(&'static str, Span)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for option in &parsed.options {
        let name = option.name.to_string();
        if seen.contains(&name) {
            errors.push(syn::Error::new(
                option.name.span(),
                format!("`{name}` is given twice; keep one of them"),
            ));
            continue;
        }
        seen.push(name.clone());
        match name.as_str() {
            "persistent" => {
                if flag(option, "persistent", errors) {
                    options.persistent = Some(option.name.span());
                }
            }
            "default_on_mismatch" => {
                if flag(option, "default_on_mismatch", errors) {
                    options.default_on_mismatch = true;
                    persistent_only.push(("default_on_mismatch", option.name.span()));
                }
            }
            "scope" => {
                options.scope = scope(option, errors);
                persistent_only.push(("scope", option.name.span()));
            }
            "version" => {
                options.version = version(option, errors);
                persistent_only.push(("version", option.name.span()));
            }
            "key" => options.key = key(option, errors),
            "migrate" => {
                options.migrate = migrate(option, errors);
                persistent_only.push(("migrate", option.name.span()));
            }
            _ => errors.push(syn::Error::new(
                option.name.span(),
                format!(
                    "unknown option `{name}`{}; `#[middleware_state(..)]` takes `persistent`, \
                     `scope = session | thread`, `version = N`, `key = \"...\"`, \
                     `migrate = path::to::fn` and `default_on_mismatch`",
                    suggestion(&name, &OPTIONS)
                ),
            )),
        }
    }
    if options.persistent.is_none() {
        for (name, span) in persistent_only {
            let why = match name {
                "scope" => {
                    "transient state lives for one turn and is stored nowhere, so it has no scope"
                }
                "version" => {
                    "transient state is never stored, so no record carries a schema version"
                }
                _ => "transient state is never stored, so it is never read back in another shape",
            };
            errors.push(syn::Error::new(
                span,
                format!(
                    "`{name}` is meaningless without `persistent`: {why}; add `persistent` to \
                     keep this state between turns, or remove `{name}`"
                ),
            ));
        }
    }
    options
}

fn check_item(parsed: &ParsedState, errors: &mut Vec<syn::Error>) {
    let ident = &parsed.ident;
    if let ItemKind::Other(what, span) = parsed.kind {
        errors.push(syn::Error::new(
            span,
            format!(
                "`#[derive(MiddlewareState)]` needs a struct, and `{ident}` is {what}; wrap it \
                 in one: `#[derive(MiddlewareState)] struct {ident}State {{ value: {ident} }}`"
            ),
        ));
    }
    if !parsed.generics.params.is_empty() {
        errors.push(syn::Error::new(
            parsed.generics.span(),
            format!(
                "a middleware state type cannot be generic: its key and its stored JSON name one \
                 concrete type, and `{ident}` has parameters; remove them and name concrete \
                 types in the fields (declare one struct per variant you need)"
            ),
        ));
    }
}

fn flag(option: &RawOption, name: &str, errors: &mut Vec<syn::Error>) -> bool {
    match &option.value {
        None => true,
        Some(value) => {
            errors.push(syn::Error::new(
                value.span(),
                format!(
                    "`{name}` takes no value; write `{name}` alone (leave it out for the default)"
                ),
            ));
            false
        }
    }
}

fn scope(option: &RawOption, errors: &mut Vec<syn::Error>) -> Option<Scope> {
    const USAGE: &str = "write `scope = session` (shared by every thread of the session) or \
                         `scope = thread` (one copy per thread, copied on fork; the default)";
    let Some(value) = &option.value else {
        errors.push(syn::Error::new(
            option.name.span(),
            format!("`scope` needs a value; {USAGE}"),
        ));
        return None;
    };
    let written = match value {
        Expr::Path(path) => path.path.get_ident().map(ToString::to_string),
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => Some(text.value()),
        _ => None,
    };
    match written.as_deref() {
        Some("session") => Some(Scope::Session),
        Some("thread") => Some(Scope::Thread),
        Some(other) => {
            errors.push(syn::Error::new(
                value.span(),
                format!(
                    "unknown scope `{other}`{}; {USAGE}",
                    if other.eq_ignore_ascii_case("branch") {
                        // HPD.Agent called threads branches before v0.5.5.
                        " (did you mean `thread`? a branch is a thread here)".to_owned()
                    } else {
                        suggestion(other, &["session", "thread"])
                    }
                ),
            ));
            None
        }
        None => {
            errors.push(syn::Error::new(
                value.span(),
                format!("expected a scope; {USAGE}"),
            ));
            None
        }
    }
}

fn version(option: &RawOption, errors: &mut Vec<syn::Error>) -> Option<u32> {
    const USAGE: &str = "write the schema version as a positive integer, as in `version = 2`";
    let Some(value) = &option.value else {
        errors.push(syn::Error::new(
            option.name.span(),
            format!("`version` needs a value; {USAGE}"),
        ));
        return None;
    };
    let Expr::Lit(ExprLit {
        lit: Lit::Int(number),
        ..
    }) = value
    else {
        errors.push(syn::Error::new(
            value.span(),
            format!("expected an integer literal; {USAGE}"),
        ));
        return None;
    };
    match number.base10_parse::<u32>() {
        Ok(0) => {
            errors.push(syn::Error::new(
                number.span(),
                "there is no version 0: versions start at 1 (the default), so the first shape \
                 of a state is `version = 1`; write `version = 1` or leave `version` out",
            ));
            None
        }
        Ok(version) => Some(version),
        Err(_) => {
            errors.push(syn::Error::new(
                number.span(),
                format!("the version must fit in a `u32`; {USAGE}"),
            ));
            None
        }
    }
}

fn key(option: &RawOption, errors: &mut Vec<syn::Error>) -> Option<LitStr> {
    const USAGE: &str = "write the stored key as a string, as in `key = \"acme.circuit_breaker\"` \
                         (leave it out to use the type's module path and name)";
    match &option.value {
        Some(Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        })) => {
            if text.value().trim().is_empty() {
                errors.push(syn::Error::new(
                    text.span(),
                    format!("the key is empty; {USAGE}"),
                ));
                return None;
            }
            Some(text.clone())
        }
        Some(other) => {
            errors.push(syn::Error::new(
                other.span(),
                format!("expected a string literal; {USAGE}"),
            ));
            None
        }
        None => {
            errors.push(syn::Error::new(
                option.name.span(),
                format!("`key` needs a value; {USAGE}"),
            ));
            None
        }
    }
}

fn migrate(option: &RawOption, errors: &mut Vec<syn::Error>) -> Option<Path> {
    const USAGE: &str = "name a function `fn(from_version: u32, json: serde_json::Value) -> \
                         Result<Self, E>`, as in `migrate = Self::upgrade`";
    match &option.value {
        Some(Expr::Path(path)) => Some(path.path.clone()),
        Some(other) => {
            errors.push(syn::Error::new(
                other.span(),
                format!("expected a path to a function; {USAGE}"),
            ));
            None
        }
        None => {
            errors.push(syn::Error::new(
                option.name.span(),
                format!("`migrate` needs a value; {USAGE}"),
            ));
            None
        }
    }
}

fn suggestion(written: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|candidate| (strsim::jaro_winkler(written, candidate), candidate))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|left, right| left.0.total_cmp(&right.0))
        .map(|(_, candidate)| format!(" (did you mean `{candidate}`?)"))
        .unwrap_or_default()
}

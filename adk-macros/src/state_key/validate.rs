//! The scope rules of a state key, checked on the literal: a known prefix (`app:`, `user:`,
//! `temp:` or none) and a non-empty name.

use syn::LitStr;

const SCOPES: [&str; 3] = ["app", "user", "temp"];

/// The contention policies `on_conflict =` accepts, with the marker type each declares.
pub(super) const POLICIES: [(&str, &str); 6] = [
    ("refuse", "Refuse"),
    ("last_writer_wins", "LastWriterWins"),
    ("add", "Add"),
    ("union", "Union"),
    ("max", "Max"),
    ("merge", "MergeWith"),
];

/// The marker type of a known policy written as `name` (`merge` with its function, the others
/// without), or an error naming the fix.
pub(super) fn check_policy(
    policy: &super::parse::ParsedPolicy,
    errors: &mut Vec<syn::Error>,
) -> Option<&'static str> {
    let name = policy.name.to_string();
    let Some((_, marker)) = POLICIES.iter().find(|(known, _)| *known == name) else {
        let suggestion = POLICIES
            .iter()
            .map(|(known, _)| (strsim::jaro_winkler(&name, known), known))
            .filter(|(score, _)| *score > 0.7)
            .max_by(|left, right| left.0.total_cmp(&right.0))
            .map(|(_, known)| format!(" (did you mean `{known}`?)"))
            .unwrap_or_default();
        errors.push(syn::Error::new(
            policy.name.span(),
            format!(
                "unknown contention policy `{name}`{suggestion}; a key's `on_conflict` is \
                 `refuse` (the default), `last_writer_wins`, `add`, `union`, `max` or \
                 `merge(your_fn)`"
            ),
        ));
        return None;
    };
    match (name.as_str(), &policy.function) {
        ("merge", None) => {
            errors.push(syn::Error::new(
                policy.name.span(),
                "`on_conflict = merge` needs the function that merges: \
                 `on_conflict = merge(your_fn)`, with `fn your_fn(stored: Option<T>, operand: T) -> T`",
            ));
            None
        }
        ("merge", Some(_)) | (_, None) => Some(marker),
        (_, Some(_)) => {
            errors.push(syn::Error::new(
                policy.name.span(),
                format!("`{name}` takes no function; only `merge(your_fn)` does"),
            ));
            None
        }
    }
}

pub(super) fn check_key(literal: &LitStr, errors: &mut Vec<syn::Error>) {
    let key = literal.value();
    let (prefix, name) = match key.split_once(':') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key.as_str()),
    };
    if let Some(prefix) = prefix
        && !SCOPES.contains(&prefix)
    {
        let suggestion = SCOPES
            .iter()
            .map(|scope| (strsim::jaro_winkler(prefix, scope), scope))
            .filter(|(score, _)| *score > 0.7)
            .max_by(|left, right| left.0.total_cmp(&right.0))
            .map(|(_, scope)| format!(" (did you mean `{scope}:{name}`?)"))
            .unwrap_or_default();
        errors.push(syn::Error::new(
            literal.span(),
            format!(
                "unknown state scope prefix `{prefix}:` in `{key}`{suggestion}; a key's scope is \
                 `app:`, `user:`, `temp:`, or no prefix for session state"
            ),
        ));
        return;
    }
    if name.is_empty() {
        let shown = prefix.map_or_else(String::new, |prefix| format!("{prefix}:"));
        errors.push(syn::Error::new(
            literal.span(),
            format!(
                "the state key `{key}` has an empty name; write one after the scope, as in \
                 `{shown}theme`"
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;

    use super::*;

    fn messages(key: &str) -> Vec<String> {
        let mut errors = Vec::new();
        check_key(&LitStr::new(key, Span::call_site()), &mut errors);
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn every_scope_and_no_prefix_is_accepted() {
        for key in ["step", "app:motd", "user:theme", "temp:scratch"] {
            assert!(messages(key).is_empty(), "{key}");
        }
    }

    #[test]
    fn a_misspelt_scope_is_refused_with_the_likely_fix() {
        let found = messages("usr:theme");
        assert_eq!(found.len(), 1);
        assert!(
            found[0].contains("(did you mean `user:theme`?)"),
            "{found:?}"
        );
    }

    #[test]
    fn an_empty_name_is_refused_with_or_without_a_scope() {
        assert!(messages("")[0].contains("empty name"));
        assert!(messages("user:")[0].contains("as in `user:theme`"));
    }
}

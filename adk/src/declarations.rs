//! Every key the program declares, collected program-wide, and the check that no two of them
//! disagree.
//!
//! A proc macro sees one invocation at a time, so `stash_key!` in one module cannot know that
//! another module declared the same path with another type, or a parent of it (writing the
//! parent erases the child). Each declaring macro therefore registers a [`Declaration`]
//! (kind, path, type, file:line) with the linker through the `inventory` crate, and
//! [`check`] compares every declaration of a kind once the program runs, before any turn does:
//! the runner calls it when it is built, in every build profile (`TurnRunnerBuilder::try_build`
//! returns the report as an error, `build` panics with it), and a test suite calls
//! [`crate::stash::assert_declared_keys_agree`] in one line.
//!
//! The mechanism is not tied to the stash: another macro that declares keys of its own kind
//! (middleware state, say) registers declarations with its own [`DeclarationKind`] and checks
//! them with [`check`].
//!
//! ```rust,standalone_crate
//! use adk::declarations::{self, DeclarationKind};
//!
//! const COUNT: adk::StashKey<u32> = adk::stash_key!("my-org.count" => u32);
//!
//! assert!(declarations::all(DeclarationKind::STASH_KEY).any(|key| key.path == COUNT.path()));
//! assert!(declarations::check(DeclarationKind::STASH_KEY).is_ok());
//! ```

use std::collections::BTreeMap;
use std::fmt;

/// What a declaration declares; paths of different kinds never conflict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeclarationKind(pub &'static str);

impl DeclarationKind {
    /// Keys declared with `stash_key!` and `stash_keys!`.
    pub const STASH_KEY: Self = Self("stash key");
}

impl fmt::Display for DeclarationKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.0)
    }
}

/// One declared key: where it was written, its dot-path, and the type stored under it.
#[derive(Debug)]
pub struct Declaration {
    /// What is declared.
    pub kind: DeclarationKind,
    /// The dot-path, such as `"my-org.count"`.
    pub path: &'static str,
    /// `std::any::type_name` of the stored type; a function because type names are not `const`.
    pub type_name: fn() -> &'static str,
    /// The file of the declaration, as `file!()` gives it.
    pub file: &'static str,
    /// The line of the declaration.
    pub line: u32,
}

impl Declaration {
    /// The declaration's location as `file:line`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

inventory::collect!(Declaration);

/// What [`Declaration::type_name`] reports for a key declared `stash_key!("a.b" => _)`: its type
/// is inferred where it is used, which a declaration cannot name. Such a key takes part in the
/// parent/child check, and agrees with any type declared for the same path.
pub const INFERRED_TYPE: &str = "_";

/// [`INFERRED_TYPE`], as the function a [`Declaration`] holds.
pub fn inferred_type() -> &'static str {
    INFERRED_TYPE
}

/// Every declaration of `kind` linked into this program, in no particular order.
pub fn all(kind: DeclarationKind) -> impl Iterator<Item = &'static Declaration> {
    inventory::iter::<Declaration>
        .into_iter()
        .filter(move |declaration| declaration.kind == kind)
}

/// Two declarations that cannot both hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// One path declared with two types: a value written as one is read back as the other.
    TwoTypes {
        /// The path both declare.
        path: &'static str,
        /// The first declaration, as `(type, file:line)`.
        first: (&'static str, String),
        /// The second declaration, as `(type, file:line)`.
        second: (&'static str, String),
    },
    /// One path declared twice, with one type, at two places: two constants that must be kept
    /// in step by hand, which drift apart on the next edit of either.
    DeclaredTwice {
        /// The path both declare.
        path: &'static str,
        /// The type both declare.
        type_name: &'static str,
        /// The first declaration's `file:line`.
        first: String,
        /// The second declaration's `file:line`.
        second: String,
    },
    /// One key claimed by two types whose records must not mix (checked by [`check_distinct`]).
    SharedKey {
        /// The key both declare.
        path: &'static str,
        /// The first declaration, as `(type, file:line)`.
        first: (&'static str, String),
        /// The second declaration, as `(type, file:line)`.
        second: (&'static str, String),
    },
    /// A path and a path under it: setting the parent replaces the child's value.
    ParentAndChild {
        /// The parent path and its declaration's `file:line`.
        parent: (&'static str, String),
        /// The child path and its declaration's `file:line`.
        child: (&'static str, String),
    },
}

impl fmt::Display for Conflict {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TwoTypes {
                path,
                first,
                second,
            } => write!(
                formatter,
                "`{path}` is declared as `{}` at {} and as `{}` at {}; a value written as one \
                 is read back as the other: give one of them another path, or declare the key \
                 once and share the constant",
                first.0, first.1, second.0, second.1
            ),
            Self::DeclaredTwice {
                path,
                type_name,
                first,
                second,
            } => write!(
                formatter,
                "`{path}` is declared twice as `{type_name}`, at {first} and at {second}: \
                 declare the key once and share the constant, so the two cannot drift apart"
            ),
            Self::SharedKey {
                path,
                first,
                second,
            } => write!(
                formatter,
                "`{path}` is the key of both `{}` (declared at {}) and `{}` (declared at {}); \
                 their stored records would overwrite each other: give one of them its own key \
                 with `#[middleware_state(key = \"...\")]`",
                first.0, first.1, second.0, second.1
            ),
            Self::ParentAndChild { parent, child } => write!(
                formatter,
                "`{}` (declared at {}) is under `{}` (declared at {}): setting the parent \
                 replaces the child's value; rename one of them so neither path is a prefix of \
                 the other",
                child.0, child.1, parent.0, parent.1
            ),
        }
    }
}

/// Every conflict among the declarations of one kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Conflicts {
    /// The kind checked.
    pub kind: DeclarationKind,
    /// What disagrees, one entry per pair.
    pub conflicts: Vec<Conflict>,
}

impl fmt::Display for Conflicts {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "declared {}s disagree ({} conflict{}):",
            self.kind,
            self.conflicts.len(),
            if self.conflicts.len() == 1 { "" } else { "s" }
        )?;
        for conflict in &self.conflicts {
            write!(formatter, "\n  - {conflict}")?;
        }
        Ok(())
    }
}

/// Checks that no two declarations of `kind` disagree: no path with two types, no path declared
/// twice at two places, no path under another declared path. A key declared with an inferred
/// type (`stash_key!("a.b" => _)`, written where it is used) may repeat a declared path.
pub fn check(kind: DeclarationKind) -> Result<(), Conflicts> {
    check_with(kind, conflicts_among)
}

/// Checks that no key of `kind` is declared by two types. Unlike [`check`], keys are opaque
/// names here: `a.b` and `a.b.c` do not conflict.
pub fn check_distinct(kind: DeclarationKind) -> Result<(), Conflicts> {
    check_with(kind, shared_keys_among)
}

/// The declarations of `kind` as `(path, type, location)` entries, judged by `find_conflicts`.
fn check_with(
    kind: DeclarationKind,
    find_conflicts: fn(Entries) -> Vec<Conflict>,
) -> Result<(), Conflicts> {
    let entries: Entries = all(kind)
        .map(|declaration| {
            (
                declaration.path,
                (declaration.type_name)(),
                declaration.location(),
            )
        })
        .collect();
    let conflicts = find_conflicts(entries);
    if conflicts.is_empty() {
        Ok(())
    } else {
        Err(Conflicts { kind, conflicts })
    }
}

/// `(path, type, location)` of each declaration.
type Entries = Vec<(&'static str, &'static str, String)>;

/// The keys declared by two types among `(key, type, location)` entries, sorted so a report is
/// the same whatever order the linker gave.
fn shared_keys_among(
    entries: impl IntoIterator<Item = (&'static str, &'static str, String)>,
) -> Vec<Conflict> {
    let mut entries: Vec<_> = entries.into_iter().collect();
    entries.sort();
    entries.dedup_by(|later, earlier| later.0 == earlier.0 && later.1 == earlier.1);
    entries
        .windows(2)
        .filter(|pair| pair[0].0 == pair[1].0)
        .map(|pair| Conflict::SharedKey {
            path: pair[0].0,
            first: (pair[0].1, pair[0].2.clone()),
            second: (pair[1].1, pair[1].2.clone()),
        })
        .collect()
}

/// The conflicts among `(path, type, location)` entries. Sorted by path first, so a report is
/// the same whatever order the linker gave.
fn conflicts_among(
    entries: impl IntoIterator<Item = (&'static str, &'static str, String)>,
) -> Vec<Conflict> {
    // Per path, the first declaration of each type.
    let mut by_path: BTreeMap<&'static str, Vec<(&'static str, String)>> = BTreeMap::new();
    let mut twice = Vec::new();
    let mut sorted: Vec<_> = entries.into_iter().collect();
    sorted.sort();
    // One declaration expanded more than once (a `macro_rules!` used twice) has one location.
    sorted.dedup();
    for (path, type_name, location) in sorted {
        let types = by_path.entry(path).or_default();
        if let Some((_, first)) = types.iter().find(|(seen, _)| *seen == type_name) {
            if type_name != INFERRED_TYPE {
                twice.push(Conflict::DeclaredTwice {
                    path,
                    type_name,
                    first: first.clone(),
                    second: location,
                });
            }
            continue;
        }
        // An inferred type cannot disagree with a written one: keep a written type when there
        // is one, and the inferred declaration only to locate the path.
        if type_name == INFERRED_TYPE && !types.is_empty() {
            continue;
        }
        if let [(INFERRED_TYPE, _)] = types.as_slice() {
            types.clear();
        }
        types.push((type_name, location));
    }
    let mut conflicts = twice;
    for (path, types) in &by_path {
        for pair in types.windows(2) {
            conflicts.push(Conflict::TwoTypes {
                path,
                first: pair[0].clone(),
                second: pair[1].clone(),
            });
        }
    }
    // A child is reported against its nearest declared parent only: one mistake, one entry.
    for (&child, child_types) in &by_path {
        let mut prefix = child;
        while let Some(cut) = prefix.rfind('.') {
            prefix = &child[..cut];
            if let Some(parent_types) = by_path.get(prefix) {
                conflicts.push(Conflict::ParentAndChild {
                    parent: (prefix, parent_types[0].1.clone()),
                    child: (child, child_types[0].1.clone()),
                });
                break;
            }
        }
    }
    conflicts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(
        path: &'static str,
        ty: &'static str,
        line: u32,
    ) -> (&'static str, &'static str, String) {
        (path, ty, format!("src/lib.rs:{line}"))
    }

    #[test]
    fn a_middleware_state_key_of_two_types_is_reported_naming_both_types() {
        let found = shared_keys_among([
            entry("acme.plan", "app::Plan", 4),
            entry("acme.plan", "app::OldPlan", 12),
            entry("acme.plan.steps", "app::Steps", 20),
        ]);
        assert_eq!(found.len(), 1, "{found:#?}");
        let text = found[0].to_string();
        for fragment in [
            "`acme.plan`",
            "`app::OldPlan` (declared at src/lib.rs:12)",
            "`app::Plan` (declared at src/lib.rs:4)",
            "#[middleware_state(key = ",
        ] {
            assert!(text.contains(fragment), "{text}");
        }
    }

    #[test]
    fn one_path_declared_twice_with_one_type_names_both_places() {
        let found = conflicts_among([entry("a.count", "u32", 9), entry("a.count", "u32", 1)]);
        assert_eq!(
            found,
            [Conflict::DeclaredTwice {
                path: "a.count",
                type_name: "u32",
                first: "src/lib.rs:1".to_owned(),
                second: "src/lib.rs:9".to_owned(),
            }]
        );
        let text = found[0].to_string();
        assert!(
            text.contains("at src/lib.rs:1 and at src/lib.rs:9"),
            "{text}"
        );
    }

    #[test]
    fn one_declaration_expanded_twice_is_one_declaration() {
        let found = conflicts_among([entry("a.count", "u32", 4), entry("a.count", "u32", 4)]);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn an_inferred_type_agrees_with_any_written_type_of_its_path() {
        let found = conflicts_among([
            entry("a.count", INFERRED_TYPE, 1),
            entry("a.count", "u32", 5),
            entry("a.total", "u64", 7),
            entry("a.total", INFERRED_TYPE, 9),
        ]);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_key_with_an_inferred_type_is_still_checked_against_parents_and_children() {
        let found = conflicts_among([
            entry("a.policy", INFERRED_TYPE, 1),
            entry("a.policy.mode", "String", 4),
        ]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].to_string().contains("`a.policy.mode` (declared at src/lib.rs:4) is under `a.policy` (declared at src/lib.rs:1)"));
    }

    #[test]
    fn one_path_with_two_types_names_both_declarations() {
        let found = conflicts_among([entry("a.count", "u32", 1), entry("a.count", "u64", 9)]);
        assert_eq!(found.len(), 1);
        let text = found[0].to_string();
        for fragment in [
            "`a.count`",
            "`u32` at src/lib.rs:1",
            "`u64` at src/lib.rs:9",
        ] {
            assert!(text.contains(fragment), "{text}");
        }
    }

    #[test]
    fn a_child_is_reported_against_its_nearest_parent_with_both_locations() {
        let found = conflicts_among([
            entry("a.policy", "String", 1),
            entry("a.policy.mode.kind", "String", 5),
            entry("a.policy.mode", "String", 3),
            entry("a.policyx", "String", 7),
        ]);
        assert_eq!(found.len(), 2, "{found:#?}");
        let texts: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(texts[0].contains("`a.policy.mode` (declared at src/lib.rs:3) is under `a.policy` (declared at src/lib.rs:1)"), "{texts:#?}");
        assert!(
            texts[1].contains(
                "`a.policy.mode.kind` (declared at src/lib.rs:5) is under `a.policy.mode`"
            ),
            "{texts:#?}"
        );
    }
}

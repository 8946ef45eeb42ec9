//! The `Registry`: a tree of JSON values addressed by dot-paths, owned by one context.

use std::any::type_name;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::{JsonKind, RejectedValue, StashError};
use super::path::{DotPath, StashPath};
use super::serialize::{SerializeProblem, to_bounded_value};
use super::shape::{ShapeProblem, check_shape};

/// The stash: a scratchpad of JSON values that middleware shares through a context.
///
/// Values go in as any `Serialize` type and come out as any `DeserializeOwned` type. Paths are
/// dot-separated and every dot is real nesting: `set("my-org.count", 5)` stores
/// `{"my-org":{"count":5}}`. What you read out is a copy and what you write in becomes the
/// store's own, so nothing you hold aliases the store.
///
/// ```
/// use adk::Registry;
/// use serde_json::json;
///
/// let mut stash = Registry::new();
/// stash.set("my-org.retrieval.chunks", 12_u32)?;
/// stash.set("my-org.policy", "strict")?;
///
/// assert_eq!(stash.get::<u32>("my-org.retrieval.chunks")?, Some(12));
/// assert!(stash.has("my-org.policy"));
/// assert_eq!(stash.keys(), ["my-org.retrieval.chunks", "my-org.policy"]);
/// assert_eq!(
///     stash.all(),
///     json!({"my-org": {"retrieval": {"chunks": 12}, "policy": "strict"}})
/// );
/// # Ok::<(), adk::StashError>(())
/// ```
///
/// Rules, each enforced with a [`StashError`] that names the path:
/// - a segment is never empty and never all digits (arrays are opaque leaves: read the whole
///   array, change it, set it back);
/// - writing at a path replaces whatever is there, children included (the second writer wins);
/// - writing beneath a value that is not an object is refused and changes nothing;
/// - reading through a value that is not an object finds nothing (`Ok(None)`);
/// - the tree never nests deeper than [`MAX_DEPTH`](super::MAX_DEPTH) levels.
#[derive(Debug, Default, PartialEq)]
pub struct Registry {
    // Depth stays within `MAX_DEPTH`, so the recursive `Clone`, `Drop` and `Debug` of
    // `serde_json::Value` are safe on any stack.
    root: Map<String, Value>,
}

impl Clone for Registry {
    /// An empty stash (most turns') is made, not copied: cloning even an empty map is an
    /// out-of-line call of about 120 instructions, and a dispatch clones its turn's stash.
    #[inline]
    fn clone(&self) -> Self {
        if self.root.is_empty() {
            Self::default()
        } else {
            Self {
                root: self.root.clone(),
            }
        }
    }
}

impl Registry {
    /// An empty stash.
    ///
    /// ```
    /// let stash = adk::Registry::new();
    /// assert!(stash.keys().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// A stash seeded from the nested form that [`all`](Self::all) returns, for example a
    /// stash persisted at the end of one turn and handed to the next.
    ///
    /// The seed must be an object whose keys (down to each leaf) are valid path segments: a
    /// flat key such as `"my-org.count"` is refused, with the nested form
    /// `{"my-org":{"count":5}}` shown in the error. Every error hands the seed back.
    ///
    /// ```
    /// use adk::{Registry, StashError};
    /// use serde_json::json;
    ///
    /// let stash = Registry::from_nested(json!({"my-org": {"count": 5}}))?;
    /// assert_eq!(stash.get::<u32>("my-org.count")?, Some(5));
    ///
    /// let error = Registry::from_nested(json!({"my-org.count": 5})).unwrap_err();
    /// assert!(error.to_string().contains(r#"{"my-org":{"count":5}}"#));
    /// # Ok::<(), StashError>(())
    /// ```
    pub fn from_nested(seed: Value) -> Result<Self, StashError> {
        if !seed.is_object() {
            return Err(StashError::SeedNotObject {
                found: JsonKind::of(&seed),
                seed: RejectedValue::new(seed),
            });
        }
        if let Err(problem) = check_shape(&seed, 0, "") {
            let seed = RejectedValue::new(seed);
            return Err(match problem {
                ShapeProblem::TooDeep { location } => StashError::SeedTooDeep { location, seed },
                ShapeProblem::BadKey { location, problem } => StashError::InvalidSeedKey {
                    location,
                    problem,
                    seed,
                },
            });
        }
        match seed {
            Value::Object(root) => Ok(Self { root }),
            other => Err(StashError::SeedNotObject {
                found: JsonKind::of(&other),
                seed: RejectedValue::new(other),
            }),
        }
    }

    /// A deep copy to seed a dispatch's stash from a turn's: the runner calls this when a
    /// dispatch begins. The two stores are separate from then on; nothing syncs in either
    /// direction. Same as `clone()`, named for the intent.
    ///
    /// ```
    /// let mut turn = adk::Registry::new();
    /// turn.set("my-org.policy", "strict")?;
    /// let mut dispatch = turn.seed_copy();
    /// dispatch.set("my-org.iteration", 1)?;
    /// assert!(!turn.has("my-org.iteration"));
    /// # Ok::<(), adk::StashError>(())
    /// ```
    pub fn seed_copy(&self) -> Self {
        self.clone()
    }

    /// Reads the value at `path` as `T`; `Ok(None)` when nothing is stored there.
    ///
    /// With a [`StashKey<T>`](crate::StashKey) the type comes from the key; with a string the
    /// caller names it. A value of another shape is a [`StashError::WrongType`] naming the
    /// path, the Rust type asked for and the JSON kind found. Reading through a value that is
    /// not an object (`"s.length"` when `s` is a string) finds nothing.
    ///
    /// ```
    /// let mut stash = adk::Registry::new();
    /// stash.set("my-org.count", 5)?;
    /// assert_eq!(stash.get::<u32>("my-org.count")?, Some(5));
    /// assert_eq!(stash.get::<u32>("my-org.missing")?, None);
    /// assert!(stash.get::<String>("my-org.count").is_err());
    /// # Ok::<(), adk::StashError>(())
    /// ```
    pub fn get<T: DeserializeOwned>(
        &self,
        path: impl StashPath<T>,
    ) -> Result<Option<T>, StashError> {
        let path = path.as_stash_path();
        let Some(value) = self.get_ref(path)? else {
            return Ok(None);
        };
        // Deserializing from `&Value` reads the stored tree in place instead of cloning it.
        match T::deserialize(value) {
            Ok(read) => Ok(Some(read)),
            Err(source) => Err(StashError::WrongType {
                path: path.to_owned(),
                expected: type_name::<T>(),
                found: JsonKind::of(value),
                source,
            }),
        }
    }

    /// Borrows the JSON value at `path` without copying it; `Ok(None)` when nothing is stored
    /// there. The shared borrow cannot change the store.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let mut stash = adk::Registry::new();
    /// stash.set("my-org.items", vec!["a", "b"])?;
    /// assert_eq!(stash.get_ref("my-org.items")?, Some(&json!(["a", "b"])));
    /// # Ok::<(), adk::StashError>(())
    /// ```
    pub fn get_ref(&self, path: impl AsRef<str>) -> Result<Option<&Value>, StashError> {
        let path = path.as_ref();
        let path = DotPath::parse(path).map_err(|problem| problem.into_error(path))?;
        Ok(self.find(path))
    }

    /// Whether a value (`null` included) is stored at `path`. An invalid path holds nothing.
    ///
    /// ```
    /// let mut stash = adk::Registry::new();
    /// stash.set("my-org.override", ())?;
    /// assert!(stash.has("my-org.override"));
    /// assert!(stash.has("my-org"));
    /// assert!(!stash.has("my-org.missing"));
    /// assert!(!stash.has("my-org..override"));
    /// # Ok::<(), adk::StashError>(())
    /// ```
    pub fn has(&self, path: impl AsRef<str>) -> bool {
        DotPath::parse(path.as_ref()).is_ok_and(|path| self.find(path).is_some())
    }

    /// Stores `value` at `path`, replacing whatever was there, children included, and creating
    /// the objects on the way.
    ///
    /// Refused, with nothing changed: an invalid path, a path beneath a value that is not an
    /// object, a value that cannot be represented as JSON, one whose object keys could not be
    /// addressed by paths, or one nesting beyond [`MAX_DEPTH`](super::MAX_DEPTH).
    ///
    /// `set` takes the value it stores; to keep yours, pass a reference (`&value`), since a
    /// reference to a `Serialize` type is `Serialize` too. Only a string path can take a
    /// reference: a `StashKey<T>` accepts exactly `T`.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let mut stash = adk::Registry::new();
    /// stash.set("my-org.count", 5)?;
    /// stash.set("my-org", "replaced")?;
    /// assert_eq!(stash.all(), json!({"my-org": "replaced"}));
    /// assert!(stash.set("my-org.count", 6).is_err());
    /// # Ok::<(), adk::StashError>(())
    /// ```
    pub fn set<T: Serialize>(
        &mut self,
        path: impl StashPath<T>,
        value: T,
    ) -> Result<(), StashError> {
        let path_text = path.as_stash_path();
        let path = DotPath::parse(path_text).map_err(|problem| problem.into_error(path_text))?;
        let value =
            to_bounded_value(&value, path.segment_count()).map_err(|problem| match problem {
                SerializeProblem::TooDeep => StashError::ValueTooDeep {
                    path: path_text.to_owned(),
                    segments: path.segment_count(),
                },
                SerializeProblem::Failed(source) => StashError::Serialize {
                    path: path_text.to_owned(),
                    type_name: type_name::<T>(),
                    source,
                },
            })?;
        // The serializer already stopped at the depth limit; this walk is the authority on the
        // stored shape, and also checks the object keys.
        if let Err(problem) = check_shape(&value, path.segment_count(), path_text) {
            return Err(match problem {
                ShapeProblem::TooDeep { .. } => StashError::ValueTooDeep {
                    path: path_text.to_owned(),
                    segments: path.segment_count(),
                },
                ShapeProblem::BadKey { location, problem } => StashError::InvalidKeyInValue {
                    path: path_text.to_owned(),
                    location,
                    problem,
                    value: RejectedValue::new(value),
                },
            });
        }
        write(&mut self.root, path.as_str(), value, 0).map_err(|blocked| {
            StashError::BeneathNonObject {
                path: path_text.to_owned(),
                // `path_end` sits just before a dot, so this never falls back in practice.
                blocking_path: path_text
                    .get(..blocked.path_end)
                    .unwrap_or(path_text)
                    .to_owned(),
                found: blocked.found,
                value: RejectedValue::new(blocked.value),
            }
        })
    }

    /// Removes the value at `path`, children included, and returns it; `Ok(None)` when nothing
    /// was stored there. Emptied parents stay, as empty objects.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let mut stash = adk::Registry::new();
    /// stash.set("my-org.count", 5)?;
    /// assert_eq!(stash.delete("my-org.count")?, Some(json!(5)));
    /// assert_eq!(stash.delete("my-org.count")?, None);
    /// assert_eq!(stash.all(), json!({"my-org": {}}));
    /// # Ok::<(), adk::StashError>(())
    /// ```
    pub fn delete(&mut self, path: impl AsRef<str>) -> Result<Option<Value>, StashError> {
        let path = path.as_ref();
        let path = DotPath::parse(path).map_err(|problem| problem.into_error(path))?;
        let (parents, last) = match path.as_str().rsplit_once('.') {
            Some((parents, last)) => (Some(parents), last),
            None => (None, path.as_str()),
        };
        let mut map = &mut self.root;
        for segment in parents.into_iter().flat_map(|parents| parents.split('.')) {
            match map.get_mut(segment) {
                Some(Value::Object(child)) => map = child,
                _ => return Ok(None),
            }
        }
        // `shift_remove` keeps the remaining keys in insertion order.
        Ok(map.shift_remove(last))
    }

    /// The dot-path of every leaf, in insertion order. Leaves are scalars, `null` and arrays;
    /// an empty object has no leaf and yields no path.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let stash = adk::Registry::from_nested(json!({
    ///     "my-org": {"count": 5, "items": [1, 2], "empty": {}},
    ///     "other": null,
    /// }))?;
    /// assert_eq!(stash.keys(), ["my-org.count", "my-org.items", "other"]);
    /// # Ok::<(), adk::StashError>(())
    /// ```
    pub fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        let mut prefix = String::new();
        // Each frame: the prefix length its keys start at, and the entries still to visit.
        let mut frames = vec![(0, self.root.iter())];
        while let Some((start, entries)) = frames.last_mut() {
            let start = *start;
            let Some((key, value)) = entries.next() else {
                frames.pop();
                continue;
            };
            prefix.truncate(start);
            if start > 0 {
                prefix.push('.');
            }
            prefix.push_str(key);
            match value {
                Value::Object(children) => frames.push((prefix.len(), children.iter())),
                _ => keys.push(prefix.clone()),
            }
        }
        keys
    }

    /// A copy of the whole tree in nested form: the form [`from_nested`](Self::from_nested)
    /// takes back.
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let mut stash = adk::Registry::new();
    /// stash.set("my-org.count", 5)?;
    /// assert_eq!(stash.all(), json!({"my-org": {"count": 5}}));
    /// # Ok::<(), adk::StashError>(())
    /// ```
    pub fn all(&self) -> Value {
        Value::Object(self.root.clone())
    }

    fn find(&self, path: DotPath<'_>) -> Option<&Value> {
        let mut segments = path.segments();
        let mut current = self.root.get(segments.next()?)?;
        for segment in segments {
            current = match current {
                Value::Object(children) => children.get(segment)?,
                _ => return None,
            };
        }
        Some(current)
    }
}

/// A write that met a non-object on its way; it gives the value back.
struct Blocked {
    /// Byte length of the path prefix that holds the non-object.
    path_end: usize,
    found: JsonKind,
    value: Value,
}

/// Writes `value` at `rest` (the path from `map` downwards) inside `map`. `consumed` is the
/// byte length of the path before `rest`, to name the blocking prefix in errors.
///
/// Recursion (bounded by `MAX_DEPTH`) lets each level borrow its map mutably and still insert
/// when the key is missing; a loop reassigning one `&mut` cannot do both.
fn write(
    map: &mut Map<String, Value>,
    rest: &str,
    value: Value,
    consumed: usize,
) -> Result<(), Blocked> {
    let Some((segment, below)) = rest.split_once('.') else {
        match map.get_mut(rest) {
            Some(slot) => *slot = value,
            None => {
                map.insert(rest.to_owned(), value);
            }
        }
        return Ok(());
    };
    match map.get_mut(segment) {
        Some(Value::Object(child)) => write(child, below, value, consumed + segment.len() + 1),
        Some(other) => Err(Blocked {
            path_end: consumed + segment.len(),
            found: JsonKind::of(other),
            value,
        }),
        None => {
            map.insert(segment.to_owned(), nest(below, value));
            Ok(())
        }
    }
}

/// Wraps `value` in one object per segment of `path`, innermost last: `nest("a.b", v)` is
/// `{"a":{"b":v}}`.
fn nest(path: &str, value: Value) -> Value {
    path.rsplit('.').fold(value, |inner, segment| {
        let mut object = Map::new();
        object.insert(segment.to_owned(), inner);
        Value::Object(object)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_clone_is_an_equal_stash_that_changes_on_its_own() {
        let empty = Registry::new();
        assert_eq!(empty.clone(), empty);
        let mut stash = Registry::new();
        stash.set("org.count", 3_u64).unwrap();
        let mut copy = stash.clone();
        assert_eq!(copy, stash);
        copy.set("org.count", 4_u64).unwrap();
        assert_eq!(stash.get::<u64>("org.count").unwrap(), Some(3));
        assert_eq!(copy.get::<u64>("org.count").unwrap(), Some(4));
    }

    #[test]
    fn registry_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Registry>();
        assert_send_sync::<StashError>();
    }

    #[test]
    fn nest_builds_one_object_per_segment() {
        assert_eq!(nest("a.b", json!(1)), json!({"a": {"b": 1}}));
    }

    #[test]
    fn set_replacing_a_value_keeps_its_position_in_keys() {
        let mut stash = Registry::new();
        stash.set("a", 1).unwrap();
        stash.set("b", 2).unwrap();
        stash.set("a", 3).unwrap();
        assert_eq!(stash.keys(), ["a", "b"]);
    }

    #[test]
    fn delete_keeps_the_order_of_the_remaining_keys() {
        let mut stash = Registry::new();
        for key in ["a", "b", "c"] {
            stash.set(key, 0).unwrap();
        }
        stash.delete("a").unwrap();
        assert_eq!(stash.keys(), ["b", "c"]);
    }

    #[test]
    fn blocking_path_names_the_non_object_prefix() {
        let mut stash = Registry::new();
        stash.set("a.b", "leaf").unwrap();
        let error = stash.set("a.b.c.d", 1).unwrap_err();
        let StashError::BeneathNonObject {
            blocking_path,
            found,
            ..
        } = &error
        else {
            panic!("{error}");
        };
        assert_eq!(blocking_path, "a.b");
        assert_eq!(*found, JsonKind::String);
    }
}

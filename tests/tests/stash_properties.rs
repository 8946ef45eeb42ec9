//! Random operation sequences against the stash agree with a naive reference model.
//!
//! The model is written the slow, obvious way (association lists, recursion, a validation pass
//! before every mutation) so that it shares no code or data structure with the registry.

use adk::{Registry, StashError};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// A node of the model: a leaf holds any non-object value; a branch is an object whose
/// entries keep insertion order in a plain vector.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Leaf(Value),
    Branch(Vec<(String, Node)>),
}

impl Node {
    fn from_value(value: &Value) -> Self {
        match value {
            Value::Object(map) => Node::Branch(
                map.iter()
                    .map(|(key, child)| (key.clone(), Node::from_value(child)))
                    .collect(),
            ),
            other => Node::Leaf(other.clone()),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Node::Leaf(value) => value.clone(),
            Node::Branch(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(key, child)| (key.clone(), child.to_value()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }
}

/// Which rule an outcome followed; the registry's errors are reduced to this to compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    EmptyPath,
    EmptySegment,
    NumericSegment,
    BeneathNonObject,
    InvalidKeyInValue,
}

fn refusal_of(error: &StashError) -> Refusal {
    match error {
        StashError::EmptyPath => Refusal::EmptyPath,
        StashError::EmptySegment { .. } => Refusal::EmptySegment,
        StashError::NumericSegment { .. } => Refusal::NumericSegment,
        StashError::BeneathNonObject { .. } => Refusal::BeneathNonObject,
        StashError::InvalidKeyInValue { .. } => Refusal::InvalidKeyInValue,
        other => panic!("no operation here should fail with {other:?}"),
    }
}

fn is_digits(segment: &str) -> bool {
    segment.chars().all(|character| character.is_ascii_digit())
}

#[derive(Debug, Default)]
struct Model {
    root: Vec<(String, Node)>,
}

impl Model {
    fn parse(path: &str) -> Result<Vec<String>, Refusal> {
        if path.is_empty() {
            return Err(Refusal::EmptyPath);
        }
        let mut segments = Vec::new();
        for segment in path.split('.') {
            if segment.is_empty() {
                return Err(Refusal::EmptySegment);
            }
            if is_digits(segment) {
                return Err(Refusal::NumericSegment);
            }
            segments.push(segment.to_owned());
        }
        Ok(segments)
    }

    fn keys_are_addressable(value: &Value) -> bool {
        match value {
            Value::Object(map) => map.iter().all(|(key, child)| {
                !key.is_empty()
                    && !key.contains('.')
                    && !is_digits(key)
                    && Self::keys_are_addressable(child)
            }),
            _ => true,
        }
    }

    fn find<'a>(entries: &'a [(String, Node)], segments: &[String]) -> Option<&'a Node> {
        let (first, rest) = segments.split_first()?;
        let node = entries
            .iter()
            .find(|(key, _)| key == first)
            .map(|(_, node)| node)?;
        if rest.is_empty() {
            return Some(node);
        }
        match node {
            Node::Branch(children) => Self::find(children, rest),
            Node::Leaf(_) => None,
        }
    }

    fn get(&self, path: &str) -> Result<Option<Value>, Refusal> {
        let segments = Self::parse(path)?;
        Ok(Self::find(&self.root, &segments).map(Node::to_value))
    }

    fn has(&self, path: &str) -> bool {
        matches!(self.get(path), Ok(Some(_)))
    }

    fn set(&mut self, path: &str, value: &Value) -> Result<(), Refusal> {
        let segments = Self::parse(path)?;
        if !Self::keys_are_addressable(value) {
            return Err(Refusal::InvalidKeyInValue);
        }
        // Validation pass: no proper prefix of the path may hold a leaf.
        for end in 1..segments.len() {
            if let Some(Node::Leaf(_)) = Self::find(&self.root, &segments[..end]) {
                return Err(Refusal::BeneathNonObject);
            }
        }
        let mut entries = &mut self.root;
        let (last, parents) = segments.split_last().expect("parse yields a segment");
        for segment in parents {
            let position = match entries.iter().position(|(key, _)| key == segment) {
                Some(position) => position,
                None => {
                    entries.push((segment.clone(), Node::Branch(Vec::new())));
                    entries.len() - 1
                }
            };
            entries = match &mut entries[position].1 {
                Node::Branch(children) => children,
                Node::Leaf(_) => unreachable!("checked in the validation pass"),
            };
        }
        let node = Node::from_value(value);
        match entries.iter_mut().find(|(key, _)| key == last) {
            Some((_, existing)) => *existing = node,
            None => entries.push((last.clone(), node)),
        }
        Ok(())
    }

    fn delete(&mut self, path: &str) -> Result<Option<Value>, Refusal> {
        let segments = Self::parse(path)?;
        let (last, parents) = segments.split_last().expect("parse yields a segment");
        let mut entries = &mut self.root;
        for segment in parents {
            let Some(position) = entries.iter().position(|(key, _)| key == segment) else {
                return Ok(None);
            };
            entries = match &mut entries[position].1 {
                Node::Branch(children) => children,
                Node::Leaf(_) => return Ok(None),
            };
        }
        let Some(position) = entries.iter().position(|(key, _)| key == last) else {
            return Ok(None);
        };
        Ok(Some(entries.remove(position).1.to_value()))
    }

    fn keys(&self) -> Vec<String> {
        fn walk(entries: &[(String, Node)], prefix: &str, keys: &mut Vec<String>) {
            for (key, node) in entries {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                match node {
                    Node::Leaf(_) => keys.push(path),
                    Node::Branch(children) => walk(children, &path, keys),
                }
            }
        }
        let mut keys = Vec::new();
        walk(&self.root, "", &mut keys);
        keys
    }

    fn all(&self) -> Value {
        Node::Branch(self.root.clone()).to_value()
    }
}

#[derive(Clone, Debug)]
enum Operation {
    Set(String, Value),
    Get(String),
    Has(String),
    Delete(String),
    Keys,
}

/// Paths of one to three segments over a small alphabet, so that operations collide often;
/// `""` and `"0"` produce empty and numeric segments.
fn path() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        4 => Just("a"),
        4 => Just("b"),
        3 => Just("c"),
        1 => Just("__proto__"),
        1 => Just("0"),
        1 => Just(""),
    ];
    proptest::collection::vec(segment, 1..=3).prop_map(|segments| segments.join("."))
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (0_u8..4).prop_map(Value::from),
        Just(json!("text")),
        Just(json!([1, {"0": "opaque"}])),
        Just(json!({})),
        Just(json!({"a": 1, "c": {"b": null}})),
        Just(json!({"b": [true]})),
        Just(json!({"a.b": 1})),
        Just(json!({"c": {"7": 1}})),
    ]
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        5 => (path(), value()).prop_map(|(path, value)| Operation::Set(path, value)),
        2 => path().prop_map(Operation::Get),
        2 => path().prop_map(Operation::Has),
        2 => path().prop_map(Operation::Delete),
        1 => Just(Operation::Keys),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_operations_agree_with_the_reference_model(
        operations in proptest::collection::vec(operation(), 0..40)
    ) {
        let mut stash = Registry::new();
        let mut model = Model::default();
        for operation in operations {
            match &operation {
                Operation::Set(path, value) => {
                    let actual = stash.set(path, value).map_err(|error| refusal_of(&error));
                    prop_assert_eq!(actual, model.set(path, value), "{:?}", operation);
                }
                Operation::Get(path) => {
                    let actual = stash.get::<Value>(path).map_err(|error| refusal_of(&error));
                    prop_assert_eq!(actual, model.get(path), "{:?}", operation);
                    let borrowed = stash
                        .get_ref(path)
                        .map(|found| found.cloned())
                        .map_err(|error| refusal_of(&error));
                    prop_assert_eq!(borrowed, model.get(path), "{:?}", operation);
                }
                Operation::Has(path) => {
                    prop_assert_eq!(stash.has(path), model.has(path), "{:?}", operation);
                }
                Operation::Delete(path) => {
                    let actual = stash.delete(path).map_err(|error| refusal_of(&error));
                    prop_assert_eq!(actual, model.delete(path), "{:?}", operation);
                }
                Operation::Keys => {
                    prop_assert_eq!(stash.keys(), model.keys());
                }
            }
            // Compared as text: `Value` equality ignores the order of object keys.
            prop_assert_eq!(
                stash.all().to_string(),
                model.all().to_string(),
                "after {:?}",
                operation
            );
        }
        // Invariants the model does not spell out: every listed key reads back, and the tree
        // survives a round trip through its nested form.
        for key in stash.keys() {
            prop_assert!(stash.has(&key), "{}", key);
        }
        let reseeded = Registry::from_nested(stash.all()).expect("all() is a valid seed");
        prop_assert_eq!(reseeded.keys(), stash.keys());
    }
}

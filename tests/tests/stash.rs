//! The stash registry, rule by rule, as documented in `docs/stash.md`.

use adk::stash::{JsonKind, KeyProblem, MAX_DEPTH};
use adk::{Registry, StashError, StashKey};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

type TestResult = Result<(), StashError>;

fn stash_with(entries: &[(&str, Value)]) -> Registry {
    let mut stash = Registry::new();
    for (path, value) in entries {
        stash.set(*path, value).expect("valid entry");
    }
    stash
}

// ---------------------------------------------------------------------------------------------
// Nested storage, keys() and all()
// ---------------------------------------------------------------------------------------------

#[test]
fn dots_in_a_path_create_real_nested_objects() -> TestResult {
    let mut stash = Registry::new();
    stash.set("my-org.count", 5)?;
    assert_eq!(stash.all(), json!({"my-org": {"count": 5}}));
    assert_eq!(stash.get::<Value>("my-org")?, Some(json!({"count": 5})));
    Ok(())
}

#[test]
fn all_returns_the_nested_tree_whose_top_level_holds_only_first_segments() -> TestResult {
    let mut stash = Registry::new();
    stash.set("my-org.budgets.input-tokens-remaining", 4096)?;
    stash.set("my-org.policy", "strict")?;
    stash.set("other-org.flag", true)?;
    let all = stash.all();
    assert_eq!(
        all,
        json!({
            "my-org": {"budgets": {"input-tokens-remaining": 4096}, "policy": "strict"},
            "other-org": {"flag": true},
        })
    );
    let top_level: Vec<&String> = all.as_object().expect("an object").keys().collect();
    assert_eq!(top_level, ["my-org", "other-org"]);
    Ok(())
}

#[test]
fn keys_lists_leaf_dot_paths_in_insertion_order() -> TestResult {
    let mut stash = Registry::new();
    stash.set("b", 1)?;
    stash.set("a.y", 1)?;
    stash.set("a.x", 2)?;
    stash.set("c-1", 3)?;
    // No reordering of number-like keys as JavaScript would do: insertion order only.
    assert_eq!(stash.keys(), ["b", "a.y", "a.x", "c-1"]);
    Ok(())
}

#[test]
fn keys_skips_empty_objects_and_treats_arrays_and_null_as_leaves() -> TestResult {
    let mut stash = Registry::new();
    stash.set("my-org.empty", json!({}))?;
    stash.set("my-org.items", json!([{"nested": 1}]))?;
    stash.set("my-org.nothing", ())?;
    assert_eq!(stash.keys(), ["my-org.items", "my-org.nothing"]);
    assert_eq!(stash.get::<Value>("my-org.empty")?, Some(json!({})));
    Ok(())
}

#[test]
fn every_listed_key_can_be_read_back() -> TestResult {
    let stash = Registry::from_nested(json!({
        "a": {"b": {"c": 1, "d": [1, 2]}, "e": null},
        "f": "text",
    }))?;
    for key in stash.keys() {
        assert!(stash.has(&key), "{key}");
        assert!(stash.get_ref(&key)?.is_some(), "{key}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// No aliasing in either direction
// ---------------------------------------------------------------------------------------------

#[test]
fn mutating_a_value_read_out_does_not_change_the_store() -> TestResult {
    let mut stash = Registry::new();
    stash.set("my-org.items", vec!["a".to_owned()])?;

    let mut items: Vec<String> = stash.get("my-org.items")?.expect("stored");
    items.push("b".to_owned());
    let mut tree = stash.all();
    tree["my-org"]["items"] = json!("overwritten");

    assert_eq!(
        stash.get::<Vec<String>>("my-org.items")?,
        Some(vec!["a".to_owned()])
    );
    Ok(())
}

#[test]
fn mutating_a_value_after_writing_it_does_not_change_the_store() -> TestResult {
    let mut stash = Registry::new();
    let mut policy = json!({"mode": "strict"});
    stash.set("my-org.policy", &policy)?;
    policy["mode"] = json!("lenient");

    let mut items = vec![1, 2];
    stash.set("my-org.items", items.clone())?;
    items.push(3);

    assert_eq!(
        stash.get::<String>("my-org.policy.mode")?.as_deref(),
        Some("strict")
    );
    assert_eq!(stash.get::<Vec<u8>>("my-org.items")?, Some(vec![1, 2]));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Collisions
// ---------------------------------------------------------------------------------------------

#[test]
fn set_on_parent_path_replaces_its_children() -> TestResult {
    let mut stash = Registry::new();
    stash.set("my-org.count", 5)?;
    stash.set("my-org.policy", "strict")?;
    stash.set("my-org", "flat value")?;
    assert!(!stash.has("my-org.count"));
    assert_eq!(stash.all(), json!({"my-org": "flat value"}));
    Ok(())
}

#[test]
fn second_writer_wins() -> TestResult {
    let mut stash = Registry::new();
    stash.set("my-org.policy", "strict")?;
    stash.set("my-org.policy", json!({"mode": "lenient"}))?;
    assert_eq!(
        stash.get::<String>("my-org.policy.mode")?.as_deref(),
        Some("lenient")
    );
    Ok(())
}

#[test]
fn writing_beneath_a_non_object_is_refused_and_changes_nothing() {
    for (blocker, kind) in [
        (json!(null), JsonKind::Null),
        (json!(0), JsonKind::Number),
        (json!("text"), JsonKind::String),
        (json!(false), JsonKind::Bool),
        (json!([1, 2]), JsonKind::Array),
    ] {
        let mut stash = stash_with(&[("my-org.slot", blocker.clone())]);
        let before = stash.all();

        let error = stash.set("my-org.slot.child.deeper", 1).unwrap_err();

        let StashError::BeneathNonObject {
            path,
            blocking_path,
            found,
            value,
        } = &error
        else {
            panic!("expected BeneathNonObject, got {error:?}");
        };
        assert_eq!(path, "my-org.slot.child.deeper");
        assert_eq!(blocking_path, "my-org.slot");
        assert_eq!(*found, kind);
        assert_eq!(value.as_value(), &json!(1), "the value is handed back");
        assert!(
            error.to_string().contains("delete `my-org.slot`"),
            "{error}"
        );
        assert_eq!(stash.all(), before, "nothing changed beneath {blocker}");
    }
}

// ---------------------------------------------------------------------------------------------
// Invalid paths
// ---------------------------------------------------------------------------------------------

#[test]
fn numeric_segments_are_refused_on_write_and_read() {
    let mut stash = stash_with(&[("my-org.items", json!([1, 2]))]);
    let write = stash.set("my-org.items.0", 9).unwrap_err();
    assert!(
        matches!(&write, StashError::NumericSegment { path, segment }
            if path == "my-org.items.0" && segment == "0")
    );
    assert!(
        write
            .to_string()
            .contains("read the whole array, change it, and set it back"),
        "{write}"
    );
    assert!(matches!(
        stash.get::<u8>("my-org.items.0"),
        Err(StashError::NumericSegment { .. })
    ));
    assert!(matches!(
        stash.get_ref("my-org.items.1"),
        Err(StashError::NumericSegment { .. })
    ));
    assert!(matches!(
        stash.delete("my-org.items.0"),
        Err(StashError::NumericSegment { .. })
    ));
    assert!(!stash.has("my-org.items.0"));
    let items = stash.get::<Vec<u8>>("my-org.items").expect("a valid path");
    assert_eq!(items, Some(vec![1, 2]), "the array is untouched");
}

#[test]
fn empty_path_and_empty_segments_are_refused_on_write_and_read() {
    let mut stash = Registry::new();
    assert!(matches!(stash.set("", 1), Err(StashError::EmptyPath)));
    assert!(matches!(stash.get::<u8>(""), Err(StashError::EmptyPath)));
    for path in [".a", "a.", "a..b", "."] {
        assert!(
            matches!(stash.set(path, 1), Err(StashError::EmptySegment { .. })),
            "{path}"
        );
        assert!(
            matches!(stash.get::<u8>(path), Err(StashError::EmptySegment { .. })),
            "{path}"
        );
        assert!(!stash.has(path), "{path}");
    }
    assert!(stash.keys().is_empty(), "no write went through");
}

#[test]
fn numbers_mixed_with_other_characters_are_ordinary_names() -> TestResult {
    let mut stash = Registry::new();
    stash.set("models.gpt-4-1.calls", 2)?;
    stash.set("models.v2", 1)?;
    assert_eq!(stash.keys(), ["models.gpt-4-1.calls", "models.v2"]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

#[test]
fn reading_through_a_non_object_finds_nothing() -> TestResult {
    let stash = stash_with(&[("s", json!("abc")), ("a", json!(0)), ("list", json!([1]))]);
    assert_eq!(stash.get::<usize>("s.length")?, None);
    assert_eq!(stash.get::<u8>("a.b")?, None);
    assert_eq!(stash.get::<Value>("list.map")?, None);
    assert!(!stash.has("s.length"));
    assert_eq!(stash.get_ref("a.b")?, None);
    Ok(())
}

#[test]
fn prototype_names_are_ordinary_keys() -> TestResult {
    let mut stash = Registry::new();
    assert!(!stash.has("constructor"));
    assert!(!stash.has("__proto__"));
    stash.set("__proto__.polluted", 1)?;
    stash.set("a.constructor", 2)?;
    stash.set("prototype", 3)?;
    assert_eq!(
        stash.all(),
        json!({"__proto__": {"polluted": 1}, "a": {"constructor": 2}, "prototype": 3})
    );
    assert_eq!(stash.get::<u8>("__proto__.polluted")?, Some(1));
    Ok(())
}

#[test]
fn null_is_a_stored_value() -> TestResult {
    let mut stash = Registry::new();
    stash.set("my-org.override", Value::Null)?;
    assert!(stash.has("my-org.override"));
    assert_eq!(stash.get_ref("my-org.override")?, Some(&Value::Null));
    assert_eq!(stash.get::<Option<u8>>("my-org.override")?, Some(None));
    assert_eq!(stash.keys(), ["my-org.override"]);
    Ok(())
}

#[test]
fn typed_read_of_another_shape_names_the_key_the_rust_type_and_the_json_kind() {
    let stash = stash_with(&[("my-org.count", json!("five"))]);
    let error = stash.get::<u32>("my-org.count").unwrap_err();
    let StashError::WrongType {
        path,
        expected,
        found,
        ..
    } = &error
    else {
        panic!("expected WrongType, got {error:?}");
    };
    assert_eq!(path, "my-org.count");
    assert_eq!(*expected, "u32");
    assert_eq!(*found, JsonKind::String);
    let message = error.to_string();
    assert!(message.contains("`my-org.count`"), "{message}");
    assert!(message.contains("`u32`"), "{message}");
    assert!(message.contains("JSON string"), "{message}");
}

#[test]
fn typed_read_reports_a_mismatch_deep_inside_a_struct() {
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Budget {
        input_tokens: u64,
    }
    let stash = stash_with(&[("my-org.budget", json!({"input_tokens": "many"}))]);
    let error = stash.get::<Budget>("my-org.budget").unwrap_err();
    assert!(matches!(
        &error,
        StashError::WrongType { found: JsonKind::Object, expected, .. } if expected.ends_with("Budget")
    ));
}

#[test]
fn values_go_in_as_any_serialize_and_come_out_as_any_deserialize() -> TestResult {
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Policy {
        mode: String,
        limits: Vec<u32>,
    }
    let policy = Policy {
        mode: "strict".to_owned(),
        limits: vec![1, 2],
    };
    let mut stash = Registry::new();
    stash.set("my-org.policy", &policy)?;
    assert_eq!(stash.get::<Policy>("my-org.policy")?, Some(policy));
    assert_eq!(
        stash.get::<Vec<u64>>("my-org.policy.limits")?,
        Some(vec![1, 2])
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Typed keys and string paths
// ---------------------------------------------------------------------------------------------

// Built by hand only here: users build keys with `stash_key!`, which checks the path.
const COUNT: StashKey<u32> = StashKey::__from_checked_literal("my-org.count");

#[test]
fn a_typed_key_reads_and_writes_its_own_type() -> TestResult {
    let mut stash = Registry::new();
    stash.set(COUNT, 5)?;
    let count = stash.get(COUNT)?;
    assert_eq!(count, Some(5_u32));
    assert!(stash.has(COUNT));
    assert_eq!(stash.get_ref(COUNT)?, Some(&json!(5)));
    assert_eq!(stash.delete(COUNT)?, Some(json!(5)));
    Ok(())
}

#[test]
fn a_string_path_reads_with_the_type_the_caller_chooses() -> TestResult {
    let mut stash = Registry::new();
    stash.set(COUNT, 5)?;
    assert_eq!(stash.get::<u64>("my-org.count")?, Some(5));
    assert_eq!(stash.get::<f64>(String::from("my-org.count"))?, Some(5.0));
    let path = String::from("my-org.count");
    let as_value: Option<Value> = stash.get(&path)?;
    assert_eq!(as_value, Some(json!(5)));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Delete
// ---------------------------------------------------------------------------------------------

#[test]
fn delete_removes_a_subtree_and_returns_it() -> TestResult {
    let mut stash = stash_with(&[("my-org.a", json!(1)), ("my-org.b.c", json!(2))]);
    assert_eq!(stash.delete("my-org.b")?, Some(json!({"c": 2})));
    assert_eq!(stash.keys(), ["my-org.a"]);
    assert_eq!(stash.delete("my-org.b")?, None);
    assert_eq!(stash.delete("my-org.a.below-a-number")?, None);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Seeding
// ---------------------------------------------------------------------------------------------

#[test]
fn seeding_from_the_nested_form_reads_back_every_leaf() -> TestResult {
    let stash = Registry::from_nested(json!({"my-org": {"count": 5, "items": [1]}}))?;
    assert_eq!(stash.get::<u32>("my-org.count")?, Some(5));
    assert_eq!(stash.keys(), ["my-org.count", "my-org.items"]);
    Ok(())
}

#[test]
fn all_round_trips_through_from_nested_and_json_text() -> TestResult {
    let mut stash = Registry::new();
    stash.set("my-org.count", 5)?;
    stash.set("my-org.items", json!([{"any.key": 1, "0": 2}]))?;
    stash.set("other", Value::Null)?;

    let reseeded = Registry::from_nested(stash.all())?;
    assert_eq!(reseeded, stash);

    let text = serde_json::to_string(&stash.all()).expect("JSON text");
    let parsed: Value = serde_json::from_str(&text).expect("parses back");
    let from_text = Registry::from_nested(parsed)?;
    assert_eq!(from_text.keys(), stash.keys());
    Ok(())
}

#[test]
fn seeding_with_flat_keys_is_refused_showing_the_nested_form() {
    let error = Registry::from_nested(json!({"my-org.count": 5})).unwrap_err();
    let StashError::InvalidSeedKey {
        location, problem, ..
    } = &error
    else {
        panic!("expected InvalidSeedKey, got {error:?}");
    };
    assert_eq!(location.key(), "my-org.count");
    assert_eq!(location.parent(), "");
    assert_eq!(
        problem,
        &KeyProblem::Dotted {
            nested_form: Some(r#"{"my-org":{"count":5}}"#.to_owned())
        }
    );
    let message = error.to_string();
    assert!(message.contains("nested form"), "{message}");
    assert!(message.contains(r#"{"my-org":{"count":5}}"#), "{message}");
    assert_eq!(
        error.into_rejected_value(),
        Some(json!({"my-org.count": 5})),
        "the seed is handed back"
    );
}

#[test]
fn seeding_with_a_flat_key_at_a_deeper_level_is_refused_too() {
    let error = Registry::from_nested(json!({"my-org": {"models": {"gpt.mini": 1}}})).unwrap_err();
    let StashError::InvalidSeedKey { location, .. } = &error else {
        panic!("expected InvalidSeedKey, got {error:?}");
    };
    assert_eq!(location.parent(), "my-org.models");
    assert!(
        error.to_string().contains(r#"{"gpt":{"mini":1}}"#),
        "{error}"
    );
}

#[test]
fn a_dotted_key_whose_parts_are_not_segments_is_told_to_use_hyphens() {
    let error = Registry::from_nested(json!({"my-org": {"gpt-4.1": 1}})).unwrap_err();
    let StashError::InvalidSeedKey { problem, .. } = &error else {
        panic!("expected InvalidSeedKey, got {error:?}");
    };
    // `{"gpt-4":{"1":1}}` would only trade the dot for a numeric segment.
    assert_eq!(problem, &KeyProblem::Dotted { nested_form: None });
    assert!(error.to_string().contains("`gpt-4-1`"), "{error}");
}

#[test]
fn seeding_with_numeric_or_empty_keys_is_refused() {
    for seed in [json!({"items": {"0": "a"}}), json!({"": 1})] {
        let error = Registry::from_nested(seed.clone()).unwrap_err();
        assert!(
            matches!(&error, StashError::InvalidSeedKey { .. }),
            "{error:?}"
        );
        assert_eq!(error.rejected_value(), Some(&seed));
    }
}

#[test]
fn seeding_from_a_non_object_is_refused_and_hands_the_seed_back() {
    for seed in [json!(null), json!(5), json!("text"), json!([{"a": 1}])] {
        let error = Registry::from_nested(seed.clone()).unwrap_err();
        assert!(
            matches!(error, StashError::SeedNotObject { found, .. } if found == JsonKind::of(&seed))
        );
        assert_eq!(error.into_rejected_value(), Some(seed));
    }
}

#[test]
fn values_with_keys_no_path_could_address_are_refused() {
    let mut stash = Registry::new();
    let error = stash
        .set("my-org.settings", json!({"v1.2": true}))
        .unwrap_err();
    let StashError::InvalidKeyInValue {
        location, value, ..
    } = &error
    else {
        panic!("expected InvalidKeyInValue, got {error:?}");
    };
    assert_eq!(location.parent(), "my-org.settings");
    assert_eq!(value.as_value(), &json!({"v1.2": true}));
    assert!(
        error.to_string().contains("rename it with hyphens"),
        "{error}"
    );

    let by_id = std::collections::BTreeMap::from([(7_u32, "seven")]);
    assert!(matches!(
        stash.set("my-org.by-id", by_id),
        Err(StashError::InvalidKeyInValue {
            problem: KeyProblem::Numeric,
            ..
        })
    ));
    assert!(stash.keys().is_empty());
}

#[test]
fn a_value_that_is_not_json_is_a_serialization_error_naming_path_and_type() {
    let tuple_keys = std::collections::BTreeMap::from([((1, 2), "x")]);
    let mut stash = Registry::new();
    let error = stash.set("my-org.grid", tuple_keys).unwrap_err();
    assert!(
        matches!(&error, StashError::Serialize { path, type_name, .. }
            if path == "my-org.grid" && type_name.contains("BTreeMap")),
        "{error:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Turn → dispatch: one-way seed
// ---------------------------------------------------------------------------------------------

#[test]
fn a_dispatch_seed_is_a_copy_and_nothing_syncs_in_either_direction() -> TestResult {
    let mut turn = Registry::new();
    turn.set("my-org.policy", "strict")?;

    let mut dispatch = turn.seed_copy();
    assert_eq!(dispatch, turn);

    dispatch.set("my-org.iteration", 1)?;
    dispatch.set("my-org.policy", "changed in dispatch")?;
    turn.set("my-org.late", true)?;

    assert_eq!(
        turn.all(),
        json!({"my-org": {"policy": "strict", "late": true}})
    );
    assert_eq!(
        dispatch.all(),
        json!({"my-org": {"policy": "changed in dispatch", "iteration": 1}})
    );
    Ok(())
}

#[test]
fn registry_is_send_and_sync_so_contexts_can_cross_tasks() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Registry>();
    assert_send_sync::<StashError>();
}

// ---------------------------------------------------------------------------------------------
// Depth limit
// ---------------------------------------------------------------------------------------------

/// A chain `{"a":{"a":…{"a":1}}}` of `levels` objects, built in a loop: `json!` would clone
/// the inner value through serialization, recursively.
fn deep_chain(levels: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..levels {
        let mut object = Map::new();
        object.insert("a".to_owned(), value);
        value = Value::Object(object);
    }
    value
}

/// Counts the levels of a chain without recursion.
fn chain_levels(mut value: &Value) -> usize {
    let mut levels = 0;
    while let Some(inner) = value.get("a") {
        levels += 1;
        value = inner;
    }
    levels
}

/// `serde_json::Value`'s drop recurses once per level; take a deep chain apart in a loop.
fn drop_chain(mut value: Value) {
    while let Some(inner) = value.get_mut("a").map(Value::take) {
        value = inner;
    }
}

/// Runs `test` on a thread with a tokio worker's default stack (2 MiB), where a recursion
/// per level would overflow long before a hundred thousand levels.
fn on_worker_sized_stack(test: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(test)
        .expect("spawn")
        .join()
        .expect("the test thread did not panic");
}

#[test]
fn paths_values_and_trees_up_to_max_depth_levels_are_accepted() -> TestResult {
    let mut stash = Registry::new();
    let path = vec!["a"; MAX_DEPTH - 2].join(".");
    stash.set(&path, deep_chain(2))?;
    assert_eq!(chain_levels(&stash.all()), MAX_DEPTH);
    Registry::from_nested(stash.all())?;
    Ok(())
}

#[test]
fn paths_values_and_seeds_deeper_than_max_depth_are_refused() {
    let mut stash = Registry::new();
    let too_long = vec!["a"; MAX_DEPTH + 1].join(".");
    assert!(matches!(
        stash.set(&too_long, 1),
        Err(StashError::PathTooDeep { segments, .. }) if segments == MAX_DEPTH + 1
    ));
    assert!(!stash.has(&too_long));

    let path = vec!["a"; MAX_DEPTH - 2].join(".");
    assert!(matches!(
        stash.set(&path, deep_chain(3)),
        Err(StashError::ValueTooDeep { .. })
    ));

    let error = Registry::from_nested(deep_chain(MAX_DEPTH + 1)).unwrap_err();
    assert!(matches!(error, StashError::SeedTooDeep { .. }), "{error:?}");
    assert!(stash.keys().is_empty());
}

#[test]
fn a_hundred_thousand_level_seed_is_refused_without_overflowing_the_stack() {
    on_worker_sized_stack(|| {
        let error = Registry::from_nested(deep_chain(100_000)).unwrap_err();
        let StashError::SeedTooDeep { location, seed } = &error else {
            panic!("expected SeedTooDeep, got {error}");
        };
        assert!(location.starts_with("a.a.a"), "{location}");
        assert_eq!(
            chain_levels(seed.as_value()),
            100_000,
            "the whole seed is handed back"
        );
        assert!(error.to_string().contains("limit of 64 levels"), "{error}");
        // Dropping the error is safe: the handed-back seed is taken apart without recursion.
        drop(error);

        // Taking the seed out gives the caller a plain `Value` again, which they must drop
        // with the same care as the one they built.
        let error = Registry::from_nested(deep_chain(100_000)).unwrap_err();
        let seed = error.into_rejected_value().expect("the seed");
        assert_eq!(chain_levels(&seed), 100_000);
        drop_chain(seed);
    });
}

#[test]
fn a_hundred_thousand_level_value_is_refused_without_overflowing_the_stack() {
    on_worker_sized_stack(|| {
        let deep = deep_chain(100_000);
        let mut stash = Registry::new();
        // Passed by reference: `set` consumes its value, and dropping a value this deep
        // anywhere recurses once per level.
        let error = stash.set("my-org.deep", &deep).unwrap_err();
        assert!(
            matches!(error, StashError::ValueTooDeep { .. }),
            "{error:?}"
        );
        assert!(stash.keys().is_empty());
        drop_chain(deep);
    });
}

//! ToolRegistry operations (spec 5.10) beyond the unit tests in primitives/tool.rs.

use super::*;

fn described(name: &str, description: &str, on_collision: CollisionPolicy) -> Tool {
    Tool::builder(name)
        .description(description)
        .on_collision(on_collision)
        .handler(|_, _| async { Ok("ok") })
        .build()
        .unwrap()
}

fn names_of(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(Tool::name).collect()
}

#[test]
fn get_and_contains_find_tools_by_exact_name() {
    let registry = ToolRegistry::from_tools([plain("search")]).unwrap();
    assert_eq!(registry.get("search").unwrap().name(), "search");
    assert!(registry.contains("search"));
    assert!(!registry.contains("Search"));
    assert!(registry.get("sear").is_none());
    assert!(!registry.is_empty());
    assert!(ToolRegistry::new().is_empty());
}

#[test]
fn register_overwriting_appends_a_new_name_and_keeps_the_hidden_flag_of_a_replaced_one() {
    let mut registry = ToolRegistry::from_tools([plain("a"), plain("b")]).unwrap();
    assert!(registry.register_overwriting(plain("c")).is_none());
    assert_eq!(names_of(registry.all()), ["a", "b", "c"]);
    registry.hide(["a"]);
    registry.register_overwriting(described("a", "v2", CollisionPolicy::Fail));
    assert_eq!(names_of(registry.all()), ["a", "b", "c"]);
    assert_eq!(names_of(&registry.hidden()), ["a"]);
    assert_eq!(registry.get("a").unwrap().description(), "v2");
}

#[test]
fn a_refused_registration_leaves_the_registry_unchanged() {
    let mut registry =
        ToolRegistry::from_tools([described("a", "first", CollisionPolicy::Fail)]).unwrap();
    let error = registry
        .register(described("a", "second", CollisionPolicy::Replace))
        .unwrap_err();
    assert_eq!(error.code(), "E_TOOL_ALREADY_REGISTERED");
    assert_eq!(registry.get("a").unwrap().description(), "first");
    assert_eq!(registry.len(), 1);
}

#[test]
fn visible_and_hidden_partition_the_tools_in_insertion_order() {
    let mut registry =
        ToolRegistry::from_tools([plain("d"), plain("c"), plain("b"), plain("a")]).unwrap();
    registry.hide(["a", "c", "never-registered"]);
    assert_eq!(names_of(&registry.visible()), ["d", "b"]);
    assert_eq!(names_of(&registry.hidden()), ["c", "a"]);
    assert!(registry.is_hidden("never-registered"));
    registry.unhide(["c", "never-registered"]);
    assert_eq!(names_of(&registry.visible()), ["d", "c", "b"]);
    assert!(!registry.is_hidden("never-registered"));
    registry.set_hidden(Vec::<String>::new());
    assert_eq!(registry.visible().len(), 4);
}

#[test]
fn pruning_keeps_the_order_of_the_remaining_tools_and_their_hidden_flags() {
    let mut registry =
        ToolRegistry::from_tools([ephemeral("x"), plain("a"), ephemeral("y"), plain("b")]).unwrap();
    registry.hide(["b", "y"]);
    let pruned = registry.prune_ephemeral();
    assert_eq!(names_of(&pruned), ["x", "y"]);
    assert_eq!(names_of(registry.all()), ["a", "b"]);
    assert_eq!(names_of(&registry.hidden()), ["b"]);
    assert!(registry.prune_ephemeral().is_empty());
}

#[test]
fn merge_runs_left_to_right_so_the_last_replacing_tool_wins() {
    let first = ToolRegistry::from_tools([described("a", "1", CollisionPolicy::Fail)]).unwrap();
    let second = ToolRegistry::from_tools([described("a", "2", CollisionPolicy::Replace)]).unwrap();
    let third =
        ToolRegistry::from_tools([plain("z"), described("a", "3", CollisionPolicy::Replace)])
            .unwrap();
    let merged = ToolRegistry::merge([&first, &second, &third], CollisionPolicy::Fail).unwrap();
    assert_eq!(names_of(merged.all()), ["a", "z"]);
    assert_eq!(merged.get("a").unwrap().description(), "3");
}

#[test]
fn the_merge_policy_decides_only_for_an_incoming_tool_that_defers() {
    let base = ToolRegistry::from_tools([described("a", "base", CollisionPolicy::Keep)]).unwrap();
    let deferring =
        ToolRegistry::from_tools([described("a", "incoming", CollisionPolicy::Fail)]).unwrap();
    // The existing tool's own policy plays no part: only the incoming tool's does.
    let replaced = ToolRegistry::merge([&base, &deferring], CollisionPolicy::Replace).unwrap();
    assert_eq!(replaced.get("a").unwrap().description(), "incoming");
    let kept = ToolRegistry::merge([&base, &deferring], CollisionPolicy::Keep).unwrap();
    assert_eq!(kept.get("a").unwrap().description(), "base");
    let refused = ToolRegistry::merge([&base, &deferring], CollisionPolicy::Fail).unwrap_err();
    assert_eq!(refused.name(), "a");
    assert!(refused.to_string().contains("CollisionPolicy::Replace"));

    let keeper =
        ToolRegistry::from_tools([described("a", "keeper", CollisionPolicy::Keep)]).unwrap();
    let not_replaced =
        ToolRegistry::merge([&deferring, &keeper], CollisionPolicy::Replace).unwrap();
    assert_eq!(not_replaced.get("a").unwrap().description(), "incoming");
    let replacer =
        ToolRegistry::from_tools([described("a", "replacer", CollisionPolicy::Replace)]).unwrap();
    let replaced_anyway =
        ToolRegistry::merge([&deferring, &replacer], CollisionPolicy::Keep).unwrap();
    assert_eq!(replaced_anyway.get("a").unwrap().description(), "replacer");
}

#[test]
fn a_kept_tool_keeps_its_own_hidden_flag_and_a_replacing_tool_brings_its_own() {
    let mut left = ToolRegistry::from_tools([plain("kept"), plain("replaced")]).unwrap();
    left.hide(["kept", "replaced"]);
    let right = ToolRegistry::from_tools([
        described("kept", "new", CollisionPolicy::Keep),
        described("replaced", "new", CollisionPolicy::Replace),
    ])
    .unwrap();
    let merged = ToolRegistry::merge([&left, &right], CollisionPolicy::Fail).unwrap();
    assert!(merged.is_hidden("kept"));
    assert_eq!(merged.get("kept").unwrap().description(), "demo");
    assert!(!merged.is_hidden("replaced"));
    assert_eq!(merged.get("replaced").unwrap().description(), "new");
    assert_eq!(names_of(&left.hidden()), ["kept", "replaced"]);
}

#[test]
fn tools_invocations_and_execution_errors_cross_threads() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Tool>();
    assert_send_sync::<ToolInvocation>();
    assert_send_sync::<ToolExecutionError>();
}

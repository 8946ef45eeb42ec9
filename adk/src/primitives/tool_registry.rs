//! [`ToolRegistry`]: the ordered set of tools a turn offers, with hiding and merging, and the
//! [`CollisionPolicy`] that settles a name taken twice.

use std::collections::HashSet;

use super::Tool;
// Hidden names hash as the turn's record ids do: a turn makes a registry for itself and one for
// each dispatch, hidden names or not, and a `RandomState` set read a thread-local each time.
use crate::ids::IdHasher as NameHasher;

/// What happens when a tool's name is already taken while registries are merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CollisionPolicy {
    /// Refuse: a collision is an error (the default). During a merge, an incoming tool with this
    /// policy defers to the merge-level policy.
    #[default]
    Fail,
    /// The incoming tool replaces the existing one (in the existing one's position).
    Replace,
    /// The existing tool stays; the incoming one is dropped.
    Keep,
}

/// A registry operation was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolRegistryError {
    /// A tool with this name is already registered; the rejected tool is returned.
    #[error(
        "a tool named {name:?} is already registered; use `register_overwriting` to replace it, \
         or give the new tool another name"
    )]
    AlreadyRegistered {
        /// The contested name.
        name: String,
        /// The tool that was not registered.
        rejected: Box<Tool>,
    },
    /// Two merged registries hold a tool of the same name and no policy says which wins.
    #[error(
        "cannot merge tool registries: two tools are named {name:?} and neither the incoming \
         tool's `on_collision` nor the merge policy settles it; set one of them to \
         `CollisionPolicy::Replace` or `CollisionPolicy::Keep`"
    )]
    MergeCollision {
        /// The contested name.
        name: String,
    },
}

impl ToolRegistryError {
    /// The original's error code (`E_TOOL_ALREADY_REGISTERED` for both variants).
    pub fn code(&self) -> &'static str {
        "E_TOOL_ALREADY_REGISTERED"
    }

    /// The contested tool name.
    pub fn name(&self) -> &str {
        match self {
            Self::AlreadyRegistered { name, .. } | Self::MergeCollision { name } => name,
        }
    }
}

/// The tools a turn offers the model, in insertion order, some of them possibly hidden.
///
/// Hiding keeps a tool registered but out of [`visible`](Self::visible); names may be hidden
/// before their tool is registered. Cloning is cheap (tools are shared).
///
/// ```
/// use adk::primitives::{Tool, ToolRegistry};
///
/// fn tool(name: &str) -> Tool {
///     Tool::builder(name).description("demo").handler(|_, _| async { Ok("ok") }).build().unwrap()
/// }
///
/// let mut tools = ToolRegistry::from_tools([tool("search"), tool("fetch")])?;
/// tools.hide(["fetch"]);
/// let visible: Vec<String> = tools.visible().iter().map(|tool| tool.name().to_owned()).collect();
/// assert_eq!(visible, ["search"]);
///
/// let refused = tools.register(tool("search")).unwrap_err();
/// assert_eq!(refused.code(), "E_TOOL_ALREADY_REGISTERED");
/// # Ok::<(), adk::primitives::ToolRegistryError>(())
/// ```
#[derive(Debug, Default)]
pub struct ToolRegistry {
    tools: Vec<Tool>,
    hidden: HashSet<String, NameHasher>,
}

impl Clone for ToolRegistry {
    /// The same tools and hidden names. An empty part is made, not copied: a dispatch clones
    /// its turn's registry, most turns hide no tool and many register none, and cloning an
    /// empty vector or set is still an out-of-line call (about 45 instructions a dispatch for
    /// an empty registry).
    fn clone(&self) -> Self {
        Self {
            tools: if self.tools.is_empty() {
                Vec::new()
            } else {
                self.tools.clone()
            },
            hidden: if self.hidden.is_empty() {
                HashSet::default()
            } else {
                self.hidden.clone()
            },
        }
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry of `tools` in order; refuses a repeated name.
    pub fn from_tools(tools: impl IntoIterator<Item = Tool>) -> Result<Self, ToolRegistryError> {
        let mut registry = Self::new();
        for tool in tools {
            registry.register(tool)?;
        }
        Ok(registry)
    }

    /// Adds `tool` at the end; refuses it (handing it back in the error) when its name is taken.
    pub fn register(&mut self, tool: Tool) -> Result<(), ToolRegistryError> {
        if self.contains(tool.name()) {
            return Err(ToolRegistryError::AlreadyRegistered {
                name: tool.name().to_owned(),
                rejected: Box::new(tool),
            });
        }
        self.tools.push(tool);
        Ok(())
    }

    /// Adds `tool`, replacing a tool of the same name in its position; returns the replaced one.
    pub fn register_overwriting(&mut self, tool: Tool) -> Option<Tool> {
        match self.position(tool.name()) {
            Some(index) => Some(std::mem::replace(&mut self.tools[index], tool)),
            None => {
                self.tools.push(tool);
                None
            }
        }
    }

    /// Removes the tool named `name` and forgets that it was hidden; `None` when absent.
    pub fn unregister(&mut self, name: &str) -> Option<Tool> {
        self.hidden.remove(name);
        self.position(name).map(|index| self.tools.remove(index))
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    /// Whether a tool named `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every tool, hidden or not, in insertion order.
    pub fn all(&self) -> &[Tool] {
        &self.tools
    }

    /// The tools not hidden, in insertion order.
    pub fn visible(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .filter(|tool| !self.hidden.contains(tool.name()))
            .cloned()
            .collect()
    }

    /// The registered tools that are hidden, in insertion order.
    pub fn hidden(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .filter(|tool| self.hidden.contains(tool.name()))
            .cloned()
            .collect()
    }

    /// Whether `name` is hidden (registered or not).
    pub fn is_hidden(&self, name: &str) -> bool {
        self.hidden.contains(name)
    }

    /// Hides `names`; names with no tool yet are remembered.
    pub fn hide<Name: Into<String>>(&mut self, names: impl IntoIterator<Item = Name>) {
        self.hidden.extend(names.into_iter().map(Into::into));
    }

    /// Shows `names` again.
    pub fn unhide<Name: AsRef<str>>(&mut self, names: impl IntoIterator<Item = Name>) {
        for name in names {
            self.hidden.remove(name.as_ref());
        }
    }

    /// Hides exactly `names`, showing everything else.
    pub fn set_hidden<Name: Into<String>>(&mut self, names: impl IntoIterator<Item = Name>) {
        self.hidden = names.into_iter().map(Into::into).collect();
    }

    /// Shows every tool.
    pub fn clear_hidden(&mut self) {
        self.hidden.clear();
    }

    /// Removes every ephemeral tool (and its hidden flag); returns them in order. A dispatch
    /// does this to its own `tools` when it is acknowledged, before any `on_ack` handler the
    /// executor registered runs.
    // Inlined, its taking apart not: most registries hold none (every dispatch prunes its own
    // on being acknowledged), and then the look is all it costs.
    #[inline]
    pub fn prune_ephemeral(&mut self) -> Vec<Tool> {
        if !self.tools.iter().any(Tool::ephemeral) {
            return Vec::new();
        }
        self.take_ephemeral()
    }

    /// [`prune_ephemeral`](Self::prune_ephemeral) once it found an ephemeral tool.
    fn take_ephemeral(&mut self) -> Vec<Tool> {
        let (pruned, kept): (Vec<Tool>, Vec<Tool>) =
            self.tools.drain(..).partition(Tool::ephemeral);
        self.tools = kept;
        for tool in &pruned {
            self.hidden.remove(tool.name());
        }
        pruned
    }

    /// The number of registered tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Merges `registries` left to right into a new registry; the inputs are not changed.
    ///
    /// On a name collision the incoming tool's own [`on_collision`](Tool::on_collision) decides
    /// first (`Replace` wins, `Keep` loses); only when it is `Fail` does `policy` decide, and a
    /// `Fail` there is a [`ToolRegistryError::MergeCollision`]. A replacing tool takes the
    /// replaced one's position. Each surviving tool keeps the hidden flag it had in the
    /// registry it came from. Meeting the very same tool again (a clone of it, as when a
    /// registry is merged with itself) is not a collision.
    ///
    /// ```
    /// use adk::primitives::{CollisionPolicy, Tool, ToolRegistry};
    ///
    /// fn tool(name: &str, description: &str) -> Tool {
    ///     Tool::builder(name).description(description)
    ///         .handler(|_, _| async { Ok("ok") }).build().unwrap()
    /// }
    ///
    /// let base = ToolRegistry::from_tools([tool("search", "v1")])?;
    /// let update = ToolRegistry::from_tools([tool("search", "v2")])?;
    /// let merged = ToolRegistry::merge([&base, &update], CollisionPolicy::Replace)?;
    /// assert_eq!(merged.get("search").unwrap().description(), "v2");
    /// assert!(ToolRegistry::merge([&base, &update], CollisionPolicy::Fail).is_err());
    /// # Ok::<(), adk::primitives::ToolRegistryError>(())
    /// ```
    pub fn merge<'registry>(
        registries: impl IntoIterator<Item = &'registry ToolRegistry>,
        policy: CollisionPolicy,
    ) -> Result<Self, ToolRegistryError> {
        let mut merged = Self::new();
        for registry in registries {
            for incoming in &registry.tools {
                let incoming_hidden = registry.hidden.contains(incoming.name());
                let Some(index) = merged.position(incoming.name()) else {
                    merged.tools.push(incoming.clone());
                    merged.set_flag(incoming.name(), incoming_hidden);
                    continue;
                };
                if merged.tools[index].is_same(incoming) {
                    continue;
                }
                let decision = match incoming.on_collision() {
                    CollisionPolicy::Fail => policy,
                    own => own,
                };
                match decision {
                    CollisionPolicy::Replace => {
                        merged.tools[index] = incoming.clone();
                        merged.set_flag(incoming.name(), incoming_hidden);
                    }
                    CollisionPolicy::Keep => {}
                    CollisionPolicy::Fail => {
                        return Err(ToolRegistryError::MergeCollision {
                            name: incoming.name().to_owned(),
                        });
                    }
                }
            }
        }
        Ok(merged)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.tools.iter().position(|tool| tool.name() == name)
    }

    fn set_flag(&mut self, name: &str, hidden: bool) {
        if hidden {
            self.hidden.insert(name.to_owned());
        } else {
            self.hidden.remove(name);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        described(name, "demo", CollisionPolicy::Fail)
    }

    fn described(name: &str, description: &str, on_collision: CollisionPolicy) -> Tool {
        Tool::builder(name)
            .description(description)
            .on_collision(on_collision)
            .handler(|_, _| async { Ok("ok") })
            .build()
            .unwrap()
    }

    #[test]
    fn a_clone_has_the_same_tools_and_hidden_names_and_changes_on_its_own() {
        let empty = ToolRegistry::new();
        let copy = empty.clone();
        assert_eq!(copy.len(), 0);
        assert!(copy.hidden().is_empty());

        let mut registry = ToolRegistry::from_tools([tool("search"), tool("fetch")]).unwrap();
        registry.hide(["fetch"]);
        let mut copy = registry.clone();
        assert_eq!(copy.len(), 2);
        assert!(copy.get("search").is_some());
        assert!(copy.is_hidden("fetch"));
        copy.hide(["search"]);
        assert!(copy.is_hidden("search"));
        assert!(
            !registry.is_hidden("search"),
            "the original is not changed by its copy"
        );
    }

    fn ephemeral(name: &str) -> Tool {
        Tool::builder(name)
            .description("demo")
            .ephemeral(true)
            .handler(|_, _| async { Ok("ok") })
            .build()
            .unwrap()
    }

    fn names(tools: &[Tool]) -> Vec<&str> {
        tools.iter().map(Tool::name).collect()
    }

    #[test]
    fn registration_keeps_insertion_order() {
        let registry = ToolRegistry::from_tools([tool("b"), tool("a"), tool("c")]).unwrap();
        assert_eq!(names(registry.all()), ["b", "a", "c"]);
    }

    #[test]
    fn registering_a_taken_name_is_refused_and_hands_the_tool_back() {
        let mut registry = ToolRegistry::from_tools([tool("a")]).unwrap();
        let error = registry.register(tool("a")).unwrap_err();
        assert!(error.to_string().contains("register_overwriting"));
        assert!(
            matches!(error, ToolRegistryError::AlreadyRegistered { ref rejected, .. } if rejected.name() == "a")
        );
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn from_tools_refuses_duplicate_names() {
        let error = ToolRegistry::from_tools([tool("a"), tool("a")]).unwrap_err();
        assert_eq!(error.code(), "E_TOOL_ALREADY_REGISTERED");
        assert_eq!(error.name(), "a");
    }

    #[test]
    fn overwriting_keeps_position() {
        let mut registry = ToolRegistry::from_tools([tool("a"), tool("b"), tool("c")]).unwrap();
        let replaced = registry.register_overwriting(described("b", "new", CollisionPolicy::Fail));
        assert_eq!(
            replaced
                .map(|tool| tool.description().to_owned())
                .as_deref(),
            Some("demo")
        );
        assert_eq!(names(registry.all()), ["a", "b", "c"]);
        assert_eq!(registry.get("b").unwrap().description(), "new");
    }

    #[test]
    fn unregistering_an_absent_tool_is_a_no_op() {
        let mut registry = ToolRegistry::from_tools([tool("a")]).unwrap();
        assert!(registry.unregister("zzz").is_none());
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn unregistering_also_unhides() {
        let mut registry = ToolRegistry::from_tools([tool("a")]).unwrap();
        registry.hide(["a"]);
        registry.unregister("a");
        registry.register(tool("a")).unwrap();
        assert_eq!(registry.visible().len(), 1);
    }

    #[test]
    fn hiding_unknown_names_is_accepted_and_applies_on_registration() {
        let mut registry = ToolRegistry::new();
        registry.hide(["later"]);
        registry.register(tool("later")).unwrap();
        assert!(registry.visible().is_empty());
        assert_eq!(names(&registry.hidden()), ["later"]);
    }

    #[test]
    fn set_hidden_replaces_the_hidden_set_and_clear_hidden_shows_all() {
        let mut registry = ToolRegistry::from_tools([tool("a"), tool("b")]).unwrap();
        registry.hide(["a"]);
        registry.set_hidden(["b"]);
        assert_eq!(names(&registry.visible()), ["a"]);
        registry.unhide(["b"]);
        assert_eq!(registry.visible().len(), 2);
        registry.hide(["a", "b"]);
        registry.clear_hidden();
        assert_eq!(registry.visible().len(), 2);
    }

    #[test]
    fn pruning_removes_ephemeral_tools_and_their_hidden_flags() {
        let mut registry =
            ToolRegistry::from_tools([tool("kept"), ephemeral("gone"), tool("also")]).unwrap();
        registry.hide(["gone"]);
        let pruned = registry.prune_ephemeral();
        assert_eq!(names(&pruned), ["gone"]);
        assert_eq!(names(registry.all()), ["kept", "also"]);
        assert!(!registry.is_hidden("gone"));
    }

    #[test]
    fn merge_fails_on_collision_when_no_policy_settles_it() {
        let left = ToolRegistry::from_tools([tool("a")]).unwrap();
        let right = ToolRegistry::from_tools([tool("a")]).unwrap();
        let error = ToolRegistry::merge([&left, &right], CollisionPolicy::Fail).unwrap_err();
        assert!(matches!(error, ToolRegistryError::MergeCollision { ref name } if name == "a"));
    }

    #[test]
    fn the_incoming_tools_own_policy_decides_before_the_merge_policy() {
        let base =
            ToolRegistry::from_tools([described("a", "base", CollisionPolicy::Fail)]).unwrap();
        let keeper =
            ToolRegistry::from_tools([described("a", "keep", CollisionPolicy::Keep)]).unwrap();
        let replacer =
            ToolRegistry::from_tools([described("a", "replace", CollisionPolicy::Replace)])
                .unwrap();

        let kept = ToolRegistry::merge([&base, &keeper], CollisionPolicy::Replace).unwrap();
        assert_eq!(kept.get("a").unwrap().description(), "base");

        let replaced = ToolRegistry::merge([&base, &replacer], CollisionPolicy::Fail).unwrap();
        assert_eq!(replaced.get("a").unwrap().description(), "replace");

        let by_policy = ToolRegistry::merge(
            [
                &base,
                &ToolRegistry::from_tools([described("a", "new", CollisionPolicy::Fail)]).unwrap(),
            ],
            CollisionPolicy::Keep,
        )
        .unwrap();
        assert_eq!(by_policy.get("a").unwrap().description(), "base");
    }

    #[test]
    fn merge_propagates_hidden_flags_of_surviving_tools_and_leaves_inputs_alone() {
        let mut left = ToolRegistry::from_tools([tool("a"), tool("b")]).unwrap();
        left.hide(["a"]);
        let mut right = ToolRegistry::from_tools([
            described("b", "right", CollisionPolicy::Replace),
            tool("c"),
        ])
        .unwrap();
        right.hide(["b"]);
        let merged = ToolRegistry::merge([&left, &right], CollisionPolicy::Fail).unwrap();
        assert_eq!(names(merged.all()), ["a", "b", "c"]);
        assert_eq!(names(&merged.hidden()), ["a", "b"]);
        assert_eq!(left.get("b").unwrap().description(), "demo");
        assert_eq!(names(&left.hidden()), ["a"]);
    }

    #[test]
    fn merging_a_registry_with_itself_is_not_a_collision() {
        let registry = ToolRegistry::from_tools([tool("a")]).unwrap();
        let merged = ToolRegistry::merge([&registry, &registry], CollisionPolicy::Fail).unwrap();
        assert_eq!(merged.len(), 1);
    }
}

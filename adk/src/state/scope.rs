//! The four scopes a state key can have, told apart by the key's prefix.

/// Where a state key lives and how long it lasts, read from its prefix (Google ADK's rule).
///
/// | key | scope | shared by | persisted |
/// |---|---|---|---|
/// | `step` (no prefix) | [`Session`](Scope::Session) | this session | yes, with a session store |
/// | `user:theme` | [`User`](Scope::User) | every session of this user in this app | yes |
/// | `app:motd` | [`App`](Scope::App) | every user and session of this app | yes |
/// | `temp:scratch` | [`Temp`](Scope::Temp) | this turn only | never |
///
/// A key with any other `word:` prefix is a session key whose name contains a colon, as in
/// Google ADK; [`state_key!`](crate::state_key) refuses such names at compile time because they
/// are usually a misspelt scope.
///
/// ```
/// use adk::state::Scope;
///
/// assert_eq!(Scope::of("user:theme"), (Scope::User, "theme"));
/// assert_eq!(Scope::of("step"), (Scope::Session, "step"));
/// assert_eq!(Scope::of("temp:x"), (Scope::Temp, "x"));
/// assert_eq!(Scope::App.prefix(), "app:");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// No prefix: this session's state.
    Session,
    /// `app:`: the app's state, shared by every user and session.
    App,
    /// `user:`: the user's state in this app, shared by every session of the user.
    User,
    /// `temp:`: this turn's state, never persisted.
    Temp,
}

impl Scope {
    /// The prefix of app keys.
    pub const APP_PREFIX: &'static str = "app:";
    /// The prefix of user keys.
    pub const USER_PREFIX: &'static str = "user:";
    /// The prefix of temporary keys.
    pub const TEMP_PREFIX: &'static str = "temp:";

    /// The scope of `key` and its name without the prefix.
    #[must_use]
    pub fn of(key: &str) -> (Self, &str) {
        for scope in [Self::App, Self::User, Self::Temp] {
            if let Some(name) = key.strip_prefix(scope.prefix()) {
                return (scope, name);
            }
        }
        (Self::Session, key)
    }

    /// The prefix that marks this scope (`""` for session keys).
    #[must_use]
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::Session => "",
            Self::App => Self::APP_PREFIX,
            Self::User => Self::USER_PREFIX,
            Self::Temp => Self::TEMP_PREFIX,
        }
    }

    /// Whether a session store keeps keys of this scope (every scope but `temp:`).
    #[must_use]
    pub const fn is_persistent(self) -> bool {
        !matches!(self, Self::Temp)
    }

    /// `name` with this scope's prefix: the key as middleware reads and writes it.
    ///
    /// ```
    /// assert_eq!(adk::state::Scope::User.key("theme"), "user:theme");
    /// ```
    #[must_use]
    pub fn key(self, name: &str) -> String {
        let mut key = String::with_capacity(self.prefix().len() + name.len());
        key.push_str(self.prefix());
        key.push_str(name);
        key
    }
}

//! [`Identity`]: who spoke.

use serde::{Deserialize, Serialize, Serializer};
use smol_str::SmolStr;

use super::error::Checker;
use super::{PrimitiveError, PrimitiveKind, Tokenizable};

/// Who a message or thought belongs to: a stable identifier and how to present it to a model.
///
/// Deserializes from an object `{"identifier": .., "representation": ..}` (a numeric identifier
/// is accepted and kept as its decimal text) or from a bare string used for both fields.
///
/// ```
/// use adk::primitives::Identity;
///
/// let alice = Identity::new("user-42", "Alice")?;
/// assert_eq!(alice.identifier(), "user-42");
/// assert_eq!(alice.representation().render(), "Alice");
///
/// let restored: Identity = serde_json::from_str("\"assistant\"").unwrap();
/// assert_eq!(restored.identifier(), "assistant");
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "IdentityFields")]
pub struct Identity {
    // Every message carries an identity. A role's default one is static text (both parts), a
    // short identifier is inline: cloning either into a message and dropping it touch no
    // reference count; a longer one is shared.
    #[serde(serialize_with = "serialize_identifier")]
    identifier: SmolStr,
    representation: Tokenizable,
}

fn serialize_identifier<S: Serializer>(
    identifier: &SmolStr,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(identifier.as_str())
}

impl Identity {
    /// An identity; both parts must be non-empty.
    pub fn new(
        identifier: impl Into<String>,
        representation: impl Into<Tokenizable>,
    ) -> Result<Self, PrimitiveError> {
        let identity = Self {
            identifier: SmolStr::from(identifier.into()),
            representation: representation.into(),
        };
        identity.validate()?;
        Ok(identity)
    }

    /// An identity presented as its own identifier.
    ///
    /// ```
    /// let bot = adk::primitives::Identity::named("support-bot")?;
    /// assert_eq!(bot.representation().render(), "support-bot");
    /// # Ok::<(), adk::primitives::PrimitiveError>(())
    /// ```
    pub fn named(identifier: impl Into<String>) -> Result<Self, PrimitiveError> {
        let identifier = identifier.into();
        Self::new(identifier.clone(), identifier)
    }

    /// The stable identifier.
    pub fn identifier(&self) -> &str {
        self.identifier.as_str()
    }

    /// How the identity is presented to a model.
    pub fn representation(&self) -> &Tokenizable {
        &self.representation
    }

    /// The identity a role stands for when none is given (`"user"` or `"assistant"`): static
    /// text, so a message made with it allocates nothing for it and its copies count nothing.
    pub(crate) fn for_role(role: super::Role) -> Self {
        Self::role_default(role).clone()
    }

    /// [`for_role`](Self::for_role), lent from a static: what a message without an identity of
    /// its own answers.
    pub(crate) fn role_default(role: super::Role) -> &'static Self {
        const fn of(role: &'static str) -> Identity {
            Identity {
                identifier: SmolStr::new_static(role),
                representation: Tokenizable::from_static(role),
            }
        }
        static USER: Identity = of("user");
        static ASSISTANT: Identity = of("assistant");
        match role {
            super::Role::User => &USER,
            super::Role::Assistant => &ASSISTANT,
        }
    }

    fn validate(&self) -> Result<(), PrimitiveError> {
        let identifier = self.identifier.as_str();
        let check = Checker::new(PrimitiveKind::Identity, identifier);
        check.non_empty("identifier", identifier)?;
        if self.representation.is_empty_static() {
            return Err(check.fail("representation", "must not be empty"));
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum IdentityFields {
    Named(String),
    Full {
        identifier: IdentifierField,
        representation: Tokenizable,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum IdentifierField {
    Text(String),
    Number(serde_json::Number),
}

impl TryFrom<IdentityFields> for Identity {
    type Error = PrimitiveError;

    fn try_from(fields: IdentityFields) -> Result<Self, Self::Error> {
        match fields {
            IdentityFields::Named(name) => Self::named(name),
            IdentityFields::Full {
                identifier,
                representation,
            } => {
                let identifier = match identifier {
                    IdentifierField::Text(text) => text,
                    IdentifierField::Number(number) => number.to_string(),
                };
                Self::new(identifier, representation)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn an_empty_identifier_is_rejected() {
        assert_eq!(Identity::new("", "x").unwrap_err().field(), "identifier");
    }

    #[test]
    fn an_empty_representation_is_rejected() {
        assert_eq!(
            Identity::new("a", "").unwrap_err().field(),
            "representation"
        );
    }

    #[test]
    fn a_numeric_identifier_is_kept_as_text() {
        let identity: Identity =
            serde_json::from_str(r#"{"identifier": 42, "representation": "Bob"}"#).unwrap();
        assert_eq!(identity.identifier(), "42");
    }

    #[test]
    fn a_role_s_default_identity_is_the_role_s_name_as_any_identity_made_of_it() {
        for (role, name) in [
            (crate::primitives::Role::User, "user"),
            (crate::primitives::Role::Assistant, "assistant"),
        ] {
            let default = Identity::for_role(role);
            let named = Identity::named(name).unwrap();
            assert_eq!(default, named);
            assert_eq!(default.identifier(), name);
            assert_eq!(default.representation().as_static(), Some(name));
            assert_eq!(format!("{default:?}"), format!("{named:?}"));
            assert_eq!(
                serde_json::to_value(&default).unwrap(),
                serde_json::to_value(&named).unwrap()
            );
        }
    }

    #[test]
    fn identity_round_trips_as_an_object() {
        let identity = Identity::new("u1", "Ann").unwrap();
        let json = serde_json::to_value(&identity).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"identifier": "u1", "representation": "Ann"})
        );
        assert_eq!(serde_json::from_value::<Identity>(json).unwrap(), identity);
    }
}

//! Support for the code `stash_key!` and `stash_keys!` generate. Not a public API.

/// What a stash key's type must be: owned serde data, checked where the key is declared so a
/// wrong type is reported there rather than at its first `get` or `set`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored in the stash",
    label = "stash values are owned serde data: `Serialize + DeserializeOwned + Send + Sync + 'static`",
    note = "derive `serde::Serialize` and `serde::Deserialize` for your own types; for a point in time store `std::time::SystemTime` or `jiff::Timestamp`, not `Instant`, which has no serialized form"
)]
pub trait StashValue {}

#[diagnostic::do_not_recommend]
impl<T> StashValue for T where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static
{
}

/// Called in every generated key's initializer, spanned at the user's type.
pub const fn assert_stash_value<T: StashValue + ?Sized>() {}

/// The same check for a key whose type is inferred (`stash_key!("a.b" => _)`).
pub const fn checked_key<T: StashValue>(key: crate::StashKey<T>) -> crate::StashKey<T> {
    key
}

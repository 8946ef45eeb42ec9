//! A borrowed key type is refused where the key is declared, with the owned type to write.
use adk::{StashKey, stash_key, stash_keys};

const NAME: StashKey<&'static str> = stash_key!("my-org.name" => &'static str);

stash_keys! {
    pub TAGS: "my-org.tags" => &'static [u8],
}

fn main() {
    let _ = (NAME.path(), TAGS.path());
}

//! [`IdHasher`]: the one hasher of the kit's maps keyed by ids and names.

/// How the kit's maps keyed by ids and names hash them (a collection's index of record ids, the
/// ids a turn made, a registry's hidden tool names): foldhash rather than the standard library's
/// SipHash, seeded once per process. A fresh map costs nothing (SipHash's `RandomState` reads a
/// thread-local, and a turn makes a score of maps), the hasher takes no room in the map, and an id
/// hashes several times faster, which is most of loading a long history. The random seed keeps
/// ids and names crafted to collide from being written in advance.
#[derive(Clone, Copy, Default)]
pub(crate) struct IdHasher;

impl std::hash::BuildHasher for IdHasher {
    type Hasher = foldhash::fast::FoldHasher<'static>;

    fn build_hasher(&self) -> Self::Hasher {
        static SEEDED: std::sync::LazyLock<foldhash::fast::FixedState> =
            std::sync::LazyLock::new(|| {
                foldhash::fast::FixedState::with_seed(
                    std::collections::hash_map::RandomState::new().hash_one(0_u8),
                )
            });
        SEEDED.build_hasher()
    }
}

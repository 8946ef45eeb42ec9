//! [`Lean`]: a field whose drop is one test where its holder is dropped, and a call only when
//! it holds something.
//!
//! A context holds many fields that most turns leave empty (four of its five collections, the
//! write queue, the stream accumulators, the rare lists, an unmade token), and so does a state
//! (nothing loaded, no changes, no middleware state); a turn drops two contexts and two states.
//! The drop glue of an empty `Vec`, `Option` or `OnceLock` field is still an out-of-line call
//! that saves registers before finding nothing to drop: 9 to 28 instructions each, a few
//! hundred a turn in all. Wrapped in [`Lean`], the field's
//! value sits in a `ManuallyDrop` (so it has no glue of its own), and `Lean`'s inlined `Drop`
//! asks it for what it holds ([`Vacant`]); only what a value holds is taken out (through
//! `DerefMut`: no `unsafe`) and dropped, by an out-of-line call.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

/// A value that can tell, cheaply, whether dropping it would do anything, and hand over what
/// it holds when it would, leaving itself with nothing to drop.
pub(crate) trait Vacant {
    /// What a value that is not vacant holds and frees when dropped.
    type Held;

    /// What it holds, taken out; `None` when dropping it would free nothing and run no other
    /// drop.
    fn take_held(&mut self) -> Option<Self::Held>;
}

impl<T> Vacant for Option<T> {
    type Held = T;

    #[inline]
    fn take_held(&mut self) -> Option<T> {
        self.take()
    }
}

impl<T> Vacant for Vec<T> {
    type Held = Self;

    /// A vector that has an allocation (even emptied), which it frees.
    #[inline]
    fn take_held(&mut self) -> Option<Self> {
        (self.capacity() != 0).then(|| std::mem::take(self))
    }
}

impl<T> Vacant for OnceLock<T> {
    type Held = T;

    #[inline]
    fn take_held(&mut self) -> Option<T> {
        self.take()
    }
}

/// `T`, dropped by a test inlined where its holder is dropped and, when it is not
/// [`Vacant`], an out-of-line call. Reads and writes go through `Deref` and `DerefMut`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lean<T: Vacant>(ManuallyDrop<T>);

impl<T: Vacant> Lean<T> {
    /// `value`, to be dropped leanly.
    #[inline]
    pub(crate) const fn new(value: T) -> Self {
        Self(ManuallyDrop::new(value))
    }
}

impl<T: Vacant> Drop for Lean<T> {
    #[inline]
    fn drop(&mut self) {
        if let Some(held) = self.0.take_held() {
            drop_out_of_line(held);
        }
    }
}

/// Drops what a [`Lean`] held, out of line: the drop glue stays out of its holder's drop.
#[inline(never)]
fn drop_out_of_line<T>(value: T) {
    drop(value);
}

impl<T: Vacant> Deref for Lean<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Vacant> DerefMut for Lean<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn what_a_lean_holds_is_dropped_with_it() {
        let shared = Arc::new(());
        drop(Lean::new(Some(Arc::clone(&shared))));
        assert_eq!(
            Arc::strong_count(&shared),
            1,
            "the option's value was dropped"
        );

        let mut list: Lean<Vec<Arc<()>>> = Lean::default();
        list.push(Arc::clone(&shared));
        list.push(Arc::clone(&shared));
        drop(list);
        assert_eq!(
            Arc::strong_count(&shared),
            1,
            "the vector's values were dropped"
        );

        let token: Lean<OnceLock<Arc<()>>> = Lean::default();
        assert!(token.set(Arc::clone(&shared)).is_ok());
        drop(token);
        assert_eq!(Arc::strong_count(&shared), 1, "the made value was dropped");
    }

    #[test]
    fn only_a_value_that_holds_something_hands_it_over() {
        assert_eq!(None::<u8>.take_held(), None);
        let mut some = Some(3);
        assert_eq!(some.take_held(), Some(3));
        assert_eq!(some, None, "nothing is left to drop");

        assert!(Vec::<u8>::new().take_held().is_none());
        let mut emptied = vec![1_u8];
        emptied.clear();
        let held = emptied.take_held();
        assert!(
            held.is_some_and(|vector| vector.capacity() != 0),
            "an emptied vector still frees its allocation"
        );
        assert_eq!(emptied.capacity(), 0);

        assert_eq!(OnceLock::<u8>::new().take_held(), None);
        let mut made = OnceLock::from(5_u8);
        assert_eq!(made.take_held(), Some(5));
        assert!(made.get().is_none());
    }
}

//! A global allocator that counts allocations (`alloc` and `realloc`) made inside
//! [`counted`], and forwards every call to the system allocator unchanged: shared by the benches
//! that report allocations per run (`benches/turn.rs`, and the side-by-side `benches/peers/`),
//! so both count the same way.
//!
//! Outside [`counted`] nothing is counted: a count is a locked instruction (about 20 cycles on
//! this machine, and a barrier), which in the timed rows weighed on every kit by how many
//! allocations it makes (13 a turn for adk, over 200 for the peers).
//!
//! A bench includes it with `#[path]` and installs it:
//!
//! ```ignore
//! #[path = "support/counting_allocator.rs"]
//! mod counting_allocator;
//! #[global_allocator]
//! static GLOBAL: counting_allocator::CountingAllocator = counting_allocator::CountingAllocator;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Counts every allocation; see the module docs.
pub struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

/// Runs `work` and returns how many allocations (`alloc` and `realloc` calls) the process made
/// meanwhile.
pub fn counted(work: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    work();
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// Counts one allocation when [`counted`] is running: a plain load otherwise.
#[inline]
fn count() {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// Counting allocations needs a global allocator, which is an unsafe trait; this one only
// counts and forwards every call to the system allocator unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged to the system allocator with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from `System.alloc` with this layout.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

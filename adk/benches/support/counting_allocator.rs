//! A global allocator that counts allocations (`alloc` and `realloc`) and forwards every call
//! to the system allocator unchanged: shared by the benches that report allocations per run
//! (`benches/turn.rs`, and the side-by-side `benches/peers/`), so both count the same way.
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
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts every allocation; see the module docs.
pub struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// How many allocations the process has made so far (`alloc` and `realloc` calls).
pub fn allocations() -> usize {
    ALLOCATIONS.load(Ordering::Relaxed)
}

// Counting allocations needs a global allocator, which is an unsafe trait; this one only
// counts and forwards every call to the system allocator unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from `System.alloc` with this layout.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

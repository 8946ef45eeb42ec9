//! Where a pipeline walk keeps its middleware futures: one block of memory per walk, one slot per
//! middleware, instead of one heap allocation per middleware per walk.
//!
//! A middleware's future holds the rest of the walk (`next.run(ctx)`), so the futures nest, and
//! their depth is only known at run time: the runner cannot store them inline. Boxing each one
//! cost a `malloc` and a `free` per layer per turn, more than everything else a layer does. The
//! walk now allocates its slots once (`Slots`), hands each middleware its own slot, and the
//! future is written into that slot and dropped there. A future too large or too aligned for a
//! slot is boxed and the box kept in the slot, so every middleware still works.
//!
//! The future is polled once as soon as it is written ([`Slot::hold`] takes the waker of the
//! poll that started it), with its type still known: a middleware that finishes on its first
//! poll, as most do, is polled and dropped by direct calls, and only one that waits is handed
//! on as a type-erased [`InSlot`].
//!
//! This is, with `chain::RunLayer`'s lending of the context, the crate's only `unsafe` code,
//! kept to what the layout needs:
//! - a future is written into slot memory of a size and alignment checked first;
//! - it is polled pinned where it was written, and dropped there, by the one [`InSlot`] that owns
//!   it;
//! - the memory outlives the future: a slot is borrowed by its `InSlot` for the future's whole
//!   life, and if a future was leaked (an `InSlot` forgotten, for example a middleware that
//!   `mem::forget`s its `next.run(ctx)` future after polling it) its memory is leaked with it
//!   rather than freed under a pinned value.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use super::{BoxError, BoxFuture};

/// The bytes one slot holds. A pass-through `#[middleware]` future takes about half of it (see
/// the test `a_pass_through_middleware_future_fits_its_slot`); larger futures are boxed.
pub(crate) const SLOT_BYTES: usize = 256;

type Output = Result<(), BoxError>;

/// The memory of one slot.
#[repr(C, align(16))]
pub struct SlotMemory([u8; SLOT_BYTES]);

/// The slots of one walk: no allocation once a walk as deep has run on this thread.
pub(crate) struct Slots {
    memory: Box<[MaybeUninit<SlotMemory>]>,
    /// How many of them this walk uses.
    count: usize,
    /// How many futures live in `memory`: raised when one is written, lowered when it is dropped.
    live: AtomicUsize,
}

thread_local! {
    /// The slots of the last walk that ended on this thread, kept for the next one: a walk
    /// allocates only when no spare is at hand or the spare is too short.
    static SPARE: Cell<Option<Box<[MaybeUninit<SlotMemory>]>>> = const { Cell::new(None) };
}

impl Slots {
    pub(crate) fn new(count: usize) -> Self {
        // `try_with`: a walk may start or end while this thread's locals are being destroyed
        // (a runner future dropped by another thread-local's destructor); it then does without
        // the spare instead of panicking.
        let memory = match SPARE.try_with(Cell::take).ok().flatten() {
            Some(spare) if spare.len() >= count => spare,
            // A shorter spare is dropped: the longer slots replace it when this walk ends.
            _ => Box::new_uninit_slice(count),
        };
        Self {
            memory,
            count,
            live: AtomicUsize::new(0),
        }
    }

    /// The walk's slots, exactly one per middleware (a reused spare may hold more), and the
    /// count their futures keep.
    pub(crate) fn split(&mut self) -> (&mut [MaybeUninit<SlotMemory>], &AtomicUsize) {
        (&mut self.memory[..self.count], &self.live)
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        let memory = std::mem::take(&mut self.memory);
        if self.live.load(Ordering::Acquire) != 0 {
            // A future in a slot was never dropped (its `InSlot` was forgotten). It is pinned,
            // so its memory must stay valid for ever: leak the slots rather than free or reuse
            // them.
            std::mem::forget(memory);
            return;
        }
        // Every future was dropped: the memory is vacant and can serve the next walk. A spare
        // left by a walk nested in this one is kept only when it is longer.
        if !memory.is_empty() {
            let _ = SPARE.try_with(|spare| match spare.take() {
                Some(other) if other.len() > memory.len() => spare.set(Some(other)),
                _ => spare.set(Some(memory)),
            });
        }
    }
}

/// One vacant slot, handed to [`Middleware::handle_in_slot`](super::Middleware::handle_in_slot),
/// with the waker of the poll that started the middleware. Not a public API: `#[middleware]`
/// generates the code that fills it.
pub struct Slot<'a, 'poll> {
    memory: &'a mut MaybeUninit<SlotMemory>,
    live: &'a AtomicUsize,
    waker: &'poll Waker,
}

/// How a middleware's first poll went: what [`Slot::hold`] returns, for the pipeline walk to
/// read. Not a public API, and opaque: the future it may hold can only be polled and dropped
/// in its slot by the walk that owns the slot.
#[must_use = "the walk reads the middleware's outcome from it"]
pub struct Started<'a>(pub(super) Progress<'a>);

/// What [`Started`] holds.
pub(super) enum Progress<'a> {
    /// It finished on its first poll; its future was already dropped.
    Finished(Output),
    /// It is waiting; poll this to go on.
    Waiting(InSlot<'a>),
}

impl<'a, 'poll> Slot<'a, 'poll> {
    pub(crate) fn new(
        memory: &'a mut MaybeUninit<SlotMemory>,
        live: &'a AtomicUsize,
        waker: &'poll Waker,
    ) -> Self {
        Self {
            memory,
            live,
            waker,
        }
    }

    /// Writes `future` into the slot (or, when it does not fit, a box holding it) and polls it
    /// once.
    pub fn hold<F>(self, future: F) -> Started<'a>
    where
        F: Future<Output = Output> + Send + 'a,
    {
        self.hold_made(|| future)
    }

    /// Writes a middleware fn's future into the slot, converting its output with
    /// `into_result`, and polls it once. The future is made by `make` where it is written, so it
    /// is built in the slot rather than built elsewhere and copied in.
    pub(crate) fn place<F>(
        self,
        make: impl FnOnce() -> F,
        into_result: fn(F::Output) -> Output,
    ) -> Started<'a>
    where
        F: Future + Send + 'a,
    {
        self.hold_made(|| Converted {
            future: make(),
            into_result,
        })
    }

    fn hold_box(self, boxed: BoxFuture<'a, Output>) -> Started<'a> {
        self.hold_made(|| boxed)
    }

    #[inline(always)]
    fn hold_made<F>(self, make: impl FnOnce() -> F) -> Started<'a>
    where
        F: Future<Output = Output> + Send + 'a,
    {
        if size_of::<F>() > size_of::<SlotMemory>() || align_of::<F>() > align_of::<SlotMemory>() {
            return self.hold_box(Box::pin(make()));
        }
        let memory = self.memory.as_mut_ptr().cast::<F>();
        // SAFETY: `memory` is valid for writes of `F`: the slot is `SlotMemory` bytes long and
        // aligned as `SlotMemory`, which the check above found enough for `F`, and it is
        // borrowed mutably for `'a`, so nothing else reads or writes it. Whatever it held before
        // was already dropped (a slot is handed out vacant, once per walk).
        unsafe { memory.write(make()) };
        // Owns the future until it finishes or is handed to an `InSlot`: if polling it panics,
        // the unwinding drops it here, in place.
        let placed = Placed {
            // SAFETY: derived from a reference, so not null.
            future: unsafe { NonNull::new_unchecked(memory) },
        };
        // SAFETY: the future was just written to `memory`, is reached only through `placed`
        // (then through the `InSlot` made from it), and is never moved out of it: it is pinned
        // there until dropped in place. The slot outlives it (borrowed for `'a`, or leaked).
        let pinned = unsafe { Pin::new_unchecked(&mut *memory) };
        match pinned.poll(&mut Context::from_waker(self.waker)) {
            Poll::Ready(output) => {
                drop(placed);
                Started(Progress::Finished(output))
            }
            Poll::Pending => {
                std::mem::forget(placed);
                self.live.fetch_add(1, Ordering::Relaxed);
                let future: *mut (dyn Future<Output = Output> + Send + 'a) = memory;
                Started(Progress::Waiting(InSlot {
                    // SAFETY: derived from a reference, so not null.
                    future: unsafe { NonNull::new_unchecked(future) },
                    live: self.live,
                }))
            }
        }
    }
}

/// A future written in a slot, owned by the code that wrote it until its first poll is over:
/// dropped in place, with its type known, when it finished or panicked.
struct Placed<F> {
    future: NonNull<F>,
}

impl<F> Drop for Placed<F> {
    fn drop(&mut self) {
        // SAFETY: the future was written by `Slot::hold_made`, is live, and `Placed` is dropped
        // only when no `InSlot` was made from it (one made from it forgets it first).
        unsafe { self.future.as_ptr().drop_in_place() };
    }
}

/// A middleware fn's future with its output converted to the one every middleware returns.
struct Converted<F: Future> {
    future: F,
    into_result: fn(F::Output) -> Output,
}

impl<F: Future> Future for Converted<F> {
    type Output = Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Output> {
        // SAFETY: `future` is pinned structurally: `Converted` never moves it out, has no `Drop`
        // of its own and is `Unpin` only when `F` is.
        let this = unsafe { self.get_unchecked_mut() };
        let into_result = this.into_result;
        // SAFETY: as above; `this` is not used to move `future` afterwards.
        unsafe { Pin::new_unchecked(&mut this.future) }
            .poll(cx)
            .map(into_result)
    }
}

/// A middleware's future, owned where it was written in its slot: polled pinned there, dropped
/// there. Private to the crate, so only the walk (or [`own_slot`]) that owns the slot holds one.
pub(crate) struct InSlot<'a> {
    future: NonNull<dyn Future<Output = Output> + Send + 'a>,
    live: &'a AtomicUsize,
}

// SAFETY: an `InSlot` owns a `dyn Future + Send` (and borrows its slot exclusively): sending it
// sends that future, which is `Send`. The count it lowers is atomic.
unsafe impl Send for InSlot<'_> {}

impl Future for InSlot<'_> {
    type Output = Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Output> {
        // SAFETY: the future was written by `Slot::hold` and is only ever reached through this
        // `InSlot`, which never moves it: it stays where it is until `drop` drops it in place,
        // so it is pinned. The slot outlives it (borrowed for `'a`, or leaked with it).
        let future = unsafe { Pin::new_unchecked(self.get_mut().future.as_mut()) };
        future.poll(cx)
    }
}

impl Drop for InSlot<'_> {
    fn drop(&mut self) {
        // SAFETY: the future was written by `Slot::hold`, is live, and is dropped only here.
        unsafe { self.future.as_ptr().drop_in_place() };
        self.live.fetch_sub(1, Ordering::Release);
    }
}

/// A slot of its own on the heap, with the middleware in it: what [`own_slot`] returns. The
/// middleware starts on the first poll, which brings the waker a slot is filled with.
struct OwnedSlot<'a, Fill> {
    fill: Option<Fill>,
    waiting: Option<InSlot<'a>>,
    cell: NonNull<OwnedCell>,
}

struct OwnedCell {
    memory: MaybeUninit<SlotMemory>,
    live: AtomicUsize,
}

// SAFETY: `OwnedSlot` owns its cell, the `Send` future in it and the `Send` closure that fills it.
unsafe impl<Fill: Send> Send for OwnedSlot<'_, Fill> {}

impl<'a, Fill> Future for OwnedSlot<'a, Fill>
where
    Fill: for<'poll> FnOnce(Slot<'a, 'poll>) -> Started<'a>,
{
    type Output = Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Output> {
        // SAFETY: nothing in `OwnedSlot` is pinned structurally: the future lives in the cell
        // (which does not move with `OwnedSlot`), and `fill` and `waiting` are moved freely.
        let this = unsafe { self.get_unchecked_mut() };
        if let Some(waiting) = &mut this.waiting {
            let poll = Pin::new(waiting).poll(cx);
            if poll.is_ready() {
                this.waiting = None;
            }
            return poll;
        }
        let Some(fill) = this.fill.take() else {
            // Polled again after it finished: nothing is left to run.
            return Poll::Pending;
        };
        let cell = this.cell.as_ptr();
        // SAFETY: `cell` is a live allocation that only `OwnedSlot` frees, after the future in it
        // is dropped; the references made here are the only ones to it while that future lives.
        let (memory, live) = unsafe { (&mut (*cell).memory, &(*cell).live) };
        match fill(Slot::new(memory, live, cx.waker())).0 {
            Progress::Finished(output) => Poll::Ready(output),
            Progress::Waiting(waiting) => {
                this.waiting = Some(waiting);
                Poll::Pending
            }
        }
    }
}

impl<Fill> Drop for OwnedSlot<'_, Fill> {
    fn drop(&mut self) {
        // Dropped before the cell it lives in.
        self.waiting = None;
        // SAFETY: the cell came from `Box::into_raw` in `own_slot` and is freed only below.
        if unsafe { &(*self.cell.as_ptr()).live }.load(Ordering::Acquire) != 0 {
            // A future in the cell was never dropped (its `InSlot` was forgotten or taken out of
            // `fill`). It is pinned, so its memory must stay valid for ever: leak the cell, as
            // `Slots` leaks a walk's slots.
            return;
        }
        // SAFETY: the cell came from `Box::into_raw` in `own_slot`, and no future lives in it.
        drop(unsafe { Box::from_raw(self.cell.as_ptr()) });
    }
}

/// Runs `fill` on a slot of its own, allocated for it, and boxes the result: how a middleware
/// that fills a slot also serves [`Middleware::handle`](super::Middleware::handle), for callers
/// outside a pipeline walk. `fill` runs on the first poll.
pub(crate) fn own_slot<'a, Fill>(fill: Fill) -> BoxFuture<'a, Output>
where
    Fill: for<'poll> FnOnce(Slot<'a, 'poll>) -> Started<'a> + Send + 'a,
{
    let cell = Box::into_raw(Box::new(OwnedCell {
        memory: MaybeUninit::uninit(),
        live: AtomicUsize::new(0),
    }));
    Box::pin(OwnedSlot {
        fill: Some(fill),
        waiting: None,
        // SAFETY: from `Box::into_raw`, so not null.
        cell: unsafe { NonNull::new_unchecked(cell) },
    })
}

#[cfg(test)]
mod tests {
    //! `own_slot` keeps a future's memory valid for as long as the future lives, even when the
    //! fill closure takes the future's `InSlot` out or forgets it. A soundness review found both
    //! through the then-public `own_slot`; before the fix both read freed memory. `own_slot` and
    //! `InSlot` are now private to the crate, and these stay as its regression tests. Run them
    //! under valgrind or Miri for the full check.
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Waker};

    use super::{InSlot, Progress, Started, own_slot};
    use crate::pipeline::BoxError;

    fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn an_in_slot_taken_out_of_own_slot_outlives_it_safely() {
        let stash: Arc<Mutex<Option<InSlot<'static>>>> = Arc::default();
        let smuggled = Arc::clone(&stash);
        let mut future = own_slot(move |slot| {
            match slot.hold(async move {
                let data = vec![7u8; 64];
                std::future::pending::<()>().await;
                drop(data);
                Ok::<(), BoxError>(())
            }) {
                Started(Progress::Waiting(in_slot)) => {
                    *smuggled.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(in_slot);
                    Started(Progress::Finished(Ok(())))
                }
                other => other,
            }
        });
        assert!(poll_once(future.as_mut()).is_ready());
        // The cell is leaked rather than freed: the future in it still lives.
        drop(future);
        // Drops the future in place and lowers the count, in memory that is still valid.
        drop(
            stash
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .take(),
        );
    }

    #[test]
    fn a_forgotten_in_slot_keeps_its_pinned_future_memory_valid() {
        let notify = Arc::new(tokio::sync::Notify::new());
        let waiter = Arc::clone(&notify);
        let mut future = own_slot(move |slot| {
            match slot.hold(async move {
                waiter.notified().await;
                Ok::<(), BoxError>(())
            }) {
                Started(Progress::Waiting(in_slot)) => {
                    std::mem::forget(in_slot);
                    Started(Progress::Finished(Ok(())))
                }
                other => other,
            }
        });
        assert!(poll_once(future.as_mut()).is_ready());
        // The `Notified` inside the cell stays linked into `notify`'s waiter list, so the cell
        // must not be freed: waking the waiters walks that list.
        drop(future);
        notify.notify_waiters();
    }
}

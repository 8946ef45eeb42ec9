//! `own_slot` keeps a future's memory valid for as long as the future lives, even when safe code
//! takes its `InSlot` out of the fill closure or forgets it (found by a soundness review; before
//! the fix both tests read freed memory). Run under valgrind or Miri for the full check.
#![allow(clippy::unwrap_used, reason = "a test fails loudly on a broken set-up")]
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};

use adk::pipeline::{BoxError, InSlot, Started, own_slot};

fn poll_once<F: Future + ?Sized>(f: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

/// The `InSlot` is smuggled out of the fill closure; `OwnedSlot` then frees its cell under it.
#[test]
fn an_in_slot_taken_out_of_own_slot_outlives_it_safely() {
    let stash: Arc<Mutex<Option<InSlot<'static>>>> = Arc::default();
    let stash2 = Arc::clone(&stash);
    let mut fut = own_slot(move |slot| {
        match slot.hold(async move {
            let data = vec![7u8; 64];
            std::future::pending::<()>().await;
            drop(data);
            Ok::<(), BoxError>(())
        }) {
            Started::Waiting(in_slot) => {
                *stash2.lock().unwrap() = Some(in_slot);
                Started::Finished(Ok(()))
            }
            other => other,
        }
    });
    assert!(poll_once(fut.as_mut()).is_ready());
    drop(fut); // OwnedSlot::drop: Box::from_raw(cell) while the future lives in it
    // InSlot::drop: drop_in_place on freed memory, then fetch_sub on a freed AtomicUsize.
    drop(stash.lock().unwrap().take());
}

/// The `InSlot` is forgotten; `OwnedSlot` frees memory under a pinned future (Pin drop
/// guarantee), and tokio's intrusive waiter list then writes into the freed cell.
#[test]
fn a_forgotten_in_slot_keeps_its_pinned_future_memory_valid() {
    let notify = Arc::new(tokio::sync::Notify::new());
    let n2 = Arc::clone(&notify);
    let mut fut = own_slot(move |slot| {
        match slot.hold(async move {
            n2.notified().await;
            Ok::<(), BoxError>(())
        }) {
            Started::Waiting(in_slot) => {
                std::mem::forget(in_slot);
                Started::Finished(Ok(()))
            }
            other => other,
        }
    });
    assert!(poll_once(fut.as_mut()).is_ready());
    drop(fut); // cell freed; the `Notified` node inside it is still linked into `notify`
    notify.notify_waiters(); // walks the list: reads/writes the freed node
}

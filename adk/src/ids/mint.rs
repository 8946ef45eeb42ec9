//! Minting the kit's ids: UUIDv7 (RFC 9562), later than every one minted before in this
//! process, on any thread, as text or as a [`TurnId`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use super::TurnId;

/// The last UUIDv7 minted in this process, as `millis << 16 | counter`: its 48-bit Unix
/// timestamp in milliseconds and the 16-bit counter that orders the ids of one millisecond.
static LAST_V7: AtomicU64 = AtomicU64::new(0);

/// A fresh UUIDv7 (RFC 9562, section 5.7), later than every one minted before it in this
/// process, on any thread.
///
/// The ids of the kit (turns, messages, events) come from here, not from
/// `uuid::Uuid::now_v7`, whose process-wide context sits behind a lock and costs about 600
/// instructions an id; this is one clock read, one compare-and-swap on [`LAST_V7`] and one draw
/// from the thread's generator (two when the millisecond is new).
///
/// Layout: the 48-bit millisecond timestamp, then a 16-bit counter (RFC 9562 section 6.2,
/// method 1: the 12 bits of `rand_a` and the first 4 of `rand_b`), then 58 random bits. A new
/// millisecond seeds the counter with 15 random bits (its leftmost bit zero, the RFC's rollover
/// guard); an id in the same millisecond as the last, or in an earlier one (the clock stepped
/// back), takes the last's timestamp and counter plus one, so a counter that runs over carries
/// into the timestamp, which runs ahead of the clock until the clock catches up. The random bits
/// come from `rand`'s `ThreadRng` (ChaCha12, a cryptographically secure generator seeded from
/// the operating system and reseeded as it goes), so ids stay hard to guess (RFC 9562 section
/// 6.9) with 58 random bits each.
pub(crate) fn time_ordered_uuid() -> uuid::Uuid {
    let [id] = time_ordered_uuids();
    id
}

/// `N` fresh UUIDv7s in a row, as [`time_ordered_uuid`] mints them one by one, for one clock
/// read: the first takes the clock's millisecond (or the last id's plus one, as there), the
/// others the counters after it; each has its own 58 random bits. Every one is later than every
/// id minted before the call, on any thread, and earlier than every id minted after it.
pub(crate) fn time_ordered_uuids<const N: usize>() -> [uuid::Uuid; N] {
    time_ordered_uuids_since(since_epoch(std::time::SystemTime::now()))
}

/// [`time_ordered_uuids`] for a clock reading the caller made: `since` the Unix epoch (`None`
/// before 1970, see [`since_epoch`]).
fn time_ordered_uuids_since<const N: usize>(since: Option<std::time::Duration>) -> [uuid::Uuid; N] {
    use rand::Rng as _;

    let mut rng = rand::rng();
    let millis = unix_millis(since);
    let mut last = LAST_V7.load(AtomicOrdering::Relaxed);
    let first = loop {
        // The counter's seed is drawn only when the millisecond is new: ids minted in the
        // millisecond of the last take its counter plus one and need none.
        let first = v7_after(last, millis, || u64::from(rng.next_u32() & 0x7FFF));
        // The batch's last id; past `u64::MAX` would need a timestamp past the year 10889.
        let batch_last = first.wrapping_add(N.saturating_sub(1) as u64);
        // One location's read-modify-writes are totally ordered, whatever the ordering
        // argument: every id is later than the one before it.
        match LAST_V7.compare_exchange_weak(
            last,
            batch_last,
            AtomicOrdering::Relaxed,
            AtomicOrdering::Relaxed,
        ) {
            Ok(_) => break first,
            Err(seen) => last = seen,
        }
    };
    let mut next = first;
    std::array::from_fn(|_| {
        let id = v7_from_parts(next, rng.next_u64());
        next = next.wrapping_add(1);
        id
    })
}

/// How long after the Unix epoch `now` is; `None` for a clock before 1970.
pub(crate) fn since_epoch(now: std::time::SystemTime) -> Option<std::time::Duration> {
    now.duration_since(std::time::UNIX_EPOCH).ok()
}

/// A Unix time in whole milliseconds, without going through `u128`: a clock before 1970
/// (`None`) reads as 0, one past the 48 bits of a UUIDv7 (the year 10889) as the last of them.
fn unix_millis(since: Option<std::time::Duration>) -> u64 {
    since.map_or(0, |since| {
        since
            .as_secs()
            .saturating_mul(1000)
            .saturating_add(u64::from(since.subsec_millis()))
            .min(MAX_MILLIS)
    })
}

/// The `millis << 16 | counter` of the id after `last`, given `millis`, the clock's
/// millisecond: `millis` with a counter from `seed` if it is later than the last's, else the
/// last plus one (a counter that runs over carries into the timestamp). `seed` is called only
/// in the first case.
fn v7_after(last: u64, millis: u64, seed: impl FnOnce() -> u64) -> u64 {
    if millis > last >> 16 {
        millis << 16 | seed()
    } else {
        // Past `u64::MAX` would need a timestamp past the year 10889.
        last.wrapping_add(1)
    }
}

/// The UUIDv7 of `millis << 16 | counter` with `random`'s top 58 bits as its random bits.
fn v7_from_parts(timestamp_counter: u64, random: u64) -> uuid::Uuid {
    let millis = u128::from(timestamp_counter >> 16);
    let counter = u128::from(timestamp_counter & 0xFFFF);
    let rand_a = counter >> 4;
    let rand_b = (counter & 0xF) << 58 | u128::from(random >> 6);
    uuid::Uuid::from_u128(millis << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b)
}

/// The largest timestamp a UUIDv7 holds: 48 bits of milliseconds.
const MAX_MILLIS: u64 = (1 << 48) - 1;

/// [`time_ordered_uuid`] as lower-case hyphenated text ([`id_text`]).
pub(crate) fn time_ordered_id() -> Arc<str> {
    id_text(time_ordered_uuid())
}

/// Two of [`time_ordered_uuids`], for the clock reading `since` the Unix epoch
/// ([`since_epoch`]): the turn's user message's id (as [`time_ordered_id`] encodes one) and
/// the turn's, in that order, from the reading that also dates the message.
pub(crate) fn time_ordered_id_pair(since: Option<std::time::Duration>) -> (Arc<str>, TurnId) {
    let [first, second] = time_ordered_uuids_since(since);
    (id_text(first), TurnId::of_uuid(second))
}

/// `id` as lower-case hyphenated text, encoded into a stack buffer (not through the formatting
/// machinery) and copied once into its shared allocation.
fn id_text(id: uuid::Uuid) -> Arc<str> {
    let mut buffer = uuid::Uuid::encode_buffer();
    Arc::from(&*id.hyphenated().encode_lower(&mut buffer))
}

/// [`time_ordered_id`] as a `String`, for the records whose id field is one.
pub(crate) fn time_ordered_string() -> String {
    let mut buffer = uuid::Uuid::encode_buffer();
    time_ordered_uuid()
        .hyphenated()
        .encode_lower(&mut buffer)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_are_uuid_v7_text_with_the_clock_s_millisecond() {
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is past 1970")
            .as_millis();
        let id = TurnId::new();
        let after = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is past 1970")
            .as_millis();
        let uuid = uuid::Uuid::parse_str(id.as_str()).expect("a turn id is a UUID");
        assert_eq!(
            uuid.hyphenated().to_string(),
            id.as_str(),
            "lower-case, hyphenated"
        );
        assert_eq!(uuid.get_version(), Some(uuid::Version::SortRand));
        assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122);
        let (seconds, nanos) = uuid
            .get_timestamp()
            .expect("a v7 UUID has a timestamp")
            .to_unix();
        let millis = u128::from(seconds) * 1000 + u128::from(nanos) / 1_000_000;
        // At most one id ahead of the clock: the counter carries only after 32,768 in a
        // millisecond.
        assert!(
            (before..=after + 1).contains(&millis),
            "{before} <= {millis} <= {after} + 1"
        );
    }

    #[test]
    fn ids_minted_one_after_another_are_unique_and_ascending_as_text() {
        let ids: Vec<Arc<str>> = (0..100_000).map(|_| time_ordered_id()).collect();
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn ids_minted_on_many_threads_are_unique_and_each_later_than_what_came_before() {
        let before = time_ordered_uuid();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| (0..20_000).map(|_| time_ordered_uuid()).collect::<Vec<_>>())
            })
            .collect();
        let mut all = std::collections::HashSet::new();
        for thread in threads {
            let ids = thread.join().expect("a minting thread finishes");
            assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
            assert!(
                ids[0] > before,
                "later than an id minted before the thread started"
            );
            all.extend(ids);
        }
        assert_eq!(all.len(), 80_000, "no id minted twice");
        let after = time_ordered_uuid();
        assert!(
            all.iter().all(|id| *id < after),
            "the next id is later than all of them"
        );
    }

    #[test]
    fn the_counter_orders_a_millisecond_and_carries_into_the_next() {
        let millis = 1_700_000_000_000_u64;
        let unused = || unreachable!("the counter of the last id's millisecond is not seeded");
        // A later millisecond takes the clock's reading and its seed.
        assert_eq!(
            v7_after(millis << 16 | 9, millis + 1, || 3),
            (millis + 1) << 16 | 3
        );
        // The same millisecond, or an earlier one (the clock stepped back): the last plus one,
        // drawing no seed.
        assert_eq!(
            v7_after(millis << 16 | 9, millis, unused),
            millis << 16 | 10
        );
        assert_eq!(
            v7_after(millis << 16 | 9, millis - 5, unused),
            millis << 16 | 10
        );
        // A counter that runs over carries into the timestamp.
        assert_eq!(
            v7_after(millis << 16 | 0xFFFF, millis, unused),
            (millis + 1) << 16
        );

        let ids = [
            millis << 16 | 0x7FFF,
            millis << 16 | 0x8000,
            millis << 16 | 0xFFFF,
        ]
        .map(|parts| v7_from_parts(parts, u64::MAX));
        assert!(
            ids[0] < ids[1] && ids[1] < ids[2],
            "the counter's every bit orders: {ids:?}"
        );
        let carried = v7_from_parts((millis + 1) << 16, 0);
        assert!(ids[2] < carried);
        for id in ids.into_iter().chain([carried]) {
            assert_eq!(id.get_version(), Some(uuid::Version::SortRand));
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        }
        let (seconds, nanos) = carried.get_timestamp().expect("v7").to_unix();
        assert_eq!(seconds * 1000 + u64::from(nanos) / 1_000_000, millis + 1);
    }

    #[test]
    fn ids_minted_in_one_batch_are_consecutive_and_between_their_neighbours() {
        let before = time_ordered_uuid();
        let [first, second, third] = time_ordered_uuids();
        let after = time_ordered_uuid();
        assert!(before < first && first < second && second < third && third < after);
        let parts = |id: uuid::Uuid| (id.as_u128() >> 64) as u64;
        // `millis << 16 | counter` of consecutive ids of a batch: the counter plus one (the
        // version nibble and rand_a sit in the high half; a carry moves the timestamp).
        let stamp = |id: uuid::Uuid| {
            let high = parts(id);
            (high >> 16) << 16 | (high & 0x0FFF) << 4 | (id.as_u128() >> 58 & 0xF) as u64
        };
        assert_eq!(stamp(second), stamp(first) + 1);
        assert_eq!(stamp(third), stamp(second) + 1);
        for id in [first, second, third] {
            assert_eq!(id.get_version(), Some(uuid::Version::SortRand));
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        }
        let random = |id: uuid::Uuid| id.as_u128() & ((1 << 58) - 1);
        assert!(
            random(first) != random(second) && random(second) != random(third),
            "each id of a batch draws its own random bits"
        );
    }

    #[test]
    fn the_clock_reads_in_whole_milliseconds_within_48_bits() {
        use std::time::{Duration, UNIX_EPOCH};
        let millis = |now| unix_millis(since_epoch(now));
        assert_eq!(
            millis(UNIX_EPOCH + Duration::new(1_700_000_000, 999_999_999)),
            1_700_000_000_999
        );
        assert_eq!(millis(UNIX_EPOCH + Duration::from_nanos(1_999_999)), 1);
        assert_eq!(
            millis(UNIX_EPOCH - Duration::from_secs(1)),
            0,
            "before 1970"
        );
        assert_eq!(
            millis(UNIX_EPOCH + Duration::from_secs(1 << 40)),
            MAX_MILLIS,
            "past the year 10889"
        );
    }

    #[test]
    fn the_random_bits_are_the_last_58() {
        let parts = 1_700_000_000_000_u64 << 16 | 0xABCD;
        let low = v7_from_parts(parts, 0).as_u128();
        let high = v7_from_parts(parts, u64::MAX).as_u128();
        assert_eq!(low ^ high, (1 << 58) - 1);
    }
}

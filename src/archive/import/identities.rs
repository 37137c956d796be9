//! The run's identity set while it imports: every record digest already in the run or met
//! so far, and where it was first seen (for a duplicate's message).
//!
//! An open-addressing table of its own rather than a `HashMap`: a million identities make
//! a table of tens of megabytes that every record probes at a random place, a cache and
//! TLB miss each (a tenth of a large import's CPU, all on the reading thread). The sink
//! asks for a batch's slots ahead ([`Identities::prefetch`]), so those misses overlap
//! instead of queueing. Digests are keyed SipHash values, so their low bits pick the slot
//! (linear probing, at most half full). Nothing is ever removed.

use super::sink::Seen;
use crate::record::KeyDigest;

/// A slot: a digest's halves, then the index of its [`Seen`] plus one (0: the slot is
/// empty).
type Slot = [u64; 3];

/// The slot's digest.
fn digest_of(slot: &Slot) -> [u64; 2] {
    [slot[0], slot[1]]
}

/// The identity set (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Identities {
    /// A power of two in length, at most half full; empty until the first insert.
    slots: Vec<Slot>,
    /// Where each identity was first seen, in the order they came.
    seen: Vec<Seen>,
}

fn halves(digest: KeyDigest) -> [u64; 2] {
    [(digest >> 64) as u64, digest as u64]
}

impl Identities {
    /// Room for `identities` without growing.
    pub(super) fn with_capacity(identities: usize) -> Self {
        let mut set = Self::default();
        set.reserve(identities);
        set
    }

    /// Room for `more` identities beyond those held, without growing.
    pub(super) fn reserve(&mut self, more: usize) {
        let wanted = self
            .seen
            .len()
            .saturating_add(more)
            .saturating_mul(2)
            .max(16)
            .checked_next_power_of_two()
            .expect("an identity set beyond the address space");
        if wanted <= self.slots.len() {
            return;
        }
        // Written whole, so its pages are faulted in order now: left to fault at random as
        // records arrive (zeroed memory from the allocator), a million records took 5 %
        // longer. The sink bounds how much is reserved ahead of the records.
        let mut slots = Vec::with_capacity(wanted);
        slots.resize(wanted, [0; 3]);
        let old = std::mem::replace(&mut self.slots, slots);
        for slot in old.into_iter().filter(|slot| slot[2] != 0) {
            let at = self.probe(digest_of(&slot));
            self.slots[at] = slot;
        }
        self.seen.reserve(more);
    }

    /// The slot holding `digest`, or the empty one where it would go.
    fn probe(&self, digest: [u64; 2]) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = digest[1] as usize & mask;
        loop {
            let slot = &self.slots[at];
            if slot[2] == 0 || digest_of(slot) == digest {
                return at;
            }
            at = (at + 1) & mask;
        }
    }

    /// Where `digest` was first seen, if it was.
    pub(super) fn first(&self, digest: KeyDigest) -> Option<&Seen> {
        if self.slots.is_empty() {
            return None;
        }
        let slot = self.slots[self.probe(halves(digest))];
        (slot[2] != 0).then(|| &self.seen[slot[2] as usize - 1])
    }

    /// Records `digest` as first seen at `seen`, unless it was seen before (then nothing
    /// changes: the first place is kept).
    pub(super) fn insert(&mut self, digest: KeyDigest, seen: Seen) {
        self.reserve(1);
        let digest = halves(digest);
        let at = self.probe(digest);
        if self.slots[at][2] == 0 {
            self.seen.push(seen);
            self.slots[at] = [digest[0], digest[1], self.seen.len() as u64];
        }
    }

    /// Asks the CPU for the slot `digest` starts its probe at, as a hint: a lookup soon
    /// after finds it in the cache.
    pub(super) fn prefetch(&self, digest: KeyDigest) {
        if let Some(slot) = self
            .slots
            .get(halves(digest)[1] as usize & (self.slots.len().wrapping_sub(1)))
        {
            prefetch(slot);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn prefetch(slot: &Slot) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: a prefetch only hints at an address (here a live reference); it reads
    // nothing the program sees and cannot fault, and SSE, which it needs, is part of
    // every x86_64 CPU.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(slot).cast()) }
}

#[cfg(not(target_arch = "x86_64"))]
fn prefetch(_: &Slot) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::import::sink::Place;

    fn at(line: u64) -> Seen {
        Seen {
            seq: 1,
            place: Place::Line(line),
        }
    }

    fn line(seen: Option<&Seen>) -> Option<u64> {
        seen.map(|seen| match seen.place {
            Place::Line(line) => line,
            Place::Other(_) => unreachable!(),
        })
    }

    #[test]
    fn every_identity_is_found_where_it_was_first_seen_and_no_other() {
        // Digests that collide in their low bits, to make the probes run long, and random
        // ones; the set grows from empty through many doublings.
        let mut set = Identities::default();
        let colliding = |i: u64| (u128::from(i) << 64) | 0xAB;
        let spread = |i: u64| u128::from(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)) << 7 | 1;
        for i in 1..=5_000 {
            set.insert(colliding(i), at(i));
            set.insert(spread(i), at(10_000 + i));
        }
        // A digest seen again keeps its first place.
        set.insert(colliding(7), at(99));
        for i in 1..=5_000 {
            assert_eq!(line(set.first(colliding(i))), Some(i));
            assert_eq!(line(set.first(spread(i))), Some(10_000 + i));
        }
        for i in 5_001..=6_000 {
            assert_eq!(line(set.first(colliding(i))), None);
            assert_eq!(line(set.first(spread(i))), None);
            set.prefetch(spread(i));
        }
        assert_eq!(set.seen.len(), 10_000);
        assert!(set.slots.len() >= 2 * set.seen.len());
    }

    #[test]
    fn an_empty_set_finds_nothing_and_reserving_does_not_lose_anything() {
        let mut set = Identities::default();
        assert!(set.first(1).is_none());
        set.prefetch(1);
        set.insert(1, at(1));
        set.reserve(100_000);
        assert_eq!(line(set.first(1)), Some(1));
        let sized = Identities::with_capacity(1000);
        assert_eq!(sized.slots.len(), 2048);
    }
}

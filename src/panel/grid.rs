//! The item × side grid: each side's correctness on every item of the panel as two bit
//! columns, `known` and `correct` (correct implies known). A side that lacks an item, or
//! whose record of it has null correctness, is unknown there: unknown is never wrong.
//! Memory is two bits per item per side, and every pairwise 2×2 table is a few popcounts
//! over 64 items at a time.

/// What a side says of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// No record, or a record whose correctness is null.
    Unknown,
    Wrong,
    Correct,
}

impl Cell {
    /// The cell of a record's correctness.
    pub fn of(correct: Option<bool>) -> Self {
        match correct {
            None => Cell::Unknown,
            Some(false) => Cell::Wrong,
            Some(true) => Cell::Correct,
        }
    }

    /// The two-bit code the packed outputs use: 0 unknown, 1 wrong, 2 correct.
    pub fn code(self) -> u8 {
        match self {
            Cell::Unknown => 0,
            Cell::Wrong => 1,
            Cell::Correct => 2,
        }
    }

    /// `Some(correct)` when known.
    pub fn known(self) -> Option<bool> {
        match self {
            Cell::Unknown => None,
            Cell::Wrong => Some(false),
            Cell::Correct => Some(true),
        }
    }
}

/// Correctness of `sides` sides on `items` items.
#[derive(Debug, Clone)]
pub struct Grid {
    sides: usize,
    items: usize,
    words: usize,
    known: Vec<u64>,
    correct: Vec<u64>,
}

/// The 2×2 table of two sides over the items known on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PairCounts {
    pub both_correct: u64,
    pub a_only_correct: u64,
    pub b_only_correct: u64,
    pub both_wrong: u64,
}

impl PairCounts {
    /// Items known on both sides.
    pub fn known_pairs(&self) -> u64 {
        self.both_correct + self.a_only_correct + self.b_only_correct + self.both_wrong
    }
}

impl Grid {
    /// A grid where every cell is unknown.
    pub fn new(sides: usize, items: usize) -> Self {
        let words = items.div_ceil(64);
        Self {
            sides,
            items,
            words,
            known: vec![0; sides * words],
            correct: vec![0; sides * words],
        }
    }

    pub fn sides(&self) -> usize {
        self.sides
    }

    pub fn items(&self) -> usize {
        self.items
    }

    fn at(&self, side: usize, item: usize) -> (usize, u64) {
        debug_assert!(side < self.sides && item < self.items);
        (side * self.words + item / 64, 1u64 << (item % 64))
    }

    /// Sets a cell.
    pub fn set(&mut self, side: usize, item: usize, cell: Cell) {
        let (word, bit) = self.at(side, item);
        self.known[word] &= !bit;
        self.correct[word] &= !bit;
        match cell {
            Cell::Unknown => {}
            Cell::Wrong => self.known[word] |= bit,
            Cell::Correct => {
                self.known[word] |= bit;
                self.correct[word] |= bit;
            }
        }
    }

    /// A cell.
    pub fn cell(&self, side: usize, item: usize) -> Cell {
        let (word, bit) = self.at(side, item);
        match (self.known[word] & bit != 0, self.correct[word] & bit != 0) {
            (false, _) => Cell::Unknown,
            (true, false) => Cell::Wrong,
            (true, true) => Cell::Correct,
        }
    }

    fn known_words(&self, side: usize) -> &[u64] {
        &self.known[side * self.words..(side + 1) * self.words]
    }

    fn correct_words(&self, side: usize) -> &[u64] {
        &self.correct[side * self.words..(side + 1) * self.words]
    }

    /// (known, correct) of a side over the items `mask` selects (all items when `None`;
    /// `mask` has one bit per item, as the grid's columns).
    pub fn side_counts(&self, side: usize, mask: Option<&[u64]>) -> (u64, u64) {
        let (known, correct) = (self.known_words(side), self.correct_words(side));
        let mut counts = (0u64, 0u64);
        for w in 0..self.words {
            let m = mask.map_or(u64::MAX, |mask| mask[w]);
            counts.0 += u64::from((known[w] & m).count_ones());
            counts.1 += u64::from((correct[w] & m).count_ones());
        }
        counts
    }

    /// The 2×2 table of sides `a` and `b` over the items known on both.
    pub fn pair(&self, a: usize, b: usize) -> PairCounts {
        let (ka, ca) = (self.known_words(a), self.correct_words(a));
        let (kb, cb) = (self.known_words(b), self.correct_words(b));
        let mut counts = PairCounts::default();
        for w in 0..self.words {
            let both = ka[w] & kb[w];
            let (xa, xb) = (ca[w] & both, cb[w] & both);
            counts.both_correct += u64::from((xa & xb).count_ones());
            counts.a_only_correct += u64::from((xa & !xb).count_ones());
            counts.b_only_correct += u64::from((!xa & xb).count_ones());
            counts.both_wrong += u64::from((both & !xa & !xb).count_ones());
        }
        counts
    }

    /// One bit per item: the items known on every side of `sides`.
    pub fn known_on_all(&self, sides: &[usize]) -> Vec<u64> {
        let mut mask = vec![u64::MAX; self.words];
        if let Some(last) = mask.last_mut()
            && !self.items.is_multiple_of(64)
        {
            *last = (1u64 << (self.items % 64)) - 1;
        }
        for &side in sides {
            for (m, k) in mask.iter_mut().zip(self.known_words(side)) {
                *m &= k;
            }
        }
        mask
    }

    /// (known, correct) of an item: on how many sides it is known, and correct.
    pub fn item_counts(&self, item: usize) -> (u64, u64) {
        let (mut known, mut correct) = (0, 0);
        for side in 0..self.sides {
            match self.cell(side, item) {
                Cell::Unknown => {}
                Cell::Wrong => known += 1,
                Cell::Correct => {
                    known += 1;
                    correct += 1;
                }
            }
        }
        (known, correct)
    }
}

/// Whether item `item`'s bit is set in a one-bit-per-item mask.
pub fn has(mask: &[u64], item: usize) -> bool {
    mask[item / 64] & (1u64 << (item % 64)) != 0
}

/// A one-bit-per-item mask of `items` items from a predicate.
pub fn mask_of(items: usize, mut keep: impl FnMut(usize) -> bool) -> Vec<u64> {
    let mut mask = vec![0u64; items.div_ceil(64)];
    for item in 0..items {
        if keep(item) {
            mask[item / 64] |= 1u64 << (item % 64);
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_pairs_round_trip_across_word_boundaries() {
        let mut grid = Grid::new(2, 130);
        for item in 0..130 {
            grid.set(
                0,
                item,
                if item % 3 == 0 {
                    Cell::Correct
                } else {
                    Cell::Wrong
                },
            );
            grid.set(
                1,
                item,
                if item % 5 == 0 {
                    Cell::Unknown
                } else {
                    Cell::Correct
                },
            );
        }
        grid.set(0, 129, Cell::Unknown);
        assert_eq!(grid.cell(0, 129), Cell::Unknown);
        assert_eq!(grid.cell(0, 66), Cell::Correct);
        let mut expected = PairCounts::default();
        for item in 0..130 {
            match (grid.cell(0, item).known(), grid.cell(1, item).known()) {
                (Some(true), Some(true)) => expected.both_correct += 1,
                (Some(true), Some(false)) => expected.a_only_correct += 1,
                (Some(false), Some(true)) => expected.b_only_correct += 1,
                (Some(false), Some(false)) => expected.both_wrong += 1,
                _ => {}
            }
        }
        assert_eq!(grid.pair(0, 1), expected);
        assert_eq!(
            grid.known_on_all(&[0, 1])
                .iter()
                .map(|w| w.count_ones())
                .sum::<u32>() as u64,
            expected.known_pairs()
        );
    }
}

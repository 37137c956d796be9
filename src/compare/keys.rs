//! The join keys of rows: what the join compares instead of the identity strings.
//!
//! Labels (benchmark, language, script, filter) are interned into symbols shared by both
//! sides, so equal labels are equal numbers, exactly. The question of a row, `(benchmark,
//! language, script, question_id)`, becomes a 128-bit hash (two SipHash-1-3 hashes with
//! keys drawn at random for each comparison, so no input can be crafted to collide): two
//! different questions get the same key with a probability below 10^-26 for a million
//! questions. A key carries what the counts need (symbols, correctness), so the join and
//! the summary never go back to the rows, whose strings are scattered in memory.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::Mutex;

use crate::record::{Identity, IdentityScope};

/// The symbol of a null label.
pub const NULL_SYMBOL: u32 = 0;

/// Interns labels into symbols, and hashes questions, the same way for both sides.
pub struct Interner {
    symbols: Mutex<Symbols>,
    hashers: [RandomState; 2],
}

#[derive(Default)]
struct Symbols {
    index: HashMap<String, u32>,
    names: Vec<String>,
}

impl Default for Interner {
    fn default() -> Self {
        Self::new()
    }
}

impl Interner {
    /// An empty interner with fresh hash keys.
    pub fn new() -> Self {
        Self {
            symbols: Mutex::new(Symbols::default()),
            hashers: [RandomState::new(), RandomState::new()],
        }
    }

    /// The symbol of a label ([`NULL_SYMBOL`] for null).
    pub fn intern(&self, name: Option<&str>) -> u32 {
        let Some(name) = name else {
            return NULL_SYMBOL;
        };
        let mut symbols = self.symbols.lock().expect("the interner is never poisoned");
        if let Some(&symbol) = symbols.index.get(name) {
            return symbol;
        }
        symbols.names.push(name.to_owned());
        let symbol = symbols.names.len() as u32;
        symbols.index.insert(name.to_owned(), symbol);
        symbol
    }

    /// The label a symbol stands for.
    pub fn name(&self, symbol: u32) -> Option<String> {
        let symbols = self.symbols.lock().expect("the interner is never poisoned");
        (symbol != NULL_SYMBOL).then(|| symbols.names[symbol as usize - 1].clone())
    }

    /// The 128-bit key of a question: its label symbols and its question_id.
    pub fn question(&self, benchmark: u32, language: u32, script: u32, question_id: &str) -> u128 {
        let half = |state: &RandomState| {
            let mut hasher = state.build_hasher();
            (benchmark, language, script).hash(&mut hasher);
            question_id.hash(&mut hasher);
            hasher.finish()
        };
        (u128::from(half(&self.hashers[0])) << 64) | u128::from(half(&self.hashers[1]))
    }

    /// The key of one row from its identity (interning each label as it goes).
    pub fn key(
        &self,
        row: usize,
        identity: &Identity<'_>,
        scope: IdentityScope,
        correct: Option<bool>,
    ) -> RowKey {
        let benchmark = self.intern(Some(identity.benchmark));
        let language = self.intern(identity.language);
        let script = self.intern(identity.script);
        RowKey {
            question: self.question(benchmark, language, script, identity.question_id),
            filter: self.intern(Some(identity.filter)),
            benchmark,
            language,
            repeat_id: identity.repeat_id,
            row: row as u32,
            correct,
            stable: scope == IdentityScope::Stable,
        }
    }
}

/// What the join knows of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowKey {
    /// The question's 128-bit key ([`Interner::question`]).
    pub question: u128,
    pub filter: u32,
    pub benchmark: u32,
    pub language: u32,
    pub repeat_id: u64,
    /// The row on its side.
    pub row: u32,
    pub correct: Option<bool>,
    /// Run-local rows never pair.
    pub stable: bool,
}

impl RowKey {
    /// The item a row is: question, filter, repeat_id (the join's sort order, which
    /// keeps a question's items together).
    pub fn item(&self) -> (u128, u32, u64) {
        (self.question, self.filter, self.repeat_id)
    }
}

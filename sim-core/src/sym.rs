//! Interned strings: identities, holders and other names that the hot path compares and copies.
//!
//! A [`Sym`] is a small integer standing for one string of a [`Symbols`] table; comparing or
//! copying it costs nothing, and the string behind it is shared (`Arc<str>`), so a trace event
//! that names a holder clones a pointer, not the text. The table only grows: the API server interns `""`
//! first ([`Sym::EMPTY`]), a run then its node identities (node `i` is `Sym(i + 1)`), then
//! whatever holders the server sees.
//! Lookups go through a hash map, but nothing iterates it: the order of interning is the order of
//! first use, which is deterministic.

use std::sync::Arc;

/// An interned string of one run's [`Symbols`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sym(pub u32);

impl Sym {
    /// The empty string: every API server interns it first (an elector's "no holder").
    pub const EMPTY: Sym = Sym(0);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Debug, Default)]
pub struct Symbols {
    names: Vec<Arc<str>>,
    index: crate::FastMap<Arc<str>, Sym>,
}

impl Symbols {
    pub fn new() -> Self {
        Self::default()
    }

    /// The symbol of `text`, interning it on first use.
    pub fn intern(&mut self, text: &str) -> Sym {
        if let Some(&sym) = self.index.get(text) {
            return sym;
        }
        let sym = Sym(u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names in a run"));
        let shared: Arc<str> = Arc::from(text);
        self.names.push(shared.clone());
        self.index.insert(shared, sym);
        sym
    }

    /// The symbol of `text` if it was interned.
    pub fn get(&self, text: &str) -> Option<Sym> {
        self.index.get(text).copied()
    }

    pub fn name(&self, sym: Sym) -> &Arc<str> {
        &self.names[sym.index()]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_first_come_first_numbered() {
        let mut s = Symbols::new();
        let a = s.intern("a");
        let b = s.intern("b");
        assert_eq!((a, b), (Sym(0), Sym(1)));
        assert_eq!(s.intern("a"), a);
        assert_eq!(&**s.name(b), "b");
        assert_eq!(s.get("c"), None);
    }
}

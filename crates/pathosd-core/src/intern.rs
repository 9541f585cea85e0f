//! One shared `Arc` per distinct value. Nearly every VIP has one of a few
//! route intents (announced, pessimized, with the same communities) and one
//! of a few policies, so the engine's VIP slots, its route outputs, the
//! originated routes and the route batches to the sessions hold pointers to
//! the same few values instead of a copy per VIP (the engine interns them
//! once, `vip::SharedIntents`; the others pass its `Arc`s on).

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

/// The shared values, found by value (`Arc<T>` borrows as `T`).
#[derive(Debug, Clone)]
pub struct Interner<T> {
    shared: HashSet<Arc<T>>,
}

impl<T> Default for Interner<T> {
    fn default() -> Interner<T> {
        Interner {
            shared: HashSet::new(),
        }
    }
}

impl<T: Eq + Hash> Interner<T> {
    /// The one `Arc` of `value`.
    pub fn share(&mut self, value: T) -> Arc<T> {
        if let Some(a) = self.shared.get(&value) {
            return a.clone();
        }
        let a = Arc::new(value);
        self.shared.insert(a.clone());
        a
    }

    /// Forgets the values nothing but this table holds.
    pub fn prune(&mut self) {
        self.shared.retain(|a| Arc::strong_count(a) > 1);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shared.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_are_one_arc_and_unused_ones_are_forgotten() {
        let mut i = Interner::default();
        let plain = i.share(String::from("announced"));
        let again = i.share(String::from("announced"));
        assert!(Arc::ptr_eq(&plain, &again));
        drop(i.share(String::from("pessimized")));
        assert_eq!(i.len(), 2);
        i.prune();
        assert_eq!(i.len(), 1, "only the value still held is kept");
        assert!(Arc::ptr_eq(&plain, &i.share(String::from("announced"))));
    }
}

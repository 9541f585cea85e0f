//! One shared `Arc` per distinct value. Nearly every VIP has one of a few
//! route intents (announced, pessimized, with the same communities) and one
//! of a few policies, so the engine's VIP slots, the originated routes and
//! the route batches to the sessions hold pointers to the same few values
//! instead of a copy per VIP.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

/// The shared values, found by value (`Arc<T>` borrows as `T`).
#[derive(Debug, Clone)]
pub struct Interner<T> {
    shared: HashSet<Arc<T>>,
    /// How many values [`Interner::prune_when_doubled`] kept last time.
    kept: usize,
}

impl<T> Default for Interner<T> {
    fn default() -> Interner<T> {
        Interner {
            shared: HashSet::new(),
            kept: 0,
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
        self.kept = self.shared.len();
    }

    /// [`Interner::prune`], but only once the table holds more than 64
    /// values and twice as many as the last prune kept: for a caller that
    /// adds values all the time (the speaker, at every engine step), so the
    /// pruning's cost is spread over the values added.
    pub fn prune_when_doubled(&mut self) {
        if self.shared.len() > 64 && self.shared.len() > self.kept.saturating_mul(2) {
            self.prune();
        }
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

    #[test]
    fn pruning_when_doubled_waits_until_the_table_doubled() {
        let mut i = Interner::default();
        let kept = i.share(0u32);
        // 64 values nobody keeps: not yet more than 64.
        for n in 1..64u32 {
            drop(i.share(n));
        }
        i.prune_when_doubled();
        assert_eq!(i.len(), 64);
        // 100 values nobody keeps: pruned once the table doubled.
        for n in 64..100u32 {
            drop(i.share(n));
        }
        i.prune_when_doubled();
        assert_eq!(i.len(), 1, "only the value still held is kept");
        assert!(Arc::ptr_eq(&kept, &i.share(0)));
        // Kept 1: the next prune waits for more than 64 again.
        for n in 1..40u32 {
            drop(i.share(n));
        }
        i.prune_when_doubled();
        assert_eq!(i.len(), 40);
    }
}

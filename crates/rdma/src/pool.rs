//! A bounded pool of reusable local buffers, by power-of-two size class.
//!
//! A connection's QP keeps every MR it ever posted registered until the QP is destroyed (see the
//! verbs crate), so Send, Receive and RDMA Read/Write bounce buffers must be reused, not
//! registered per work request. The pool is generic over the buffer type so its accounting is
//! tested without a device.
//!
//! Architecture Invariant: the pool never holds more than `max_bytes`; an acquire that would
//! exceed it fails instead of allocating.

/// Smallest buffer the pool hands out.
pub const MIN_BUFFER: usize = 4096;

/// Index of a buffer in the pool.
pub type Slot = usize;

#[derive(Debug)]
struct Entry<B> {
    buffer: B,
    size: usize,
    busy: bool,
}

/// The pool.
#[derive(Debug)]
pub struct Pool<B> {
    entries: Vec<Entry<B>>,
    bytes: usize,
    max_bytes: usize,
}

impl<B> Pool<B> {
    pub fn new(max_bytes: usize) -> Self {
        Pool {
            entries: Vec::new(),
            bytes: 0,
            max_bytes,
        }
    }

    /// The size class for a request of `len` bytes.
    pub fn class(len: usize) -> Option<usize> {
        len.max(MIN_BUFFER).checked_next_power_of_two()
    }

    /// A free buffer of at least `len` bytes, reusing one or allocating with `allocate(size)`.
    /// `None` when the byte budget is exhausted or allocation fails.
    pub fn acquire(
        &mut self,
        len: usize,
        allocate: impl FnOnce(usize) -> Option<B>,
    ) -> Option<Slot> {
        let size = Self::class(len)?;
        if let Some(index) = self.entries.iter().position(|e| !e.busy && e.size == size) {
            self.entries[index].busy = true;
            return Some(index);
        }
        if self.bytes.checked_add(size)? > self.max_bytes {
            return None;
        }
        let buffer = allocate(size)?;
        self.bytes += size;
        self.entries.push(Entry {
            buffer,
            size,
            busy: true,
        });
        Some(self.entries.len() - 1)
    }

    pub fn get(&self, slot: Slot) -> Option<&B> {
        self.entries.get(slot).map(|e| &e.buffer)
    }

    pub fn release(&mut self, slot: Slot) {
        if let Some(entry) = self.entries.get_mut(slot) {
            entry.busy = false;
        }
    }

    /// Bytes allocated so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn busy(&self) -> usize {
        self.entries.iter().filter(|e| e.busy).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_by_class_and_the_budget_holds() {
        let mut pool: Pool<usize> = Pool::new(3 * MIN_BUFFER);
        let mut allocations = 0;
        let mut alloc = |size| {
            allocations += 1;
            Some(size)
        };
        let a = pool.acquire(100, &mut alloc).unwrap();
        let b = pool.acquire(MIN_BUFFER, &mut alloc).unwrap();
        assert_ne!(a, b);
        // Over budget: 4096 + 4096 + 8192 > 12288.
        assert_eq!(pool.acquire(MIN_BUFFER + 1, &mut alloc), None);
        pool.release(a);
        assert_eq!(pool.acquire(1, &mut alloc), Some(a));
        assert_eq!(allocations, 2);
        assert_eq!(pool.bytes(), 2 * MIN_BUFFER);
        assert_eq!(pool.busy(), 2);
        assert_eq!(Pool::<usize>::class(usize::MAX), None);
    }
}

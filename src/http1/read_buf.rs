//! A connection's read buffer: a worker's full-size one while it is
//! served; while parked none, or a small one of its own holding an
//! unfinished head (or a large one holding a body being collected).

use std::mem;

/// Read buffers a worker keeps for reuse.
const POOLED_BUFFERS: usize = 8;

/// Smallest buffer a parked connection keeps for an unfinished head: room
/// to read a few more bytes without taking a worker's buffer.
const MIN_OWN_BUFFER: usize = 512;

/// The size of a connection's own buffer for `pending` bytes: room for as
/// many more, at least [`MIN_OWN_BUFFER`], at most `size`.
fn own_len(pending: usize, size: usize) -> usize {
    (pending * 2).clamp(MIN_OWN_BUFFER, size)
}

/// `buf[start..end]` is received but not yet parsed.
#[derive(Debug, Default)]
pub(crate) struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// What [`ReadBuf::release`] did with a buffer grown past the usual size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Released {
    /// It is not grown, or still holds a body larger than the usual size.
    Kept,
    /// It held no more than the usual size: it was replaced by a small one.
    Shrunk,
}

impl ReadBuf {
    /// The bytes received and not yet parsed.
    #[inline]
    pub(crate) fn unparsed(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    #[inline]
    pub(crate) fn unparsed_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.end]
    }

    #[inline]
    pub(crate) fn has_unparsed(&self) -> bool {
        self.start < self.end
    }

    /// Offsets into the buffer of the unparsed bytes.
    #[inline]
    pub(crate) fn bounds(&self) -> (usize, usize) {
        (self.start, self.end)
    }

    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// True when the unparsed bytes start at the front and fill the buffer.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.start == 0 && self.end == self.buf.len()
    }

    /// The buffer from the first unparsed byte: the head, then what follows.
    #[inline]
    pub(crate) fn split_at_head(&mut self, head_len: usize) -> (&[u8], &mut [u8]) {
        let (before, rest) = self.buf.split_at_mut(self.start + head_len);
        (&before[self.start..], rest)
    }

    /// The whole buffer, for reads whose bytes are not kept.
    pub(crate) fn scratch_space(&mut self) -> &mut [u8] {
        if self.buf.is_empty() {
            self.buf = vec![0; MIN_OWN_BUFFER];
        }
        &mut self.buf
    }

    /// The unparsed bytes, taken: the buffer is empty after.
    pub(crate) fn take_unparsed(&mut self) -> &[u8] {
        let (start, end) = (self.start, self.end);
        (self.start, self.end) = (0, 0);
        &self.buf[start..end]
    }

    /// Gets a worker's full-size buffer when the connection has none, or
    /// one holding nothing; a small one of its own holding an unfinished
    /// head is kept and read into, so a head trickled a byte at a time is
    /// not copied at every byte.
    pub(crate) fn attach(&mut self, pool: &mut Vec<Vec<u8>>, size: usize) {
        if self.buf.len() >= size || (self.has_unparsed() && self.end < self.buf.len()) {
            return;
        }
        self.make_full(pool, size);
    }

    /// Makes the buffer full-size, keeping unparsed bytes. Inlined, as it
    /// runs before every request and the buffer is full-size nearly always:
    /// as a call, its entry and exit cost more than the test.
    #[inline(always)]
    pub(crate) fn make_full(&mut self, pool: &mut Vec<Vec<u8>>, size: usize) {
        if self.buf.len() < size {
            self.grow_full(pool, size);
        }
    }

    #[inline(never)]
    fn grow_full(&mut self, pool: &mut Vec<Vec<u8>>, size: usize) {
        let mut big = pool.pop().filter(|b| b.len() == size).unwrap_or_else(|| vec![0; size]);
        let pending = self.end - self.start;
        #[cfg(test)]
        crate::parse::work::copied(pending);
        big[..pending].copy_from_slice(self.unparsed());
        self.buf = big;
        (self.start, self.end) = (0, pending);
    }

    /// Room to read into: when the buffer is filled to its end, unparsed
    /// bytes move to the front, or (already there) a buffer smaller than
    /// `limit()` grows, doubling up to it.
    #[inline]
    pub(crate) fn space(&mut self, limit: impl FnOnce() -> usize) -> &mut [u8] {
        if self.end == self.buf.len() {
            let limit = limit();
            #[cfg(test)]
            crate::parse::work::copied(self.end - self.start);
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                (self.start, self.end) = (0, self.end - self.start);
            } else if self.buf.len() < limit {
                let grown = (self.buf.len() * 2).clamp(MIN_OWN_BUFFER, limit);
                self.buf.resize(grown, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// `n` bytes were read into [`ReadBuf::space`].
    #[inline]
    pub(crate) fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// The first `n` unparsed bytes are dropped.
    #[inline]
    pub(crate) fn skip(&mut self, n: usize) {
        self.start += n;
    }

    /// The unparsed bytes are now `to..end`; an empty buffer restarts at
    /// its front.
    #[inline]
    pub(crate) fn consume(&mut self, to: usize, end: usize) {
        (self.start, self.end) = (to.min(end), end);
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
    }

    /// Moves unparsed bytes to the front of the buffer.
    pub(crate) fn compact(&mut self) {
        if self.start > 0 {
            #[cfg(test)]
            crate::parse::work::copied(self.end - self.start);
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
    }

    /// Ends a turn: a worker's buffer goes back to `pool` and only the
    /// unparsed bytes are kept, in a small buffer of the connection's own
    /// — unless they are as large as a worker's buffer (a head that would
    /// need one as large, or a body being collected), which is then kept.
    /// A buffer grown past `size` for a body is replaced by one of at most
    /// `size` once it holds no more than that ([`Released::Shrunk`]).
    pub(crate) fn release(&mut self, pool: &mut Vec<Vec<u8>>, size: usize) -> Released {
        let pending = self.end - self.start;
        if self.buf.len() > size && pending <= size {
            self.buf = self.own_copy(pending, size);
            (self.start, self.end) = (0, pending);
            return Released::Shrunk;
        }
        if self.buf.len() != size || pending * 2 >= size {
            self.compact();
            return Released::Kept;
        }
        let keep = if pending == 0 { Vec::new() } else { self.own_copy(pending, size) };
        (self.start, self.end) = (0, pending);
        let big = mem::replace(&mut self.buf, keep);
        if pool.len() < POOLED_BUFFERS {
            pool.push(big);
        }
        Released::Kept
    }

    /// The capacity [`ReadBuf::release`] would leave the buffer with.
    pub(crate) fn kept_capacity(&self, size: usize) -> usize {
        let pending = self.end - self.start;
        if self.buf.len() > size && pending <= size {
            own_len(pending, size)
        } else if self.buf.len() != size || pending * 2 >= size {
            self.buf.len()
        } else if pending == 0 {
            0
        } else {
            own_len(pending, size)
        }
    }

    /// A small buffer holding a copy of the `pending` unparsed bytes, with
    /// room for as many more (at most `size`).
    fn own_copy(&self, pending: usize, size: usize) -> Vec<u8> {
        let mut own = vec![0; own_len(pending, size)];
        #[cfg(test)]
        crate::parse::work::copied(pending);
        own[..pending].copy_from_slice(self.unparsed());
        own
    }
}

//! A hint to the memory system, for the state the next event will touch. With thousands of
//! nodes, that state is rarely in cache and the wait for it is most of an event's cost; a
//! prefetch changes nothing else (no result, no fault), so it cannot move an output.

/// Prefetches the cache lines of `*value` (up to a kilobyte) into all cache levels.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = value as *const T as *const i8;
        let size = std::mem::size_of::<T>().min(1024);
        let mut offset = 0;
        while offset < size {
            // SAFETY: a prefetch is a hint: it never faults and has no effect on memory, and the
            // address lies inside `*value`.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(start.add(offset)) };
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

//! Hints to the processor (tenure's addition to madsim 0.2.34).

/// Asks the processor to bring the cache line holding `value`'s first byte into its
/// caches, without waiting for it: a later read finds it there. Nothing else happens,
/// whatever `value` is; on a processor without the instruction it does nothing.
#[inline(always)]
pub fn prefetch<T: ?Sized>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no memory; the address is a reference's.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// [`prefetch`] for every cache line `value` spans.
#[inline(always)]
pub fn prefetch_all<T>(value: &T) {
    let start = (value as *const T).cast::<u8>();
    let mut offset = 0;
    while offset < std::mem::size_of::<T>() {
        prefetch_at(start, offset);
        offset += 64;
    }
}

/// [`prefetch`] for the line `offset` bytes after `start` (an address only: a prefetch
/// reads nothing and never faults, wherever it points).
#[inline(always)]
fn prefetch_at(start: *const u8, offset: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no memory, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, offset);
}

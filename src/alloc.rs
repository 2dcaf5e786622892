//! The global allocator: glibc's malloc with a per-thread cache of small
//! freed blocks in front of it.
//!
//! Why: every Lua state allocates through the Rust global allocator (mlua
//! installs it as the state's allocator), and a script that builds strings
//! per event frees them in bursts when the GC sweeps. glibc keeps only 7
//! freed blocks per size in its thread cache; the rest take the slow path
//! (`_int_free`, consolidation, then `_int_malloc` again), which profiles of
//! such scripts show at about a fifth of the client's CPU. sysbench does not
//! pay it because its LuaJIT uses LuaJIT's own per-state allocator, which
//! mlua cannot use. A deeper cache of small blocks per thread gives the same
//! effect without changing allocators: mimalloc was measured too and costs
//! 2.9 MB of RSS per client at 1024 clients.
//!
//! Blocks up to [`MAX_SMALL`] bytes (alignment up to 16) are rounded to a
//! 16-byte size class and allocated with `malloc`; on free they go on the
//! class's free list in the freeing thread (an intrusive list through the
//! blocks themselves, so the cache never allocates) until the class holds
//! [`CLASS_BYTES`], after which they go back to `free`. A thread's cache is
//! returned to `free` when the thread ends. Everything else is plain
//! malloc/free. It is used on 64-bit glibc targets only (16-byte malloc
//! alignment, and thread-local destructors from the C library); elsewhere
//! the system allocator stays.
//!
//! glibc keeps its default number of arenas (8 per core). dbbench once
//! limited them to 2 to keep RSS per client down when connections used the
//! `mysql` crate's large buffers; with this cache and dbbench's own MySQL
//! client, RSS at 1024 and 4096 clients is the same with 2 or 16 arenas
//! (~650 KiB per client), while 16 Lua-heavy clients sharing 2 arenas ran
//! about 10% slower.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::ptr;

/// Largest block size served from the per-thread cache.
const MAX_SMALL: usize = 512;
/// Size-class granularity (and the largest alignment the cache serves).
const GRAIN: usize = 16;
const CLASSES: usize = MAX_SMALL / GRAIN;
/// Most bytes one class keeps per thread (so a thread caches at most
/// `CLASSES * CLASS_BYTES` = 256 KiB, in practice a few classes' worth).
const CLASS_BYTES: usize = 8 * 1024;

/// One size class's free list.
#[derive(Clone, Copy)]
struct FreeList {
    head: *mut u8,
    len: u32,
}

/// A thread's cache. `Drop` returns the blocks when the thread ends.
struct Cache {
    lists: [Cell<FreeList>; CLASSES],
}

impl Drop for Cache {
    fn drop(&mut self) {
        for list in &self.lists {
            let mut p = list.get().head;
            while !p.is_null() {
                // SAFETY: every cached block starts with the next pointer.
                let next = unsafe { p.cast::<*mut u8>().read() };
                // SAFETY: cached blocks came from malloc.
                unsafe { libc::free(p.cast()) };
                p = next;
            }
            list.set(FreeList { head: ptr::null_mut(), len: 0 });
        }
    }
}

thread_local! {
    static CACHE: Cache = const {
        Cache { lists: [const { Cell::new(FreeList { head: ptr::null_mut(), len: 0 }) }; CLASSES] }
    };
}

/// The size class of a small layout (None: not served by the cache).
#[inline]
fn class(layout: Layout) -> Option<usize> {
    let size = layout.size();
    (size != 0 && size <= MAX_SMALL && layout.align() <= GRAIN).then(|| (size - 1) / GRAIN)
}

/// [`GlobalAlloc`] over glibc malloc with the per-thread small-block cache.
pub struct CachingMalloc;

// SAFETY: blocks come from malloc (16-byte aligned on 64-bit glibc, enough
// for every layout the cache serves) and are either returned to malloc or
// reused for a layout of the same class, whose blocks all have the class's
// full size.
unsafe impl GlobalAlloc for CachingMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `layout` is the caller's, valid for a large block; malloc's contract applies.
        let Some(c) = class(layout) else { return unsafe { large_alloc(layout) } };
        let cached = CACHE
            .try_with(|cache| {
                let list = &cache.lists[c];
                let l = list.get();
                if l.head.is_null() {
                    return ptr::null_mut();
                }
                // SAFETY: a cached block starts with the next pointer.
                let next = unsafe { l.head.cast::<*mut u8>().read() };
                list.set(FreeList { head: next, len: l.len - 1 });
                l.head
            })
            .unwrap_or(ptr::null_mut());
        if !cached.is_null() {
            return cached;
        }
        // SAFETY: plain malloc of the class's full size.
        unsafe { libc::malloc((c + 1) * GRAIN).cast() }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if class(layout).is_none() && layout.align() <= GRAIN {
            // calloc: fresh pages from the kernel are already zero and stay
            // untouched (not resident) until used, which matters for large
            // mostly-empty buffers such as latency histograms.
            // SAFETY: plain calloc.
            return unsafe { libc::calloc(1, layout.size().max(1)).cast() };
        }
        // SAFETY: as alloc; then the block is zeroed.
        let p = unsafe { self.alloc(layout) };
        if !p.is_null() {
            // SAFETY: `p` was just allocated with `layout.size()` bytes and is not null.
            unsafe { ptr::write_bytes(p, 0, layout.size()) };
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let Some(c) = class(layout) else {
            // SAFETY: large blocks come from large_alloc.
            return unsafe { large_free(p, layout) };
        };
        let kept = CACHE
            .try_with(|cache| {
                let list = &cache.lists[c];
                let l = list.get();
                if (l.len as usize + 1) * (c + 1) * GRAIN > CLASS_BYTES {
                    return false;
                }
                // SAFETY: the block is ours again and at least 16 bytes.
                unsafe { p.cast::<*mut u8>().write(l.head) };
                list.set(FreeList { head: p, len: l.len + 1 });
                true
            })
            .unwrap_or(false);
        if !kept {
            // SAFETY: small blocks come from malloc.
            unsafe { libc::free(p.cast()) };
        }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = match Layout::from_size_align(new_size, layout.align()) {
            Ok(l) => l,
            Err(_) => return ptr::null_mut(),
        };
        match (class(layout), class(new_layout)) {
            // Same class: the block already has the room.
            (Some(a), Some(b)) if a == b => p,
            // Both large: let malloc grow or move it in place.
            // SAFETY: `p` came from malloc (large class) with `layout`; realloc keeps its contents.
            (None, None) if layout.align() <= GRAIN => unsafe { libc::realloc(p.cast(), new_size).cast() },
            _ => {
                // SAFETY: as alloc/dealloc; copies what both blocks hold.
                let q = unsafe { self.alloc(new_layout) };
                if !q.is_null() {
                    // SAFETY: `q` and `p` are distinct live blocks of at least `min(old, new)` bytes.
                    unsafe {
                        ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                        self.dealloc(p, layout);
                    }
                }
                q
            }
        }
    }
}

/// A block outside the cache: malloc, or posix_memalign for alignments
/// above what malloc guarantees.
unsafe fn large_alloc(layout: Layout) -> *mut u8 {
    if layout.align() <= GRAIN {
        // SAFETY: plain malloc.
        return unsafe { libc::malloc(layout.size().max(1)).cast() };
    }
    let mut out: *mut libc::c_void = ptr::null_mut();
    // SAFETY: alignment is a power of two and a multiple of the pointer size.
    let rc = unsafe { libc::posix_memalign(&mut out, layout.align(), layout.size().max(1)) };
    if rc == 0 {
        out.cast()
    } else {
        ptr::null_mut()
    }
}

unsafe fn large_free(p: *mut u8, _layout: Layout) {
    // SAFETY: from malloc or posix_memalign, both freed with free.
    unsafe { libc::free(p.cast()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_small_blocks_are_reused_by_the_same_thread() {
        let a = CachingMalloc;
        let l = Layout::from_size_align(40, 8).unwrap();
        // SAFETY: matching alloc/dealloc of the same layout.
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null());
            a.dealloc(p, l);
            // Same class (33..=48 bytes): the cached block comes back.
            let q = a.alloc(Layout::from_size_align(48, 16).unwrap());
            assert_eq!(p, q);
            a.dealloc(q, Layout::from_size_align(48, 16).unwrap());
        }
    }

    #[test]
    fn cache_per_class_is_bounded_and_contents_survive_realloc() {
        let a = CachingMalloc;
        let l = Layout::from_size_align(512, 16).unwrap();
        // SAFETY: matching allocations and frees; realloc within bounds.
        unsafe {
            let blocks: Vec<*mut u8> = (0..100).map(|_| a.alloc(l)).collect();
            for &b in &blocks {
                a.dealloc(b, l);
            }
            let cached = CACHE.with(|c| c.lists[class(l).unwrap()].get().len as usize);
            assert_eq!(cached, CLASS_BYTES / 512);
            // realloc across classes and into the large range keeps the bytes.
            let mut p = a.alloc(Layout::from_size_align(10, 1).unwrap());
            for i in 0..10 {
                p.add(i).write(i as u8);
            }
            for (old, new) in [(10, 20), (20, 300), (300, 5000), (5000, 7)] {
                p = a.realloc(p, Layout::from_size_align(old, 1).unwrap(), new);
                for i in 0..7 {
                    assert_eq!(p.add(i).read(), i as u8);
                }
            }
            a.dealloc(p, Layout::from_size_align(7, 1).unwrap());
        }
    }

    #[test]
    fn over_aligned_layouts_and_thread_exit_work() {
        let a = CachingMalloc;
        // SAFETY: matching alloc/dealloc.
        unsafe {
            let l = Layout::from_size_align(64, 64).unwrap();
            let p = a.alloc(l);
            assert_eq!(p as usize % 64, 0);
            a.dealloc(p, l);
        }
        // A thread's cache is given back when it ends.
        std::thread::spawn(|| {
            let v: Vec<Box<[u8; 100]>> = (0..50).map(|_| Box::new([1u8; 100])).collect();
            drop(v);
        })
        .join()
        .unwrap();
    }
}

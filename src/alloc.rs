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

//!
//! The thread that reports can have a heap of its own ([`use_private_heap`]):
//! at thousands of clients, hundreds of them share each glibc arena, main
//! thread's included, and one preempted inside malloc holds that arena's
//! lock until the scheduler runs it again. Measured at 4096 PostgreSQL
//! clients on 2 CPUs: the reporting thread waited 11 s for `main_arena`'s
//! lock to format one interval line. Its private heap is a region reserved
//! up front, size classes of powers of two, no lock: blocks other threads
//! free go on a lock-free stack the owner drains.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

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
        for (c, list) in self.lists.iter().enumerate() {
            let mut p = list.get().head;
            // Every layout of the class has the same private class as this.
            let layout = Layout::from_size_align((c + 1) * GRAIN, GRAIN).unwrap_or(Layout::new::<u8>());
            while !p.is_null() {
                // SAFETY: every cached block starts with the next pointer.
                let next = unsafe { p.cast::<*mut u8>().read() };
                // SAFETY: cached blocks came from malloc or the private heap.
                unsafe { free_small(p, layout) };
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

/// Bytes of address space the private heap reserves (pages are committed
/// only as used); beyond it, its owner falls back to malloc.
const PRIVATE_BYTES: usize = 256 << 20;
/// Bytes of it touched when it is set up, so the owner does not take page
/// faults (and the process's mmap lock, contended by thousands of client
/// threads) while it reports.
const PRIVATE_PREFAULT: usize = 8 << 20;
/// Its largest size class; larger blocks come from malloc.
const PRIVATE_MAX: usize = 1 << 20;
/// Size classes: 16 B, 32 B, ... [`PRIVATE_MAX`].
const PRIVATE_CLASSES: usize = 17;

/// The private heap's region and the blocks other threads freed into it.
struct PrivateRegion {
    base: AtomicUsize,
    /// 0 until set up.
    len: AtomicUsize,
    /// Blocks freed by threads other than the owner: a stack through the
    /// blocks (word 0: next, word 1: size class), taken whole by the owner.
    remote: AtomicPtr<u8>,
}

static PRIVATE: PrivateRegion =
    PrivateRegion { base: AtomicUsize::new(0), len: AtomicUsize::new(0), remote: AtomicPtr::new(ptr::null_mut()) };

/// The owner's side of the private heap (other threads: inactive).
struct OwnHeap {
    active: Cell<bool>,
    /// Next unused byte, and the region's end.
    bump: Cell<usize>,
    end: Cell<usize>,
    lists: [Cell<*mut u8>; PRIVATE_CLASSES],
}

thread_local! {
    static OWN: OwnHeap = const {
        OwnHeap {
            active: Cell::new(false),
            bump: Cell::new(0),
            end: Cell::new(0),
            lists: [const { Cell::new(ptr::null_mut()) }; PRIVATE_CLASSES],
        }
    };
}

/// From now on, the calling thread allocates from a heap of its own (see
/// the module documentation). One thread per process gets one; returns
/// false (and changes nothing) for any other, or if the region cannot be
/// reserved.
pub fn use_private_heap() -> bool {
    if OWN.with(|o| o.active.get()) {
        return true;
    }
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choice; no memory of ours is touched.
    let base = unsafe {
        libc::mmap(
            ptr::null_mut(),
            PRIVATE_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return false;
    }
    if PRIVATE.len.compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Acquire).is_err() {
        // SAFETY: the mapping just made, unused.
        unsafe { libc::munmap(base, PRIVATE_BYTES) };
        return false;
    }
    // SAFETY: the first PRIVATE_PREFAULT bytes of the fresh mapping.
    unsafe { ptr::write_bytes(base.cast::<u8>(), 0, PRIVATE_PREFAULT) };
    PRIVATE.base.store(base as usize, Ordering::Release);
    PRIVATE.len.store(PRIVATE_BYTES, Ordering::Release);
    OWN.with(|o| {
        o.bump.set(base as usize);
        o.end.set(base as usize + PRIVATE_BYTES);
        o.active.set(true);
    });
    true
}

/// Whether `p` lies in the private heap.
#[inline]
fn in_private(p: *mut u8) -> bool {
    // `len` is usize::MAX while the region is set up (`base` not yet
    // stored), and `base` is stored before `len` is.
    let len = PRIVATE.len.load(Ordering::Acquire);
    len != usize::MAX && (p as usize).wrapping_sub(PRIVATE.base.load(Ordering::Relaxed)) < len
}

/// The private size class of a layout (None: too large).
#[inline]
fn private_class(layout: Layout) -> Option<usize> {
    if layout.align() > 4096 {
        return None;
    }
    let size = layout.size().max(layout.align()).max(16).checked_next_power_of_two()?;
    (size <= PRIVATE_MAX).then(|| size.trailing_zeros() as usize - 4)
}

/// The owner's allocation (None: not the owner, or no room; use malloc).
#[inline]
fn private_alloc(layout: Layout) -> Option<*mut u8> {
    OWN.try_with(|o| {
        if !o.active.get() {
            return None;
        }
        let c = private_class(layout)?;
        // Blocks other threads gave back first.
        let mut r = PRIVATE.remote.swap(ptr::null_mut(), Ordering::Acquire);
        while !r.is_null() {
            // SAFETY: a freed private block: word 0 next, word 1 its class.
            let (next, rc) = unsafe { (r.cast::<*mut u8>().read(), r.cast::<usize>().add(1).read()) };
            // SAFETY: the block is free and at least 16 bytes.
            unsafe { r.cast::<*mut u8>().write(o.lists[rc].get()) };
            o.lists[rc].set(r);
            r = next;
        }
        let head = o.lists[c].get();
        if !head.is_null() {
            // SAFETY: a free block of this class starts with the next pointer.
            o.lists[c].set(unsafe { head.cast::<*mut u8>().read() });
            return Some(head);
        }
        // Every block is aligned to its size up to a page, which covers
        // any alignment the layout asks for (the class is at least it).
        let size = 16usize << c;
        let start = o.bump.get().next_multiple_of(size.min(4096));
        if start + size > o.end.get() {
            return None;
        }
        o.bump.set(start + size);
        Some(start as *mut u8)
    })
    .ok()
    .flatten()
}

/// Frees a private block, from any thread.
#[inline]
fn private_free(p: *mut u8, layout: Layout) {
    let Some(c) = private_class(layout) else { return };
    let mine = OWN
        .try_with(|o| {
            if !o.active.get() {
                return false;
            }
            // SAFETY: the block is ours again and at least 16 bytes.
            unsafe { p.cast::<*mut u8>().write(o.lists[c].get()) };
            o.lists[c].set(p);
            true
        })
        .unwrap_or(false);
    if mine {
        return;
    }
    // SAFETY: the block is free and at least 16 bytes: word 1 keeps its class.
    unsafe { p.cast::<usize>().add(1).write(c) };
    let mut head = PRIVATE.remote.load(Ordering::Relaxed);
    loop {
        // SAFETY: as above: word 0 links the stack.
        unsafe { p.cast::<*mut u8>().write(head) };
        match PRIVATE.remote.compare_exchange_weak(head, p, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
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
        // Only past the cache: a hit costs nothing more for the clients.
        if let Some(p) = private_alloc(layout) {
            return p;
        }
        // SAFETY: plain malloc of the class's full size.
        unsafe { libc::malloc((c + 1) * GRAIN).cast() }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if class(layout).is_none() && layout.align() <= GRAIN {
            if let Some(p) = private_alloc(layout) {
                // SAFETY: `p` was just allocated with at least `layout.size()` bytes.
                unsafe { ptr::write_bytes(p, 0, layout.size()) };
                return p;
            }
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
            // SAFETY: small blocks come from malloc or the private heap.
            unsafe { free_small(p, layout) };
        }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = match Layout::from_size_align(new_size, layout.align()) {
            Ok(l) => l,
            Err(_) => return ptr::null_mut(),
        };
        match (class(layout), class(new_layout)) {
            // Same class: the block already has the room (a private block
            // has at least its class's size: see `private_class`).
            (Some(a), Some(b)) if a == b => p,
            // Both large, from malloc and staying there: let malloc grow or
            // move it in place.
            // SAFETY: `p` came from malloc (large class) with `layout`; realloc keeps its contents.
            (None, None) if layout.align() <= GRAIN && !in_private(p) && !owns_private_heap() => unsafe {
                libc::realloc(p.cast(), new_size).cast()
            },
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
    if let Some(p) = private_alloc(layout) {
        return p;
    }
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

unsafe fn large_free(p: *mut u8, layout: Layout) {
    if in_private(p) {
        return private_free(p, layout);
    }
    // SAFETY: from malloc or posix_memalign, both freed with free.
    unsafe { libc::free(p.cast()) }
}

/// Frees a small block the cache does not keep: back to the private heap
/// (a cache may hold its blocks: any thread may reuse one for a layout of
/// the same class, whose private class is the same) or to malloc.
unsafe fn free_small(p: *mut u8, layout: Layout) {
    if in_private(p) {
        private_free(p, layout);
    } else {
        // SAFETY: not private: from malloc.
        unsafe { libc::free(p.cast()) };
    }
}

/// Whether the calling thread allocates from the private heap.
fn owns_private_heap() -> bool {
    OWN.try_with(|o| o.active.get()).unwrap_or(false)
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

    /// The owner's blocks come from its region, are reused after a free
    /// by the owner or by another thread, and keep their contents through
    /// realloc; other threads keep using malloc.
    #[test]
    fn the_private_heap_serves_its_owner_only_and_takes_back_blocks_from_anyone() {
        let a = CachingMalloc;
        let owner = std::thread::spawn(move || {
            assert!(use_private_heap());
            let l = Layout::from_size_align(100, 8).unwrap();
            // SAFETY: matching allocations and frees (one freed by another thread).
            unsafe {
                let p = a.alloc(l);
                assert!(in_private(p), "the owner's block is private");
                a.dealloc(p, l);
                assert_eq!(a.alloc(l), p, "freed by the owner: reused");
                let addr = p as usize;
                std::thread::spawn(move || {
                    let a = CachingMalloc;
                    assert!(!use_private_heap(), "one owner per process");
                    let q = a.alloc(l);
                    assert!(!in_private(q), "other threads use malloc");
                    a.dealloc(q, l);
                    a.dealloc(addr as *mut u8, l);
                })
                .join()
                .unwrap();
                assert_eq!(a.alloc(Layout::from_size_align(128, 16).unwrap()), p, "freed elsewhere: reused");
                a.dealloc(p, Layout::from_size_align(128, 16).unwrap());
                let big = Layout::from_size_align(4096, 4096).unwrap();
                let b = a.alloc(big);
                assert!(in_private(b) && (b as usize).is_multiple_of(4096));
                for i in 0..100 {
                    b.add(i).write(i as u8);
                }
                let c = a.realloc(b, big, 3 * PRIVATE_MAX);
                assert!(!in_private(c), "above the largest class: malloc");
                assert!((0..100).all(|i| c.add(i).read() == i as u8));
                a.dealloc(c, Layout::from_size_align(3 * PRIVATE_MAX, 4096).unwrap());
                let v: Vec<u64> = (0..10_000).collect();
                assert!(in_private(v.as_ptr() as *mut u8));
                assert_eq!(v.iter().sum::<u64>(), 49_995_000);
            }
        });
        owner.join().unwrap();
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

//! The compiled code's view of values: every value is a flat list of 64-bit words.
//!
//! | type | words |
//! |---|---|
//! | scalar | the value (floats as their bits, integers sign- or zero-extended, bool 0/1) |
//! | tuple, record, `[T; N]` | the fields' words, in order |
//! | sequence of `E` | its length, then the columns of `E` |
//! | tensor of scalars | pointer to the view's first element, rank, then `MAX_RANK` dimensions |
//!
//! Columns of an element type (structure of arrays): a scalar is one pointer; a tuple,
//! record or array the columns of its fields; a nested (regular) sequence its inner length
//! and then the columns of the flat inner elements. A slice of scalars is passed by
//! pointer, never copied.

use std::collections::HashMap;

/// The largest tensor rank the compiled backends marshal.
pub const MAX_RANK: usize = 3;

/// Something kept alive for the duration of a compiled run (a column built for marshaling,
/// the lock of a tensor's buffer).
pub trait Keep {}
impl<T: ?Sized> Keep for T {}

/// The words of a site's captured values, and what must outlive the run.
#[derive(Default)]
pub struct Marshal<'a> {
    /// The captured values' words, in order.
    pub words: Vec<u64>,
    /// What the words point into, kept alive until the run ends.
    pub keep: Vec<Box<dyn Keep + 'a>>,
    /// The base pointers of tensor buffers already locked (views of one buffer share one
    /// lock: the paper's MergeOverlappingIntervals).
    pub buffers: HashMap<usize, usize>,
    /// Each locked tensor buffer's base pointer and size in bytes, in marshaling order (the
    /// CUDA backend uploads each once, as one root allocation).
    pub tensor_buffers: Vec<(usize, usize)>,
    /// Bytes of input the compiled code reads, for ACCEL_LOG.
    pub bytes: usize,
    /// Bytes copied into new columns (records, nested sequences), for ACCEL_LOG.
    pub copied: usize,
    /// Whether the next sequence marshaled is read in place by the compiled code (its
    /// elements' scalars where they lie, see `accel_type::in_place`); taken by it.
    pub in_place: bool,
    /// Why a value could not be marshaled (the first reason).
    pub error: Option<String>,
    /// The distributed sequences among the values (their words are this rank's part, see
    /// `DistCapture`).
    pub distributed: Vec<DistCapture>,
}

/// A captured distributed sequence: its words are the whole sequence's length and its
/// columns' addresses shifted back by this rank's start, so that compiled code reading
/// element `i` of the whole reads this rank's memory for every `i` of the rank's part
/// (and nothing else may be read: `devices::distributed` decides which captures are).
#[derive(Clone)]
pub struct DistCapture {
    /// Its length word among the captures' words (its columns follow).
    pub word: usize,
    /// Its columns' element sizes.
    pub sizes: Vec<usize>,
    /// Where each rank's part begins, and the length at the end.
    pub starts: std::sync::Arc<[usize]>,
    /// The ranks that hold it.
    pub comm: std::sync::Arc<dyn crate::comm::Communicator>,
}

impl Marshal<'_> {
    /// Appends a word.
    pub fn push(&mut self, w: u64) {
        self.words.push(w);
    }

    /// Records why a value cannot be marshaled (the first reason wins).
    pub fn fail(&mut self, message: String) {
        self.error.get_or_insert(message);
    }

    /// A marshal of the same locked buffers with `words` instead of these (for programs
    /// run on these captures while this marshal, which holds the locks, lives).
    pub fn with_words(&self, words: Vec<u64>) -> Marshal<'static> {
        Marshal::over(words, &self.buffers, &self.tensor_buffers, self.bytes)
    }
}

impl Marshal<'static> {
    /// A marshal of `words` over buffers another marshal holds locked (`buffers` and
    /// `tensor_buffers` as it has them, `bytes` the captures' size): it keeps nothing alive
    /// itself, so it must not outlive that one.
    pub fn over(
        words: Vec<u64>,
        buffers: &HashMap<usize, usize>,
        tensor_buffers: &[(usize, usize)],
        bytes: usize,
    ) -> Marshal<'static> {
        Marshal {
            words,
            buffers: buffers.clone(),
            tensor_buffers: tensor_buffers.to_vec(),
            bytes,
            ..Marshal::default()
        }
    }
}

/// Allocations at least this large get memory of their own (a result can adopt it as its
/// `Vec`'s buffer); smaller ones share bump-allocated blocks.
const OWN_ALLOCATION: usize = 64 * 1024;
/// Allocations at least this large are backed by huge pages where the system allows.
pub const HUGE_PAGE_ALLOCATION: usize = 4 << 20;

/// Asks the kernel to back a large, untouched allocation with transparent huge pages: one
/// page fault per 2 MiB instead of per 4 KiB. Writing a fresh result of hundreds of MiB
/// otherwise spends as long in page faults as in the kernel that fills it. A hint only:
/// where it is refused (or off, or not Linux) nothing changes.
pub fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize).saturating_add(bytes) / HUGE * HUGE;
        if bytes >= HUGE_PAGE_ALLOCATION && end > start {
            // SAFETY: [start, end) lies inside the caller's live allocation of `bytes` bytes
            // at `ptr`; MADV_HUGEPAGE changes how its pages are backed, never their contents
            // or the mapping's lifetime, and a failure leaves everything as it was.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

/// How compiled code will write an allocation: what decides whether huge pages pay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touch {
    /// Every byte (a result): huge pages save page faults.
    Whole,
    /// Scattered parts (a `filter`'s scratch, where each chunk writes only its kept
    /// elements at the front of its part): with huge pages, every part touched would
    /// fault in and zero 2 MiB, most of it never used.
    Sparse,
}

/// The size an allocation of its own of `bytes` gets: rounded up to a multiple of 64
/// bytes, and above 512 bytes to one of eight sizes per doubling, so that a loop whose
/// arrays grow or shrink by a few elements a step (Durbin's `y`, one longer each step)
/// reuses what the last steps freed instead of asking the allocator every time (a fifth
/// of Durbin's time went to `malloc` and `free`). A result that adopts the memory keeps
/// the rest as its `Vec`'s spare capacity: at most an eighth.
fn size_class(bytes: usize) -> usize {
    let step = match bytes {
        0..=512 => 64,
        _ => 1usize << (usize::BITS - 1 - bytes.leading_zeros() - 3),
    };
    bytes.checked_next_multiple_of(step).unwrap_or(bytes)
}

/// The size of a block for small allocations.
const BLOCK: usize = 1 << 20;

/// Memory the compiled code allocated during one run: large buffers each on their own
/// (results adopt them), small ones bumped out of shared blocks (rows made per element
/// cost a pointer increment); everything not adopted is freed when the run ends.
#[derive(Default)]
pub struct Arena {
    /// Allocations of their own, by address.
    own: Vec<(usize, std::alloc::Layout)>,
    /// Blocks small allocations come from.
    blocks: Vec<(usize, std::alloc::Layout)>,
    /// Allocations of their own that a run no longer needs, kept for its next allocations
    /// of the same layout (see [`Arena::recycle`]).
    spare: Vec<(usize, std::alloc::Layout)>,
    /// The free part of the current block.
    cursor: usize,
    end: usize,
}

impl Arena {
    /// Uninitialised memory of `bytes` bytes aligned to `align` (null on failure). The
    /// memory is left uninitialised (fresh zeroed pages would fault on first write):
    /// compiled code writes every element of what it allocates before anything reads it.
    pub fn alloc(&mut self, bytes: usize, align: usize) -> *mut u8 {
        let align = align.max(1);
        if bytes == 0 {
            return align as *mut u8;
        }
        if bytes >= OWN_ALLOCATION {
            return match std::alloc::Layout::from_size_align(bytes, align) {
                Ok(layout) => {
                    // SAFETY: the layout has a non-zero size.
                    let p = unsafe { std::alloc::alloc(layout) };
                    if !p.is_null() {
                        self.own.push((p as usize, layout));
                        advise_huge_pages(p, bytes);
                    }
                    p
                }
                Err(_) => std::ptr::null_mut(),
            };
        }
        let start = self.cursor.next_multiple_of(align);
        if self.cursor == 0 || start + bytes > self.end {
            let Ok(layout) = std::alloc::Layout::from_size_align(BLOCK, 64) else {
                return std::ptr::null_mut();
            };
            let p = match SPARES
                .try_with(|s| s.borrow_mut().blocks.pop())
                .ok()
                .flatten()
            {
                Some(p) => p as *mut u8,
                // SAFETY: the layout has a non-zero size.
                None => unsafe { std::alloc::alloc(layout) },
            };
            if p.is_null() {
                return p;
            }
            self.blocks.push((p as usize, layout));
            self.cursor = p as usize;
            self.end = p as usize + BLOCK;
            return self.alloc(bytes, align);
        }
        self.cursor = start + bytes;
        start as *mut u8
    }

    /// Memory of its own of `bytes` bytes aligned to `align`, whatever its size (a result
    /// can adopt it; [`Arena::recycle`] can free it): an allocation recycled earlier with
    /// this layout, else a new one (null on failure).
    pub fn alloc_own(&mut self, bytes: usize, align: usize, touch: Touch) -> *mut u8 {
        self.alloc_own_of(bytes, align, touch, 1)
    }

    /// [`Arena::alloc_own`] for elements of `elem` bytes: the size, rounded up to its
    /// class, stays a whole number of elements, so that a `Vec` of them can adopt it
    /// (rows of three `f32`s are 12 bytes, no size class's divisor).
    pub fn alloc_own_of(
        &mut self,
        bytes: usize,
        align: usize,
        touch: Touch,
        elem: usize,
    ) -> *mut u8 {
        self.own_allocation(bytes, align, touch, elem, false)
    }

    /// [`Arena::alloc_own`] of zeroed memory (a tensor made inside a site): memory recycled
    /// earlier is cleared; new memory comes zeroed from the allocator, which for large
    /// sizes maps fresh pages instead of writing zeros.
    pub fn alloc_own_zeroed(&mut self, bytes: usize, align: usize) -> *mut u8 {
        self.own_allocation(bytes, align, Touch::Whole, 1, true)
    }

    fn own_allocation(
        &mut self,
        bytes: usize,
        align: usize,
        touch: Touch,
        elem: usize,
        zeroed: bool,
    ) -> *mut u8 {
        let align = align.max(1);
        if bytes == 0 {
            return align as *mut u8;
        }
        let Some(size) = size_class(bytes).checked_next_multiple_of(elem.max(1)) else {
            return std::ptr::null_mut();
        };
        let Ok(layout) = std::alloc::Layout::from_size_align(size, align) else {
            return std::ptr::null_mut();
        };
        let reused = match self.spare.iter().position(|&(_, l)| l == layout) {
            Some(k) => Some(self.spare.swap_remove(k).0 as *mut u8),
            None if layout.size() <= SMALL_OWN => thread_spare(layout),
            None => None,
        };
        let p = match reused {
            Some(p) => {
                if zeroed {
                    // SAFETY: `p` is an allocation of `layout`, which this arena holds.
                    unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
                }
                p
            }
            // SAFETY (both): the layout has a non-zero size.
            None if zeroed => unsafe { std::alloc::alloc_zeroed(layout) },
            None if layout.size() <= SMALL_OWN => unsafe { std::alloc::alloc(layout) },
            None => {
                // SAFETY: the layout has a non-zero size.
                let p = unsafe { std::alloc::alloc(layout) };
                if !p.is_null() && touch == Touch::Whole {
                    advise_huge_pages(p, bytes);
                }
                p
            }
        };
        if !p.is_null() {
            if self.own.capacity() == 0 {
                self.own = SPARES
                    .try_with(|s| std::mem::take(&mut s.borrow_mut().own_list))
                    .unwrap_or_default();
            }
            self.own.push((p as usize, layout));
        }
        p
    }

    /// Whether `ptr` is the start of an allocation of the arena's own of at least `bytes`
    /// bytes that it still holds (not spare).
    pub fn owns(&self, ptr: usize, bytes: usize) -> bool {
        self.own
            .iter()
            .any(|&(p, layout)| p == ptr && layout.size() >= bytes)
    }

    /// How many allocations of their own the arena holds: a mark for [`Arena::recycle`].
    pub fn own_mark(&self) -> usize {
        self.own.len()
    }

    /// Takes back the allocations of their own made since `mark` that none of the `live`
    /// addresses points into (an iteration's values its loop no longer holds): later
    /// allocations of the same layout reuse them (a loop's step after step), the rest is
    /// freed at the end of the run.
    pub fn recycle(&mut self, mark: usize, live: &[u64]) {
        // Those since `mark` are at `mark..`: moved out in place (no list made per step).
        let mut k = mark.min(self.own.len());
        while k < self.own.len() {
            let (p, layout) = self.own[k];
            let end = p + layout.size();
            if live.iter().any(|&a| a as usize >= p && a as usize <= end) {
                k += 1;
            } else {
                self.spare.push(self.own.swap_remove(k));
            }
        }
        // A few of each layout are enough for a loop's next steps.
        while self.spare.len() > MAX_SPARE_ALLOCATIONS {
            let (p, layout) = self.spare.remove(0);
            // SAFETY: allocated with this layout by `alloc_own`, and no longer used.
            unsafe { std::alloc::dealloc(p as *mut u8, layout) };
        }
    }

    /// Takes over another arena's allocations.
    pub fn absorb(&mut self, mut other: Arena) {
        self.own.append(&mut other.own);
        self.blocks.append(&mut other.blocks);
        self.spare.append(&mut other.spare);
    }

    /// Takes ownership of an allocation at `ptr` of at least `layout`'s size with its
    /// alignment, a whole number of `elem`-byte elements, if the arena made it on its own
    /// (small allocations live in shared blocks: their readers copy them); returns the
    /// allocation's size (see [`size_class`]).
    pub fn adopt(&mut self, ptr: usize, layout: std::alloc::Layout, elem: usize) -> Option<usize> {
        let k = self.own.iter().position(|&(p, l)| {
            p == ptr
                && l.align() == layout.align()
                && l.size() >= layout.size()
                && l.size().is_multiple_of(elem.max(1))
        })?;
        Some(self.own.swap_remove(k).1.size())
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // Most runs allocate nothing: their arenas (one per pool thread) have nothing to
        // give back, and need not touch this thread's spares, unless a result adopted
        // all they had: then their list goes back.
        if self.own.is_empty() && self.blocks.is_empty() && self.spare.is_empty() {
            self.give_back_list();
            return;
        }
        // Blocks go back to this thread's spares (a site called in a loop reuses them
        // rather than asking the allocator for a megabyte, and freeing it, every call), and
        // so do small allocations of their own and the list of them.
        let (mut blocks_kept, mut own_kept) = (0, [0usize; MAX_SPARE_SMALL_OWN]);
        let _ = SPARES.try_with(|s| {
            let mut spares = s.borrow_mut();
            let room = MAX_SPARE_BLOCKS.saturating_sub(spares.blocks.len());
            blocks_kept = room.min(self.blocks.len());
            spares
                .blocks
                .extend(self.blocks[..blocks_kept].iter().map(|&(p, _)| p));
            let mut k = 0;
            for &(p, layout) in self.own.iter().chain(&self.spare) {
                if layout.size() <= SMALL_OWN && spares.own.len() < MAX_SPARE_SMALL_OWN {
                    spares.own.push((p, layout));
                    own_kept[k] = p;
                    k += 1;
                }
            }
        });
        for &(p, layout) in self
            .own
            .iter()
            .chain(&self.spare)
            .filter(|(p, _)| !own_kept.contains(p))
            .chain(&self.blocks[blocks_kept..])
        {
            // SAFETY: every entry was allocated by `alloc` with this layout and not adopted
            // (spare blocks keep the layout `BLOCK` bytes aligned to 64, as allocated).
            unsafe { std::alloc::dealloc(p as *mut u8, layout) };
        }
        self.give_back_list();
    }
}

impl Arena {
    /// Leaves the list of allocations of its own (emptied) to the next arena on this thread.
    fn give_back_list(&mut self) {
        if self.own.capacity() == 0 || self.own.capacity() > 64 {
            return;
        }
        let mut list = std::mem::take(&mut self.own);
        list.clear();
        let _ = SPARES.try_with(|s| s.borrow_mut().own_list = list);
    }
}

/// How many recycled allocations an arena keeps for reuse.
const MAX_SPARE_ALLOCATIONS: usize = 16;

/// How many blocks a thread keeps for the next run's arena.
const MAX_SPARE_BLOCKS: usize = 2;

/// What ended runs left on a thread for later ones, freed when the thread ends: blocks of
/// `BLOCK` bytes (aligned to 64), small allocations of their own (a reduction's partial
/// results, a few words: a site called in a loop reuses them instead of asking the
/// allocator every call), and the list an arena keeps those in.
#[derive(Default)]
struct Spares {
    blocks: Vec<usize>,
    own: Vec<(usize, std::alloc::Layout)>,
    own_list: Vec<(usize, std::alloc::Layout)>,
}

impl Drop for Spares {
    fn drop(&mut self) {
        for &p in &self.blocks {
            if let Ok(layout) = std::alloc::Layout::from_size_align(BLOCK, 64) {
                // SAFETY: each spare block was allocated with this layout, and is no
                // longer any arena's.
                unsafe { std::alloc::dealloc(p as *mut u8, layout) };
            }
        }
        for &(p, layout) in &self.own {
            // SAFETY: allocated by `Arena::alloc_own` with this layout, and no longer any
            // arena's.
            unsafe { std::alloc::dealloc(p as *mut u8, layout) };
        }
    }
}

/// A small allocation of `layout` that an ended run left on this thread.
fn thread_spare(layout: std::alloc::Layout) -> Option<*mut u8> {
    SPARES
        .try_with(|s| {
            let mut spares = s.borrow_mut();
            let k = spares.own.iter().position(|&(_, l)| l == layout)?;
            Some(spares.own.swap_remove(k).0 as *mut u8)
        })
        .ok()
        .flatten()
}

/// The largest allocation of its own a thread keeps for later runs, and how many.
const SMALL_OWN: usize = 4096;
const MAX_SPARE_SMALL_OWN: usize = 8;

/// Word buffers that ended runs gave back (a site's captured values, its result): a site
/// called in a loop reuses them instead of allocating and freeing two every call.
const MAX_SPARE_WORD_BUFFERS: usize = 4;

/// An empty buffer with room for `n` words: one a run on this thread gave back, if any.
pub fn word_buffer(n: usize) -> Vec<u64> {
    let mut words = SPARE_WORDS
        .try_with(|s| s.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default();
    words.reserve(n);
    words
}

/// Gives a run's word buffer back for later runs on this thread (a small one: a large
/// one is freed).
pub fn give_back_words(mut words: Vec<u64>) {
    if words.capacity() > 4096 {
        return;
    }
    words.clear();
    let _ = SPARE_WORDS.try_with(|s| {
        let mut spare = s.borrow_mut();
        if spare.len() < MAX_SPARE_WORD_BUFFERS {
            spare.push(words);
        }
    });
}

thread_local! {
    static SPARE_WORDS: std::cell::RefCell<Vec<Vec<u64>>> = const { std::cell::RefCell::new(Vec::new()) };
    static SPARES: std::cell::RefCell<Spares> = std::cell::RefCell::new(Spares::default());
}

/// Reads a site's result words.
pub struct Unmarshal<'a> {
    /// The result's words.
    pub words: &'a [u64],
    /// The next word to read.
    pub at: usize,
    /// The memory the result's columns point into (adopted by the values read).
    pub arena: &'a mut Arena,
    /// Whether the sequence read next is in rows (see `layout::row_leaves`): a site's
    /// sequence result its code wrote in Rust's layout; read once, by that sequence.
    pub rows: bool,
}

impl Unmarshal<'_> {
    /// The next word.
    pub fn word(&mut self) -> Result<u64, String> {
        let w = self
            .words
            .get(self.at)
            .copied()
            .ok_or("the compiled result is shorter than its type")?;
        self.at += 1;
        Ok(w)
    }
}

/// A scalar's conversion to and from a word.
pub trait ScalarWord: Copy + 'static {
    fn to_word(self) -> u64;
    fn from_word(w: u64) -> Self;
}

macro_rules! word_int {
    ($($t:ty),*) => {$(
        impl ScalarWord for $t {
            fn to_word(self) -> u64 {
                self as u64
            }
            fn from_word(w: u64) -> Self {
                w as $t
            }
        }
    )*};
}
word_int!(i8, i16, i32, i64, u8, u16, u32, u64, usize);

impl ScalarWord for bool {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Self {
        w & 0xff != 0
    }
}

impl ScalarWord for f32 {
    fn to_word(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_word(w: u64) -> Self {
        f32::from_bits(w as u32)
    }
}

impl ScalarWord for f64 {
    fn to_word(self) -> u64 {
        self.to_bits()
    }
    fn from_word(w: u64) -> Self {
        f64::from_bits(w)
    }
}

/// A column of scalars read back from compiled code: adopted without a copy when the
/// compiled code allocated it for the result, copied otherwise (it may be an input).
pub fn take_column<T: ScalarWord>(u: &mut Unmarshal<'_>, len: usize) -> Result<Vec<T>, String> {
    let ptr = u.word()? as usize;
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(len).map_err(|e| e.to_string())?;
    if ptr == 0 || !ptr.is_multiple_of(std::mem::align_of::<T>()) {
        return Err("the compiled result holds an invalid pointer".into());
    }
    if let Some(size) = u.arena.adopt(ptr, layout, std::mem::size_of::<T>()) {
        // SAFETY: the arena allocated `ptr` with the layout of `Vec<T>` of capacity
        // `size / size_of::<T>()` (the alignment `T`'s, the size a multiple of `T`'s, at
        // least `len` of them); the compiled code wrote all `len` elements before
        // returning success (it fills every output column completely) with values of
        // `T` (plain scalars; bools are stored as 0 or 1); the arena has given up
        // ownership.
        Ok(unsafe { Vec::from_raw_parts(ptr as *mut T, len, size / std::mem::size_of::<T>()) })
    } else {
        // SAFETY: a pointer the compiled code returned without allocating it is one of the
        // marshaled inputs (or a view into one), which hold at least `len` valid `T`s and
        // outlive this call.
        Ok(unsafe { std::slice::from_raw_parts(ptr as *const T, len) }.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_round_up_by_at_most_an_eighth() {
        assert_eq!(size_class(1), 64);
        assert_eq!(size_class(64), 64);
        assert_eq!(size_class(65), 128);
        assert_eq!(size_class(512), 512);
        assert_eq!(size_class(513), 576);
        assert_eq!(size_class(16_000), 16_384);
        assert_eq!(size_class(16_008), 16_384);
        for bytes in (1..100_000).step_by(7).chain([usize::MAX - 3, usize::MAX]) {
            let c = size_class(bytes);
            assert!(c >= bytes, "{bytes}");
            assert!(c - bytes <= (bytes / 8).max(63), "{bytes} -> {c}");
            assert!(c.is_multiple_of(64) || c == bytes, "{bytes} -> {c}");
        }
    }

    #[test]
    fn a_loop_reuses_memory_of_nearby_sizes_and_results_keep_it_as_capacity() {
        let mut arena = Arena::default();
        let mark = arena.own_mark();
        let a = arena.alloc_own(16_000, 8, Touch::Whole);
        arena.recycle(mark, &[]);
        // One element longer: the same allocation again.
        let b = arena.alloc_own(16_008, 8, Touch::Whole);
        assert_eq!(a, b);
        let layout = std::alloc::Layout::array::<f64>(2001).unwrap();
        assert_eq!(arena.adopt(b as usize, layout, 8), Some(16_384));
        // Adopted: the arena no longer frees it; as a Vec it has room for 2048.
        // SAFETY: allocated with the layout of 2048 `f64`s; 2001 written below first.
        let v = unsafe {
            std::ptr::write_bytes(b, 0, 2001 * 8);
            Vec::from_raw_parts(b as *mut f64, 2001, 2048)
        };
        assert_eq!((v.len(), v.capacity(), v[2000]), (2001, 2048, 0.0));
        // A layout larger than the allocation, or another alignment, is not adopted.
        let c = arena.alloc_own(1000, 8, Touch::Whole);
        let big = std::alloc::Layout::array::<f64>(200).unwrap();
        assert_eq!(arena.adopt(c as usize, big, 8), None);
        let other = std::alloc::Layout::from_size_align(1000, 4).unwrap();
        assert_eq!(arena.adopt(c as usize, other, 4), None);
    }
}

//! LLVM's object code made runnable in this process: the ELF relocatable object LLVM
//! emits for a site (compiled here, or read from the disk cache) is laid out in fresh
//! pages, its relocations are applied (the module's own functions and constants, and
//! the runtime's helpers by name), and its pages are made executable or read-only.
//!
//! The code is compiled for the large code model (every address a 64-bit constant), so
//! x86-64 objects need little more than absolute relocations; PC-relative ones are
//! applied within the object's pages, and through a jump or an address slot beside them
//! for a symbol outside. A relocation of another kind, or a symbol neither the module
//! nor the helpers nor the process defines, fails the load with its name: an unresolved
//! call would otherwise only crash when it runs.

use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};
use std::collections::HashMap;

const PAGE: usize = 4096;

/// The x86-64 relocations applied (the ELF psABI's numbers).
const R_X86_64_64: u32 = 1;
const R_X86_64_PC32: u32 = 2;
const R_X86_64_PLT32: u32 = 4;
const R_X86_64_GOTPCREL: u32 = 9;
const R_X86_64_PC64: u32 = 24;
const R_X86_64_GOTPCRELX: u32 = 41;
const R_X86_64_REX_GOTPCRELX: u32 = 42;

/// ELF section flags.
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;

/// Loads `bytes` (an ELF relocatable object) and returns the address of each function of
/// `names`; `helper` gives a runtime helper's address by name (other undefined symbols
/// are looked up in the process, as a dynamic linker would: `memcpy`, `fmod`).
pub(super) fn load(
    bytes: &[u8],
    names: &[String],
    helper: &dyn Fn(&str) -> Option<u64>,
) -> Result<Vec<u64>, String> {
    if !cfg!(target_arch = "x86_64") {
        return Err("loading LLVM's code is implemented for x86-64 only".into());
    }
    let file = object::File::parse(bytes).map_err(|e| format!("LLVM's object: {e}"))?;
    let layout = Layout::of(&file)?;
    let mut pages = Pages::new(layout.size)?;
    for (&index, &at) in &layout.placed {
        let section = file
            .section_by_index(object::SectionIndex(index))
            .map_err(|e| format!("LLVM's object: {e}"))?;
        if let Ok(data) = section.data() {
            pages.write(at, data)?;
        }
    }
    let base = pages.address();
    let address_of = |target: &Target| -> Result<u64, String> {
        match target {
            Target::At(index, offset) => layout
                .placed
                .get(index)
                .map(|&at| base + (at as u64).wrapping_add(*offset))
                .ok_or_else(|| "a relocation into a section that is not loaded".to_string()),
            Target::Absolute(a) => Ok(*a),
            Target::External(name) => helper(name)
                .or_else(|| in_process(name))
                .ok_or_else(|| format!("LLVM's code calls `{name}`, which nothing defines")),
        }
    };
    // Jumps and address slots for symbols outside the pages.
    for (name, &at) in &layout.stubs {
        let target = address_of(&Target::External(name.clone()))?;
        // jmp *0(%rip), then the address it reads.
        pages.write(at, &[0xff, 0x25, 0, 0, 0, 0])?;
        pages.write(at + 6, &target.to_le_bytes())?;
    }
    for (target, &at) in &layout.slots {
        pages.write(at, &address_of(target)?.to_le_bytes())?;
    }
    for r in &layout.relocations {
        let place = base + r.at as u64;
        let symbol = address_of(&r.target)?;
        let value = |s: u64| s.wrapping_add(r.addend as u64);
        let pc32 = |s: u64| -> Result<[u8; 4], String> {
            let delta = value(s).wrapping_sub(place) as i64;
            i32::try_from(delta)
                .map(i32::to_le_bytes)
                .map_err(|_| "a 32-bit relative address out of reach".to_string())
        };
        match r.kind {
            R_X86_64_64 => pages.write(r.at, &value(symbol).to_le_bytes())?,
            R_X86_64_PC64 => pages.write(r.at, &value(symbol).wrapping_sub(place).to_le_bytes())?,
            R_X86_64_PC32 | R_X86_64_PLT32 => {
                let via = match (&r.target, pc32(symbol)) {
                    (_, Ok(bytes)) => bytes,
                    (Target::External(name), Err(_)) => pc32(base + layout.stubs[name] as u64)?,
                    (_, Err(e)) => return Err(e),
                };
                pages.write(r.at, &via)?
            }
            R_X86_64_GOTPCREL | R_X86_64_GOTPCRELX | R_X86_64_REX_GOTPCRELX => {
                pages.write(r.at, &pc32(base + layout.slots[&r.target] as u64)?)?
            }
            other => return Err(format!("LLVM's code has a relocation of type {other}")),
        }
    }
    pages.protect(&layout.groups)?;
    let mut defined: HashMap<&str, u64> = HashMap::new();
    for symbol in file.symbols() {
        if let (Ok(name), Some(index)) = (symbol.name(), symbol.section_index()) {
            if let Some(&at) = layout.placed.get(&index.0) {
                defined.insert(name, base + at as u64 + symbol.address());
            }
        }
    }
    for_perf(&file, &defined);
    let addresses = names
        .iter()
        .map(|n| {
            defined
                .get(n.as_str())
                .copied()
                .ok_or_else(|| format!("LLVM's object has no function `{n}`"))
        })
        .collect();
    // The code stays for the life of the process, as Cranelift's does.
    std::mem::forget(pages);
    addresses
}

/// Names the functions for Linux `perf`, as Cranelift's JIT does, while it records
/// (`PERF_BUILDID_DIR` set): `/tmp/perf-PID.map` lines of address, size and name.
fn for_perf(file: &object::File<'_>, defined: &HashMap<&str, u64>) {
    use std::io::Write;
    if std::env::var_os("PERF_BUILDID_DIR").is_none() {
        return;
    }
    let path = format!("/tmp/perf-{}.map", std::process::id());
    let Ok(mut map) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    else {
        return;
    };
    for symbol in file.symbols() {
        if let Some(&at) = symbol.name().ok().and_then(|n| defined.get(n)) {
            let name = symbol.name().unwrap_or_default();
            let _ = writeln!(map, "{at:x} {:x} llvm_{name}", symbol.size());
        }
    }
}

/// What a relocation points at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Target {
    /// A place in a section of the object: its index and the offset in it.
    At(usize, u64),
    Absolute(u64),
    /// A symbol the object does not define.
    External(String),
}

/// A relocation to apply at byte `at` of the pages.
struct Relocation {
    at: usize,
    kind: u32,
    target: Target,
    addend: i64,
}

/// Where everything goes: each loaded section's offset in the pages, then the jumps to
/// symbols outside and the address slots, and the pages' protections.
struct Layout {
    placed: HashMap<usize, usize>,
    stubs: HashMap<String, usize>,
    slots: std::collections::BTreeMap<Target, usize>,
    relocations: Vec<Relocation>,
    /// `(start, end, flags)` of the executable, read-only and writable parts.
    groups: Vec<(usize, usize, i32)>,
    size: usize,
}

impl Layout {
    fn of(file: &object::File<'_>) -> Result<Layout, String> {
        let mut parts: [Vec<(usize, u64, u64)>; 3] = Default::default();
        for section in file.sections() {
            let object::SectionFlags::Elf { sh_flags, .. } = section.flags() else {
                return Err("LLVM's object is not ELF".into());
            };
            let sh_flags = sh_flags.0;
            // Unwinding tables are not registered: nothing unwinds through the code.
            if sh_flags & SHF_ALLOC == 0 || section.name() == Ok(".eh_frame") {
                continue;
            }
            let part = match (sh_flags & SHF_EXECINSTR != 0, sh_flags & SHF_WRITE != 0) {
                (true, _) => 0,
                (false, false) => 1,
                (false, true) => 2,
            };
            parts[part].push((section.index().0, section.size(), section.align().max(1)));
        }
        let mut relocations = Vec::new();
        let mut external_pc: Vec<String> = Vec::new();
        let mut got: Vec<Target> = Vec::new();
        let kept: Vec<usize> = parts.iter().flatten().map(|p| p.0).collect();
        for section in file.sections().filter(|s| kept.contains(&s.index().0)) {
            for (offset, r) in section.relocations() {
                let RelocationFlags::Elf { r_type } = r.flags() else {
                    return Err("LLVM's object is not ELF".into());
                };
                let r_type = r_type.0;
                let target = target(file, r.target())?;
                if matches!(r_type, R_X86_64_PC32 | R_X86_64_PLT32) {
                    if let Target::External(name) = &target {
                        external_pc.push(name.clone());
                    }
                }
                if matches!(
                    r_type,
                    R_X86_64_GOTPCREL | R_X86_64_GOTPCRELX | R_X86_64_REX_GOTPCRELX
                ) {
                    got.push(target.clone());
                }
                relocations.push((section.index().0, offset, r_type, target, r.addend()));
            }
        }
        external_pc.sort();
        external_pc.dedup();
        got.sort();
        got.dedup();
        let mut placed = HashMap::new();
        let mut stubs = HashMap::new();
        let mut slots = std::collections::BTreeMap::new();
        let mut groups = Vec::new();
        let mut at = 0usize;
        for (part, sections) in parts.iter().enumerate() {
            let start = at;
            for &(index, size, align) in sections {
                at = at.next_multiple_of(align as usize);
                placed.insert(index, at);
                at += size as usize;
            }
            if part == 0 {
                for name in &external_pc {
                    at = at.next_multiple_of(16);
                    stubs.insert(name.clone(), at);
                    at += 16;
                }
            }
            if part == 1 {
                for target in &got {
                    at = at.next_multiple_of(8);
                    slots.insert(target.clone(), at);
                    at += 8;
                }
            }
            at = at.next_multiple_of(PAGE);
            let flags = [
                libc::PROT_READ | libc::PROT_EXEC,
                libc::PROT_READ,
                libc::PROT_READ | libc::PROT_WRITE,
            ][part];
            groups.push((start, at, flags));
        }
        let relocations = relocations
            .into_iter()
            .map(|(section, offset, kind, target, addend)| Relocation {
                at: placed[&section] + offset as usize,
                kind,
                target,
                addend,
            })
            .collect();
        Ok(Layout {
            placed,
            stubs,
            slots,
            relocations,
            groups,
            size: at.max(PAGE),
        })
    }
}

/// What the relocation target `t` of `file` is.
fn target(file: &object::File<'_>, t: RelocationTarget) -> Result<Target, String> {
    match t {
        RelocationTarget::Section(index) => Ok(Target::At(index.0, 0)),
        RelocationTarget::Absolute => Ok(Target::Absolute(0)),
        RelocationTarget::Symbol(index) => {
            let symbol = file
                .symbol_by_index(index)
                .map_err(|e| format!("LLVM's object: {e}"))?;
            match symbol.section() {
                object::SymbolSection::Section(section) => {
                    Ok(Target::At(section.0, symbol.address()))
                }
                object::SymbolSection::Absolute => Ok(Target::Absolute(symbol.address())),
                object::SymbolSection::Undefined => Ok(Target::External(
                    symbol
                        .name()
                        .map_err(|e| format!("LLVM's object: {e}"))?
                        .to_string(),
                )),
                other => Err(format!("LLVM's object has a symbol in {other:?}")),
            }
        }
        other => Err(format!("LLVM's object has a relocation to {other:?}")),
    }
}

/// The address of `name` among the process's symbols (the C library's, for calls LLVM
/// makes itself).
fn in_process(name: &str) -> Option<u64> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: `dlsym` with `RTLD_DEFAULT` only reads the loaded objects' symbol tables.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p as u64)
}

/// Fresh pages the code is laid out in.
struct Pages {
    at: *mut u8,
    size: usize,
}

impl Pages {
    fn new(size: usize) -> Result<Pages, String> {
        // SAFETY: an anonymous private mapping; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err("no memory for LLVM's code".into());
        }
        Ok(Pages { at: p.cast(), size })
    }

    fn address(&self) -> u64 {
        self.at as u64
    }

    /// Copies `bytes` to offset `at` (still writable: before [`Pages::protect`]).
    fn write(&mut self, at: usize, bytes: &[u8]) -> Result<(), String> {
        if at
            .checked_add(bytes.len())
            .is_none_or(|end| end > self.size)
        {
            return Err("LLVM's object writes outside its sections".into());
        }
        // SAFETY: `at..at + bytes.len()` lies within the mapping (checked above), which is
        // writable until `protect`, and `bytes` is not part of it.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.at.add(at), bytes.len()) };
        Ok(())
    }

    /// Gives each part of the pages its protection.
    fn protect(&self, groups: &[(usize, usize, i32)]) -> Result<(), String> {
        for &(start, end, flags) in groups {
            if end > start {
                // SAFETY: `start..end` is page-aligned and within the mapping.
                let done = unsafe { libc::mprotect(self.at.add(start).cast(), end - start, flags) };
                if done != 0 {
                    return Err("could not protect LLVM's code".into());
                }
            }
        }
        Ok(())
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, not used after this (a load that failed).
        unsafe { libc::munmap(self.at.cast(), self.size) };
    }
}

//! LLVM's C API, loaded at run time from the shared library (`libLLVM.so.19.1`, or the
//! one `ACCEL_LLVM` names): building needs no LLVM, and a machine without it keeps the
//! Cranelift tiers. The calls into the library are here (the unsafe code of the LLVM
//! tier, with the loader's in `load`): a module's IR in, its object code out.

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

type Ptr = *mut c_void;
type Bool = i32;

/// `LLVMRelocMode` and `LLVMCodeModel` values: code for any address (see `load`).
const RELOC_STATIC: u32 = 1;
const CODE_MODEL_LARGE: u32 = 6;
/// `LLVMCodeGenOptLevel`'s aggressive level and `LLVMCodeGenFileType`'s object file.
const OPT_AGGRESSIVE: u32 = 3;
const OBJECT_FILE: u32 = 1;

/// The functions of the C API the tier calls.
struct Api {
    _library: libloading::Library,
    context_create: unsafe extern "C" fn() -> Ptr,
    context_dispose: unsafe extern "C" fn(Ptr),
    buffer_copy: unsafe extern "C" fn(*const c_char, usize, *const c_char) -> Ptr,
    parse_ir: unsafe extern "C" fn(Ptr, Ptr, *mut Ptr, *mut *mut c_char) -> Bool,
    dispose_message: unsafe extern "C" fn(*mut c_char),
    default_triple: unsafe extern "C" fn() -> *mut c_char,
    host_cpu: unsafe extern "C" fn() -> *mut c_char,
    host_features: unsafe extern "C" fn() -> *mut c_char,
    target_from_triple: unsafe extern "C" fn(*const c_char, *mut Ptr, *mut *mut c_char) -> Bool,
    create_machine: unsafe extern "C" fn(
        Ptr,
        *const c_char,
        *const c_char,
        *const c_char,
        u32,
        u32,
        u32,
    ) -> Ptr,
    dispose_machine: unsafe extern "C" fn(Ptr),
    machine_layout: unsafe extern "C" fn(Ptr) -> Ptr,
    set_layout: unsafe extern "C" fn(Ptr, Ptr),
    dispose_layout: unsafe extern "C" fn(Ptr),
    set_target: unsafe extern "C" fn(Ptr, *const c_char),
    pass_options: unsafe extern "C" fn() -> Ptr,
    dispose_pass_options: unsafe extern "C" fn(Ptr),
    run_passes: unsafe extern "C" fn(Ptr, *const c_char, Ptr, Ptr) -> Ptr,
    error_message: unsafe extern "C" fn(Ptr) -> *mut c_char,
    dispose_error_message: unsafe extern "C" fn(*mut c_char),
    emit: unsafe extern "C" fn(Ptr, Ptr, u32, *mut *mut c_char, *mut Ptr) -> Bool,
    buffer_start: unsafe extern "C" fn(Ptr) -> *const u8,
    buffer_size: unsafe extern "C" fn(Ptr) -> usize,
    dispose_buffer: unsafe extern "C" fn(Ptr),
    dispose_module: unsafe extern "C" fn(Ptr),
    /// The host's target triple, CPU and features.
    triple: CString,
    cpu: CString,
    features: CString,
    /// The library's file name.
    name: String,
}

// SAFETY: the API is a table of function pointers and strings; LLVM's functions are safe
// to call from several threads as long as each thread uses its own context, which
// `compile` creates per call.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}

/// The names tried, newest first (the runtime packages' names and the development
/// packages' links). Versions from 15 read the opaque pointers (`ptr`) the translation
/// writes; an older one found under an unversioned name is reported unavailable (see
/// `available`).
const NAMES: [&str; 16] = [
    "libLLVM.so.21.1",
    "libLLVM-21.so",
    "libLLVM.so.20.1",
    "libLLVM-20.so",
    "libLLVM.so.19.1",
    "libLLVM-19.so",
    "libLLVM.so.18.1",
    "libLLVM-18.so",
    "libLLVM-17.so",
    "libLLVM-17.so.1",
    "libLLVM-16.so",
    "libLLVM-16.so.1",
    "libLLVM-15.so",
    "libLLVM-15.so.1",
    "libLLVM.so",
    "libLLVM.so.1",
];

/// The loaded library, or why there is none.
fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let names: Vec<String> = match std::env::var("ACCEL_LLVM") {
            Ok(path) if !path.is_empty() => vec![path],
            _ => NAMES.iter().map(|s| s.to_string()).collect(),
        };
        let Some(_loading) = UnderWay::start(&LOADING) else {
            return Err("the process is exiting".into());
        };
        let mut errors = Vec::new();
        for name in names {
            // SAFETY: loading LLVM runs its static initialisers (option registration),
            // which have no preconditions.
            match unsafe { libloading::Library::new(&name) } {
                Ok(library) => return load(library, name),
                Err(e) => errors.push(format!("{name}: {e}")),
            }
        }
        Err(format!(
            "no LLVM library found (install libllvm19, or set ACCEL_LLVM to libLLVM's path): {}",
            errors.last().cloned().unwrap_or_default()
        ))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The API's functions from `library`, its targets initialised.
fn load(library: libloading::Library, name: String) -> Result<Api, String> {
    macro_rules! get {
        ($symbol:literal) => {
            // SAFETY: each symbol is declared with its C prototype from LLVM's headers
            // (llvm-c/*.h), the same in every version this loads.
            *unsafe { library.get($symbol.as_bytes()) }
                .map_err(|e| format!("{name} has no {}: {e}", $symbol))?
        };
    }
    let init: [unsafe extern "C" fn(); 4] = if cfg!(target_arch = "aarch64") {
        [
            get!("LLVMInitializeAArch64TargetInfo"),
            get!("LLVMInitializeAArch64Target"),
            get!("LLVMInitializeAArch64TargetMC"),
            get!("LLVMInitializeAArch64AsmPrinter"),
        ]
    } else {
        [
            get!("LLVMInitializeX86TargetInfo"),
            get!("LLVMInitializeX86Target"),
            get!("LLVMInitializeX86TargetMC"),
            get!("LLVMInitializeX86AsmPrinter"),
        ]
    };
    for f in init {
        // SAFETY: the target initialisers take no arguments and may run once per process
        // (this runs once: `api` is a `OnceLock`).
        unsafe { f() };
    }
    let mut api = Api {
        context_create: get!("LLVMContextCreate"),
        context_dispose: get!("LLVMContextDispose"),
        buffer_copy: get!("LLVMCreateMemoryBufferWithMemoryRangeCopy"),
        parse_ir: get!("LLVMParseIRInContext"),
        dispose_message: get!("LLVMDisposeMessage"),
        default_triple: get!("LLVMGetDefaultTargetTriple"),
        host_cpu: get!("LLVMGetHostCPUName"),
        host_features: get!("LLVMGetHostCPUFeatures"),
        target_from_triple: get!("LLVMGetTargetFromTriple"),
        create_machine: get!("LLVMCreateTargetMachine"),
        dispose_machine: get!("LLVMDisposeTargetMachine"),
        machine_layout: get!("LLVMCreateTargetDataLayout"),
        set_layout: get!("LLVMSetModuleDataLayout"),
        dispose_layout: get!("LLVMDisposeTargetData"),
        set_target: get!("LLVMSetTarget"),
        pass_options: get!("LLVMCreatePassBuilderOptions"),
        dispose_pass_options: get!("LLVMDisposePassBuilderOptions"),
        run_passes: get!("LLVMRunPasses"),
        error_message: get!("LLVMGetErrorMessage"),
        dispose_error_message: get!("LLVMDisposeErrorMessage"),
        emit: get!("LLVMTargetMachineEmitToMemoryBuffer"),
        buffer_start: get!("LLVMGetBufferStart"),
        buffer_size: get!("LLVMGetBufferSize"),
        dispose_buffer: get!("LLVMDisposeMemoryBuffer"),
        dispose_module: get!("LLVMDisposeModule"),
        triple: CString::default(),
        cpu: CString::default(),
        features: CString::default(),
        name,
        _library: library,
    };
    // SAFETY: `at_exit` is an `extern "C" fn()` that touches only atomics and sleeps.
    unsafe { libc::atexit(at_exit) };
    // SAFETY: the three return strings LLVM allocated, taken and freed by `owned`.
    unsafe {
        api.triple = owned(&api, (api.default_triple)());
        api.cpu = owned(&api, (api.host_cpu)());
        api.features = owned(&api, (api.host_features)());
    }
    Ok(api)
}

/// A copy of the LLVM-allocated string `s`, which it frees.
///
/// # Safety
/// `s` is null or a string LLVM allocated for `LLVMDisposeMessage`.
unsafe fn owned(api: &Api, s: *mut c_char) -> CString {
    if s.is_null() {
        return CString::default();
    }
    // SAFETY: per the contract, `s` is a NUL-terminated string LLVM owns until freed.
    let copy = unsafe { CStr::from_ptr(s) }.to_owned();
    // SAFETY: freed once, with the function LLVM documents for it.
    unsafe { (api.dispose_message)(s) };
    copy
}

/// The loaded library's name, the host CPU and its features, or why LLVM is unavailable.
pub(super) fn host() -> Result<(String, String, String), String> {
    let api = api()?;
    Ok((
        api.name.clone(),
        api.cpu.to_string_lossy().into_owned(),
        api.features.to_string_lossy().into_owned(),
    ))
}

/// Compiles the module `ir` (textual IR) after running `passes` on it: its object code
/// for the host (an ELF relocatable object, see `load`).
pub(super) fn object(ir: &str, passes: &str) -> Result<Vec<u8>, String> {
    let api = api()?;
    let ir = CString::new(ir).map_err(|_| "the module has a NUL byte".to_string())?;
    let passes = CString::new(passes).map_err(|e| e.to_string())?;
    let Some(_compiling) = UnderWay::start(&IN_FLIGHT) else {
        return Err("the process is exiting".into());
    };
    static REGISTERED: AtomicUsize = AtomicUsize::new(0);
    // The first compile makes statics whose destructors [`at_exit`], registered before,
    // runs after: only the guards protect it.
    let _first = match REGISTERED.load(Ordering::SeqCst) {
        0 => Some(UnderWay::start(&LOADING).ok_or("the process is exiting")?),
        _ => None,
    };
    // SAFETY: every object made here is used on this thread only, with the context made
    // for this call, and freed before it (the context outlives the module).
    let result = unsafe {
        let context = (api.context_create)();
        let result = object_in(api, context, &ir, &passes);
        (api.context_dispose)(context);
        result
    };
    // Bounded: a process compiling thousands of sites has long registered every static.
    if REGISTERED.fetch_add(1, Ordering::Relaxed) < 1024 {
        // SAFETY: as in `load`.
        unsafe { libc::atexit(at_exit) };
    }
    result
}

/// Compiles under way, and whether the process has begun to exit (see [`at_exit`]).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static EXITING: AtomicBool = AtomicBool::new(false);

/// Loads of the library and first compiles under way: the phases [`at_exit`] does not
/// protect (see [`guard_exit_of_this_thread`]).
static LOADING: AtomicUsize = AtomicUsize::new(0);

/// Makes this thread's exit, and the process's exit from it, wait for a load of the
/// library or a compile under way. A process that exited while a background thread
/// loaded LLVM crashed or spun (17 of 150 runs of a C program exiting 0-40 ms into a
/// `dlopen` of libLLVM.so.19.1 on another thread), and one that exited during the first
/// compile failed in the instruction selector ("LLVM ERROR: Do not know how to split the
/// result of this operator"): exit ran the destructors LLVM registered so far while its
/// constructors, or the compile that made them, still ran. [`at_exit`] cannot help there,
/// since exit handlers run newest first and those are newer; but the exiting thread's
/// thread-local destructors run before every exit handler (glibc's `exit`, which
/// returning from `main` and `std::process::exit` call). So each thread that calls a site
/// that may tier up to LLVM holds a thread-local guard: the main thread's (which goes
/// only as the process exits) stops new loads and compiles and waits for those under way,
/// up to five seconds; another thread's, as it ends, waits for a load.
pub(super) fn guard_exit_of_this_thread() {
    struct Guard;
    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: getpid and gettid have no preconditions.
            let main = unsafe { libc::getpid() == libc::gettid() };
            if main {
                EXITING.store(true, Ordering::SeqCst);
            }
            let busy = || {
                LOADING.load(Ordering::SeqCst) != 0
                    || (main && IN_FLIGHT.load(Ordering::SeqCst) != 0)
            };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while busy() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
    thread_local! {
        static GUARD: Guard = const { Guard };
    }
    GUARD.with(|_| {});
}

/// Work under way that exit must wait for (a compile, counted in [`IN_FLIGHT`]; a load
/// or first compile, in [`LOADING`]), counted while it lives.
struct UnderWay(&'static AtomicUsize);

impl UnderWay {
    /// `None` once the process is exiting: nothing starts then.
    fn start(count: &'static AtomicUsize) -> Option<UnderWay> {
        count.fetch_add(1, Ordering::SeqCst);
        if EXITING.load(Ordering::SeqCst) {
            count.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(UnderWay(count))
    }
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs at exit before LLVM's own static destructors (it is registered after the library
/// has registered them, and exit runs handlers in reverse): a background compile still
/// in LLVM would otherwise run on destroyed globals. Stops new compiles and waits up to
/// two seconds for those under way.
///
/// LLVM registers the destructors of some statics when a compile first uses them (the
/// instruction selector's tables of value types), after this handler: a process that
/// exited while its background thread compiled crashed in the selector (one run in five
/// of the ODE example). So the handler is registered again after each compile (it does
/// nothing the second time), which puts it before every destructor registered so far.
extern "C" fn at_exit() {
    EXITING.store(true, Ordering::SeqCst);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while IN_FLIGHT.load(Ordering::SeqCst) != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// [`object`] in `context`.
///
/// # Safety
/// `context` is a live LLVM context used by this thread only.
unsafe fn object_in(api: &Api, context: Ptr, ir: &CStr, passes: &CStr) -> Result<Vec<u8>, String> {
    let mut message: *mut c_char = std::ptr::null_mut();
    // SAFETY (all calls below): arguments are live objects of this context or valid
    // NUL-terminated strings; out-parameters point to locals.
    unsafe {
        let buffer = (api.buffer_copy)(ir.as_ptr(), ir.to_bytes().len(), c"site".as_ptr());
        let mut module: Ptr = std::ptr::null_mut();
        // Takes the buffer.
        if (api.parse_ir)(context, buffer, &mut module, &mut message) != 0 {
            let why = owned(api, message);
            return Err(format!(
                "LLVM rejected the module: {}",
                why.to_string_lossy()
            ));
        }
        let mut target: Ptr = std::ptr::null_mut();
        if (api.target_from_triple)(api.triple.as_ptr(), &mut target, &mut message) != 0 {
            let why = owned(api, message);
            (api.dispose_module)(module);
            return Err(format!("no LLVM target: {}", why.to_string_lossy()));
        }
        let machine = (api.create_machine)(
            target,
            api.triple.as_ptr(),
            api.cpu.as_ptr(),
            api.features.as_ptr(),
            OPT_AGGRESSIVE,
            RELOC_STATIC,
            CODE_MODEL_LARGE,
        );
        let layout = (api.machine_layout)(machine);
        (api.set_layout)(module, layout);
        (api.dispose_layout)(layout);
        (api.set_target)(module, api.triple.as_ptr());
        let options = (api.pass_options)();
        let error = (api.run_passes)(module, passes.as_ptr(), machine, options);
        (api.dispose_pass_options)(options);
        let result = if !error.is_null() {
            let text = (api.error_message)(error);
            let why = CStr::from_ptr(text).to_string_lossy().into_owned();
            (api.dispose_error_message)(text);
            Err(format!("LLVM's passes failed: {why}"))
        } else {
            let mut out: Ptr = std::ptr::null_mut();
            if (api.emit)(machine, module, OBJECT_FILE, &mut message, &mut out) != 0 {
                let why = owned(api, message);
                Err(format!(
                    "LLVM could not emit the code: {}",
                    why.to_string_lossy()
                ))
            } else {
                let start = (api.buffer_start)(out);
                let size = (api.buffer_size)(out);
                let bytes = std::slice::from_raw_parts(start, size).to_vec();
                (api.dispose_buffer)(out);
                Ok(bytes)
            }
        };
        (api.dispose_machine)(machine);
        (api.dispose_module)(module);
        result
    }
}

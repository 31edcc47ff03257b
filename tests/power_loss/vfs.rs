//! A recording VFS: registered as the process's default, it hands every call
//! to SQLite's own default VFS ("unix") and logs, for the files of one
//! directory, each creation and each completed write, truncate, sync and
//! delete, in one ordered log. The shared-memory index (`-shm`) is mapped by the real VFS itself and
//! never passes through here; it is rebuilt on open anyway.
//!
//! All unsafe code of the power-loss test is in this module.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, Once};

use rusqlite::ffi;

#[derive(Clone, Debug)]
pub enum Op {
    /// The file did not exist and xOpen created it.
    Create,
    Write {
        offset: u64,
        data: Vec<u8>,
    },
    Truncate(u64),
    Sync,
    Delete,
}

#[derive(Clone, Debug)]
pub struct Event {
    /// The file's name in the recorded directory (`j.sqlite`, `j.sqlite-wal`, ...).
    pub file: String,
    pub op: Op,
}

struct Recorder {
    /// The directory whose files are logged (with a trailing `/`); none: log nothing.
    root: Option<String>,
    /// Names of the files seen so far; an open file keeps its index + 1.
    names: Vec<String>,
    log: Vec<Event>,
}

static RECORDER: Mutex<Recorder> = Mutex::new(Recorder { root: None, names: Vec::new(), log: Vec::new() });
static REAL: AtomicPtr<ffi::sqlite3_vfs> = AtomicPtr::new(ptr::null_mut());
static INSTALL: Once = Once::new();

fn recorder() -> std::sync::MutexGuard<'static, Recorder> {
    RECORDER.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes the recording VFS this process's default (once).
pub fn install() {
    INSTALL.call_once(|| {
        // SAFETY: `sqlite3_vfs_find(NULL)` initialises SQLite and returns the
        // default VFS, which lives for the whole process. The copy keeps its
        // `pAppData` and `mxPathname`, which are all the unix methods not
        // overridden here read from the VFS pointer they are given; it is
        // leaked, so the pointer SQLite keeps after registering stays valid.
        unsafe {
            let real = ffi::sqlite3_vfs_find(ptr::null());
            assert!(!real.is_null(), "SQLite has a default VFS");
            REAL.store(real, Ordering::SeqCst);
            let mut shim = *real;
            shim.pNext = ptr::null_mut();
            shim.zName = c"loopx_power_loss_recorder".as_ptr();
            shim.szOsFile = c_int::try_from(HEADER).expect("small header") + (*real).szOsFile;
            shim.xOpen = Some(x_open);
            shim.xDelete = Some(x_delete);
            let shim = Box::into_raw(Box::new(shim));
            assert_eq!(ffi::sqlite3_vfs_register(shim, 1), ffi::SQLITE_OK);
        }
    });
}

/// Starts logging the files under `dir` (an existing directory), from an empty log.
pub fn record_under(dir: &Path) {
    let dir = dir.canonicalize().expect("the recorded directory exists");
    let mut r = recorder();
    r.root = Some(format!("{}/", dir.to_str().expect("a UTF-8 temp dir")));
    r.names.clear();
    r.log.clear();
}

/// How many events the log holds now.
pub fn position() -> usize {
    recorder().log.len()
}

/// Stops logging and hands the log over.
pub fn take_log() -> Vec<Event> {
    let mut r = recorder();
    r.root = None;
    std::mem::take(&mut r.log)
}

fn push(file: usize, op: Op) {
    let mut r = recorder();
    if let (Some(_), Some(file)) = (&r.root, r.names.get(file).cloned()) {
        r.log.push(Event { file, op });
    }
}

/// The index of the logged file `name`, if it is under the recorded
/// directory (temporary files have no name and are never logged).
fn file_of(name: *const c_char) -> Option<usize> {
    if name.is_null() {
        return None;
    }
    // SAFETY: SQLite passes a NUL-terminated path that outlives the call.
    let name = unsafe { CStr::from_ptr(name) }.to_str().ok()?;
    let mut r = recorder();
    let relative = name.strip_prefix(r.root.as_deref()?)?.to_owned();
    Some(match r.names.iter().position(|n| *n == relative) {
        Some(i) => i,
        None => {
            r.names.push(relative);
            r.names.len() - 1
        }
    })
}

/// What SQLite allocates per open file: this header, then the real VFS's file.
#[repr(C)]
struct ShimFile {
    /// First, so a `*mut sqlite3_file` is a `*mut ShimFile`.
    base: ffi::sqlite3_file,
    /// The file's index in `Recorder::names` + 1, or 0 when it is not logged.
    file: usize,
}

/// The real file starts here, aligned as SQLite aligns its allocations (8).
const HEADER: usize = std::mem::size_of::<ShimFile>().next_multiple_of(8);

/// # Safety
/// `f` must be a file opened by [`x_open`] (SQLite allocated `szOsFile` bytes).
unsafe fn real(f: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    f.cast::<u8>().add(HEADER).cast()
}

/// # Safety
/// As [`real`], and the real open succeeded (its methods are set).
unsafe fn methods(f: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
    &*(*real(f)).pMethods
}

/// # Safety
/// As [`real`].
unsafe fn logged(f: *mut ffi::sqlite3_file) -> Option<usize> {
    (*f.cast::<ShimFile>()).file.checked_sub(1)
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite gives `szOsFile` writable bytes at `file`: our header,
    // then room for the real file, which the real xOpen fills in.
    let shim = file.cast::<ShimFile>();
    (*shim).base.pMethods = ptr::null();
    let logged = file_of(name);
    (*shim).file = logged.map_or(0, |i| i + 1);
    // SAFETY: `logged` is only set for a non-null, NUL-terminated UTF-8 name.
    let created = logged.is_some()
        && flags & ffi::SQLITE_OPEN_CREATE != 0
        && CStr::from_ptr(name).to_str().is_ok_and(|n| !Path::new(n).exists());
    let inner = real(file);
    (*inner).pMethods = ptr::null();
    let vfs = REAL.load(Ordering::SeqCst);
    let Some(open) = (*vfs).xOpen else { return ffi::SQLITE_CANTOPEN };
    let rc = open(vfs, name, inner, flags, out_flags);
    if !(*inner).pMethods.is_null() {
        if (*(*inner).pMethods).iVersion < 3 {
            // Our methods claim version 3 (shared memory, mmap); refuse rather than lie.
            if let Some(close) = (*(*inner).pMethods).xClose {
                close(inner);
            }
            return ffi::SQLITE_CANTOPEN;
        }
        // Set even when the open failed: SQLite then calls xClose, which
        // must reach the real file.
        (*shim).base.pMethods = &SHIM_METHODS;
    }
    if let (ffi::SQLITE_OK, true, Some(file)) = (rc, created, logged) {
        push(file, Op::Create);
    }
    rc
}

unsafe extern "C" fn x_delete(_vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    let vfs = REAL.load(Ordering::SeqCst);
    // SAFETY: forwarded unchanged to the real VFS, which SQLite would call the same way.
    let Some(delete) = (*vfs).xDelete else { return ffi::SQLITE_IOERR_DELETE };
    let rc = delete(vfs, name, sync_dir);
    if rc == ffi::SQLITE_OK {
        if let Some(file) = file_of(name) {
            push(file, Op::Delete);
        }
    }
    rc
}

/// Calls the real file's method, or answers SQLITE_IOERR if it has none
/// (a panic cannot unwind out of these callbacks).
macro_rules! forward {
    ($f:expr, $method:ident $(, $arg:expr)*) => {
        match methods($f).$method {
            Some(call) => call(real($f) $(, $arg)*),
            None => ffi::SQLITE_IOERR,
        }
    };
}

// Every method below is called by SQLite only on a file whose `pMethods` is
// `SHIM_METHODS`, i.e. one [`x_open`] opened through the real VFS, so
// `real`/`methods` point at a live real file; arguments are forwarded as is.

unsafe extern "C" fn x_close(f: *mut ffi::sqlite3_file) -> c_int {
    forward!(f, xClose)
}

unsafe extern "C" fn x_read(f: *mut ffi::sqlite3_file, buf: *mut c_void, n: c_int, off: i64) -> c_int {
    forward!(f, xRead, buf, n, off)
}

unsafe extern "C" fn x_write(f: *mut ffi::sqlite3_file, buf: *const c_void, n: c_int, off: i64) -> c_int {
    let rc = forward!(f, xWrite, buf, n, off);
    if let (ffi::SQLITE_OK, Some(file)) = (rc, logged(f)) {
        // SAFETY: SQLite's buffer holds `n` readable bytes for the call.
        let data = std::slice::from_raw_parts(buf.cast::<u8>(), usize::try_from(n).unwrap_or(0)).to_vec();
        push(file, Op::Write { offset: u64::try_from(off).unwrap_or(0), data });
    }
    rc
}

unsafe extern "C" fn x_truncate(f: *mut ffi::sqlite3_file, size: i64) -> c_int {
    let rc = forward!(f, xTruncate, size);
    if let (ffi::SQLITE_OK, Some(file)) = (rc, logged(f)) {
        push(file, Op::Truncate(u64::try_from(size).unwrap_or(0)));
    }
    rc
}

unsafe extern "C" fn x_sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let rc = forward!(f, xSync, flags);
    if let (ffi::SQLITE_OK, Some(file)) = (rc, logged(f)) {
        push(file, Op::Sync);
    }
    rc
}

unsafe extern "C" fn x_file_size(f: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    forward!(f, xFileSize, size)
}

unsafe extern "C" fn x_lock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(f, xLock, level)
}

unsafe extern "C" fn x_unlock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(f, xUnlock, level)
}

unsafe extern "C" fn x_check_reserved_lock(f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    forward!(f, xCheckReservedLock, out)
}

unsafe extern "C" fn x_file_control(f: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    forward!(f, xFileControl, op, arg)
}

unsafe extern "C" fn x_sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    methods(f).xSectorSize.map_or(4096, |call| call(real(f)))
}

unsafe extern "C" fn x_device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    methods(f).xDeviceCharacteristics.map_or(0, |call| call(real(f)))
}

unsafe extern "C" fn x_shm_map(
    f: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    match methods(f).xShmMap {
        Some(map) => map(real(f), page, size, extend, out),
        None => ffi::SQLITE_IOERR,
    }
}

unsafe extern "C" fn x_shm_lock(f: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    match methods(f).xShmLock {
        Some(lock) => lock(real(f), offset, n, flags),
        None => ffi::SQLITE_IOERR,
    }
}

unsafe extern "C" fn x_shm_barrier(f: *mut ffi::sqlite3_file) {
    if let Some(barrier) = methods(f).xShmBarrier {
        barrier(real(f));
    }
}

unsafe extern "C" fn x_shm_unmap(f: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    match methods(f).xShmUnmap {
        Some(unmap) => unmap(real(f), delete),
        None => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn x_fetch(f: *mut ffi::sqlite3_file, off: i64, n: c_int, out: *mut *mut c_void) -> c_int {
    match methods(f).xFetch {
        Some(fetch) => fetch(real(f), off, n, out),
        None => {
            // No mapping: SQLite then reads the page with xRead.
            *out = ptr::null_mut();
            ffi::SQLITE_OK
        }
    }
}

unsafe extern "C" fn x_unfetch(f: *mut ffi::sqlite3_file, off: i64, p: *mut c_void) -> c_int {
    match methods(f).xUnfetch {
        Some(unfetch) => unfetch(real(f), off, p),
        None => ffi::SQLITE_OK,
    }
}

static SHIM_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

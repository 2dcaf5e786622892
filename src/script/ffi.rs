//! The C functions sysbench exports to scripts that call it through LuaJIT's
//! `ffi` (`ffi.C.sb_counter_inc(...)`, `ffi.C.sb_rand_uniform(...)`), as
//! third-party suites such as Percona's sysbench-tpcc do.
//!
//! LuaJIT's `ffi.C` resolves names with `dlsym` in the process's global
//! namespace, so these functions have C linkage and unmangled names, and the
//! binary is linked with `-rdynamic` (build.rs) to put them in its dynamic
//! symbol table. `prelude.lua` declares them all ([`CDEF`]) before the
//! user's script runs; a script that declares one again (sysbench-tpcc
//! declares `sb_counter_inc`) is fine, LuaJIT accepts the repeat.
//!
//! The entry points into the run (`sb_more_events`, `sb_event_start`,
//! `sb_event_stop`, `dbbench_event_restart`, `sb_counter_inc`) are the
//! engine's (src/engine.rs), as in sysbench (sysbench.c), so that scripts
//! never depend on the engine; the random numbers are here.
//!
//! Nothing here may unwind: a panic in an `extern "C"` function cannot
//! cross into LuaJIT (the panic hook in main.rs still prints a FATAL line
//! and ends the process with code 3, but the run is lost).

use crate::rand;
use std::ffi::c_char;

/// The declarations `prelude.lua` hands to `ffi.cdef` before the user's
/// script runs: sysbench's names, types and order, then dbbench's own
/// statement fast path (`dbbench_*`, defined in `sql.rs`).
pub const CDEF: &str = r#"
typedef enum {
  SB_CNT_OTHER, SB_CNT_READ, SB_CNT_WRITE, SB_CNT_TRX, SB_CNT_ERROR,
  SB_CNT_RECONNECT, SB_CNT_MAX
} sb_counter_type;
void sb_counter_inc(int thread_id, sb_counter_type type);
bool sb_more_events(int thread_id);
void sb_event_start(int thread_id);
void sb_event_stop(int thread_id);
uint64_t sb_rand_uniform_uint64(void);
double sb_rand_uniform_double(void);
uint32_t sb_rand_default(uint32_t, uint32_t);
uint32_t sb_rand_uniform(uint32_t, uint32_t);
uint32_t sb_rand_gaussian(uint32_t, uint32_t);
uint32_t sb_rand_special(uint32_t, uint32_t);
uint32_t sb_rand_pareto(uint32_t, uint32_t);
uint32_t sb_rand_zipfian(uint32_t, uint32_t);
uint32_t sb_rand_unique(void);
void sb_rand_str(const char *, char *);
uint32_t sb_rand_varstr(char *, uint32_t, uint32_t);
void dbbench_rand_string(const char *fmt, size_t len, char *buf);
int dbbench_stmt_execute(void *stmt);
void dbbench_param_set_number(void *param, double v);
void dbbench_param_set_int64(void *param, int64_t v);
void dbbench_param_set_string(void *param, const char *s, size_t len);
void dbbench_param_set_null(void *param);
bool dbbench_event_restart(int thread_id);
"#;

/// `uint64_t sb_rand_uniform_uint64(void)`.
#[no_mangle]
pub extern "C" fn sb_rand_uniform_uint64() -> u64 {
    rand::next_u64()
}

/// `double sb_rand_uniform_double(void)`: uniform in [0, 1).
#[no_mangle]
pub extern "C" fn sb_rand_uniform_double() -> f64 {
    rand::uniform_double()
}

/// `uint32_t sb_rand_default(uint32_t, uint32_t)`: the `--rand-type` distribution.
#[no_mangle]
pub extern "C" fn sb_rand_default(a: u32, b: u32) -> u32 {
    rand::default(a, b)
}

/// `uint32_t sb_rand_uniform(uint32_t, uint32_t)`.
#[no_mangle]
pub extern "C" fn sb_rand_uniform(a: u32, b: u32) -> u32 {
    rand::uniform(a, b)
}

/// `uint32_t sb_rand_gaussian(uint32_t, uint32_t)`.
#[no_mangle]
pub extern "C" fn sb_rand_gaussian(a: u32, b: u32) -> u32 {
    rand::gaussian(a, b)
}

/// `uint32_t sb_rand_special(uint32_t, uint32_t)`.
#[no_mangle]
pub extern "C" fn sb_rand_special(a: u32, b: u32) -> u32 {
    rand::special(a, b)
}

/// `uint32_t sb_rand_pareto(uint32_t, uint32_t)`.
#[no_mangle]
pub extern "C" fn sb_rand_pareto(a: u32, b: u32) -> u32 {
    rand::pareto(a, b)
}

/// `uint32_t sb_rand_zipfian(uint32_t, uint32_t)` (sysbench 1.1).
#[no_mangle]
pub extern "C" fn sb_rand_zipfian(a: u32, b: u32) -> u32 {
    rand::zipfian(a, b)
}

/// `uint32_t sb_rand_unique(void)`: process-wide non-repeating values.
#[no_mangle]
pub extern "C" fn sb_rand_unique() -> u32 {
    rand::unique()
}

/// `void sb_rand_str(const char *fmt, char *buf)`: writes `strlen(fmt)`
/// bytes to `buf` (`#` → digit, `@` → letter, other bytes copied), without
/// a terminating NUL, as sysbench does.
///
/// # Safety
/// `fmt` must be NUL-terminated and `buf` must hold `strlen(fmt)` bytes;
/// the calling script guarantees both, as with sysbench.
#[no_mangle]
pub unsafe extern "C" fn sb_rand_str(fmt: *const c_char, buf: *mut c_char) {
    if fmt.is_null() || buf.is_null() {
        return;
    }
    // SAFETY: the caller passes a NUL-terminated format (see above).
    let fmt = unsafe { std::ffi::CStr::from_ptr(fmt) }.to_bytes();
    // SAFETY: `buf` holds `fmt.len()` bytes (see above).
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), fmt.len()) };
    rand::fill_string(fmt, out);
}

/// `uint32_t sb_rand_varstr(char *buf, uint32_t min, uint32_t max)`
/// (sysbench 1.1): writes a string of random length in [min, max] to `buf`
/// and returns its length (0 when `min > max`, as nothing fits).
///
/// # Safety
/// `buf` must hold `max` bytes.
#[no_mangle]
pub unsafe extern "C" fn sb_rand_varstr(buf: *mut c_char, min: u32, max: u32) -> u32 {
    if buf.is_null() || min > max {
        return 0;
    }
    let len = rand::uniform(min, max);
    // SAFETY: `buf` holds `max` bytes and `len <= max`.
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len as usize) };
    rand::fill_varstring(out);
    len
}

/// `void dbbench_rand_string(const char *fmt, size_t len, char *buf)`:
/// [`sb_rand_str`] for a format of known length (which may hold NUL
/// bytes), what the prelude's `sysbench.rand.string` uses.
///
/// # Safety
/// `fmt` and `buf` hold `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn dbbench_rand_string(fmt: *const u8, len: usize, buf: *mut c_char) {
    if fmt.is_null() || buf.is_null() {
        return;
    }
    // SAFETY: the caller passes a Lua string, its length and a buffer as long.
    let (fmt, out) =
        unsafe { (std::slice::from_raw_parts(fmt, len), std::slice::from_raw_parts_mut(buf.cast::<u8>(), len)) };
    rand::fill_string(fmt, out);
}

//! Lua scripting: one LuaJIT state per client (and one main state), with the
//! sysbench 1.0 API.
//!
//! A state is built by [`new_state`]: standard libraries (including `ffi`,
//! which third-party suites use), the Rust primitives (`sysbench.rand`, the
//! SQL handles in [`sql`]), the Lua prelude (`prelude.lua`: cmdline tables,
//! hooks, the SQL wrappers and the restart protocol), a module searcher that
//! resolves the built-in workloads, and finally the user's script body.
//! States share nothing but [`Shared`] (read-mostly configuration, driver
//! cache, failure flag).

pub mod bulk;
pub mod ffi;
pub mod native;
pub mod sql;

use crate::collector::ClientStats;
use crate::driver::Driver;
use crate::options::{OptKind, OptionSpec, Options};
use crate::rand::{self, Phase};
use crate::workloads;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

/// The script to run: a built-in workload or a file.
#[derive(Debug, Clone)]
pub struct ScriptSource {
    /// Name as the user gave it (`oltp_read_write` or `./my.lua`).
    pub name: String,
    /// Chunk name for error messages (`oltp_read_write.lua`, `./my.lua`).
    pub chunk_name: String,
    /// The Lua source.
    pub code: String,
    /// Directory of a file script. Not searched by `require` (sysbench
    /// searches the current directory, not the script's); named in the
    /// hint when a module is only there.
    pub dir: Option<String>,
    /// `sysbench.cmdline.script_path`: the name as given (None for stdin),
    /// as sysbench sets it.
    pub script_path: Option<String>,
    /// Found by a module search (sysbench's `require(name)`): the body
    /// gets the name as its `...`, as a required chunk does.
    pub module: Option<String>,
}

impl ScriptSource {
    /// Resolves a test name as sysbench 1.0.20 does: `-` (the script on
    /// stdin), a file path, then a module name searched along
    /// [`lua_path`] (the current directory before the built-in workloads;
    /// the built-ins sit where sysbench's bundled scripts are). dbbench
    /// adds one fallback: a built-in's name with `.lua`.
    pub fn resolve(name: &str) -> Result<ScriptSource, String> {
        if name == "-" {
            let mut code = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut code)
                .map_err(|e| format!("FATAL: Cannot read the script from stdin: {e}"))?;
            return Ok(ScriptSource {
                name: "-".into(),
                chunk_name: "stdin".into(),
                code,
                dir: None,
                script_path: None,
                module: None,
            });
        }
        let file = |path: &str, module: Option<String>| -> Result<ScriptSource, String> {
            let code =
                std::fs::read_to_string(path).map_err(|e| format!("FATAL: Cannot read benchmark '{name}': {e}"))?;
            let dir = Path::new(path).parent().map(|d| {
                if d.as_os_str().is_empty() {
                    ".".into()
                } else {
                    d.display().to_string()
                }
            });
            Ok(ScriptSource {
                name: name.to_string(),
                chunk_name: path.to_string(),
                code,
                dir,
                script_path: Some(name.to_string()),
                module,
            })
        };
        let builtin = |base: &str, code: &str, module: Option<String>| ScriptSource {
            name: base.to_string(),
            chunk_name: format!("{base}.lua"),
            code: code.to_string(),
            dir: None,
            script_path: Some(name.to_string()),
            module,
        };
        if Path::new(name).is_file() {
            return file(name, None);
        }
        let path = lua_path();
        match search_path(&path, name) {
            Ok(Found::File(f)) => return file(&f, Some(name.to_string())),
            Ok(Found::Builtin(code)) => return Ok(builtin(name, code, Some(name.to_string()))),
            Err(_) => {}
        }
        if let Some(base) = name.strip_suffix(".lua") {
            if let Ok(Found::Builtin(code)) = search_path(&path, base) {
                return Ok(builtin(base, code, None));
            }
        }
        let hint = if path.split(';').any(|t| t == BUILTIN_PATH_ENTRY) {
            String::new()
        } else {
            " (LUA_PATH is set without ';;', the default path where the built-in tests are: add ';;' to it)".to_string()
        };
        Err(format!(
            "FATAL: Cannot find benchmark '{name}': no such built-in test, file or module \
             (built-in tests: run 'dbbench --help' for the list){hint}"
        ))
    }
}

/// The entry of [`lua_path`] that stands for dbbench's built-in workloads:
/// where sysbench 1.0.20's path has its bundled scripts
/// (`/usr/share/sysbench/?.lua`), last.
pub const BUILTIN_PATH_ENTRY: &str = "(dbbench built-in)/?.lua";

/// sysbench 1.0.20's default `package.path` (sb_lua.c's
/// `sb_lua_set_paths`, checked against Debian's build), with
/// [`BUILTIN_PATH_ENTRY`] in place of the bundled scripts' directory.
fn default_lua_path(home: Option<&str>) -> String {
    let mut p = String::from("./?.lua;./?/init.lua;./src/lua/?.lua;");
    if let Some(home) = home {
        for t in [
            "/.luarocks/share/lua/5.1/?.lua;",
            "/.luarocks/share/lua/5.1/?/init.lua;",
            "/.luarocks/share/lua/?.lua;",
            "/.luarocks/share/lua/?/init.lua;",
        ] {
            p.push_str(home);
            p.push_str(t);
        }
    }
    p.push_str("/usr/local/share/lua/5.1/?.lua;/usr/share/lua/5.1/?.lua;");
    p.push_str(BUILTIN_PATH_ENTRY);
    p.push(';');
    p
}

/// sysbench 1.0.20's default `package.cpath`, without its own library
/// directory (dbbench has none).
fn default_lua_cpath(home: Option<&str>) -> String {
    let mut p = String::from("./?.so;");
    if let Some(home) = home {
        for t in ["/.luarocks/lib/lua/5.1/?.so;", "/.luarocks/lib/lua/?.so;"] {
            p.push_str(home);
            p.push_str(t);
        }
    }
    p.push_str("/usr/local/lib/lua/5.1/?.so;/usr/lib/lua/5.1/?.so;");
    p
}

/// A path from an environment variable as Lua (and sysbench) reads it:
/// unset means the default; `;;` in it stands for the default.
fn path_from_env(var: Option<String>, default: &str) -> String {
    match var {
        None => default.to_string(),
        Some(v) => v.replace(";;", ";\u{1};").replace('\u{1}', default),
    }
}

fn home() -> Option<String> {
    std::env::var_os("HOME").map(|h| h.to_string_lossy().into_owned())
}

/// `package.path` of every state: sysbench 1.0.20's, honouring `LUA_PATH`.
pub fn lua_path() -> String {
    path_from_env(
        std::env::var_os("LUA_PATH").map(|v| v.to_string_lossy().into_owned()),
        &default_lua_path(home().as_deref()),
    )
}

/// `package.cpath` of every state, honouring `LUA_CPATH`.
pub fn lua_cpath() -> String {
    path_from_env(
        std::env::var_os("LUA_CPATH").map(|v| v.to_string_lossy().into_owned()),
        &default_lua_cpath(home().as_deref()),
    )
}

/// What a module search found.
enum Found {
    /// A file, by the name the path made.
    File(String),
    /// A built-in workload's source.
    Builtin(&'static str),
}

/// Whether `require(name)` would load the built-in module of that name
/// (no file of the user's before it on [`lua_path`]).
pub fn resolves_to_builtin(name: &str) -> bool {
    matches!(search_path(&lua_path(), name), Ok(Found::Builtin(_)))
}

/// Looks `name` up along `path` as Lua's `require` does (`.` in the name
/// becomes `/`, the first openable file wins), the built-ins at
/// [`BUILTIN_PATH_ENTRY`]. Err: Lua's list of places tried.
fn search_path(path: &str, name: &str) -> Result<Found, String> {
    let sub = name.replace('.', "/");
    let mut tried = String::new();
    for template in path.split(';').filter(|t| !t.is_empty()) {
        if template == BUILTIN_PATH_ENTRY {
            match workloads::builtin(name) {
                Some(code) => return Ok(Found::Builtin(code)),
                None => tried.push_str(&format!("\n\tno built-in dbbench module '{name}'")),
            }
            continue;
        }
        let file = template.replace('?', &sub);
        // As Lua's searcher: the first file that opens.
        if std::fs::File::open(&file).is_ok() {
            return Ok(Found::File(file));
        }
        tried.push_str(&format!("\n\tno file '{file}'"));
    }
    Err(tried)
}

/// State shared by all Lua states of one process.
pub struct Shared {
    /// All options; script options are added once the main state declared them.
    pub opts: RwLock<Options>,
    /// The script.
    pub script: ScriptSource,
    /// The command line (argv[0] = program).
    pub argv: Vec<String>,
    /// The command (`prepare`, `run`, ...), if any.
    pub command: Option<String>,
    drivers: Mutex<HashMap<String, Arc<dyn Driver>>>,
    /// A driver was created in this process (the report then has an SQL block).
    pub driver_used: AtomicBool,
    /// The first connection's server version.
    pub server_version: OnceLock<String>,
    /// Set when any client fails: everyone stops at the next event.
    pub failed: AtomicBool,
    /// Why the run could not go on although its errors were ignored (a lost
    /// server not reachable again before `--time`); the first reason.
    pub ended_by_errors: OnceLock<String>,
    /// The script declares no options (sysbench's legacy mode); decided
    /// once by the main state.
    pub legacy: AtomicBool,
    /// No new event (and no reconnect attempt) after this instant; set once
    /// by `run` ([`Shared::set_deadline`]) when `--time` is given.
    deadline: OnceLock<Instant>,
    /// `deadline` on the [`crate::clock`] nanosecond clock, which clients
    /// check on every event.
    deadline_ns: OnceLock<u64>,
}

impl Shared {
    /// A new shared context.
    pub fn new(opts: Options, script: ScriptSource, argv: Vec<String>, command: Option<String>) -> Arc<Shared> {
        Arc::new(Shared {
            opts: RwLock::new(opts),
            script,
            argv,
            command,
            drivers: Mutex::new(HashMap::new()),
            driver_used: AtomicBool::new(false),
            server_version: OnceLock::new(),
            failed: AtomicBool::new(false),
            ended_by_errors: OnceLock::new(),
            legacy: AtomicBool::new(false),
            deadline: OnceLock::new(),
            deadline_ns: OnceLock::new(),
        })
    }

    /// The driver of that name (default `--db-driver`), created on first use.
    pub fn driver(&self, name: Option<&str>) -> Result<Arc<dyn Driver>, String> {
        let opts = self.opts.read().map_err(|_| "options lock poisoned".to_string())?;
        let name = name.map(str::to_string).unwrap_or_else(|| opts.str("db_driver").to_string());
        let mut cache = self.drivers.lock().map_err(|_| "driver lock poisoned".to_string())?;
        if let Some(d) = cache.get(&name) {
            return Ok(d.clone());
        }
        let d = crate::driver::create(&name, &opts)?;
        cache.insert(name, d.clone());
        self.driver_used.store(true, Ordering::Relaxed);
        Ok(d)
    }

    /// The deadline, once `run` has set it.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline.get().copied()
    }

    /// Sets the deadline (once; a later call changes nothing).
    pub fn set_deadline(&self, at: Instant) {
        if self.deadline.set(at).is_ok() {
            let _ = self.deadline_ns.set(crate::clock::ns_of(at));
        }
    }

    /// Whether the run should stop reconnecting / starting events.
    pub fn past_deadline(&self) -> bool {
        self.past_deadline_ns(crate::clock::now_ns())
    }

    /// [`Shared::past_deadline`] at `now_ns` ([`crate::clock::now_ns`]), for
    /// a caller that has just read the clock. Lock-free: clients call it on
    /// every event.
    pub fn past_deadline_ns(&self, now_ns: u64) -> bool {
        self.failed.load(Ordering::Relaxed) || self.deadline_ns.get().is_some_and(|d| now_ns >= *d)
    }
}

/// Per-state context, stored as Lua app data.
pub struct StateCtx {
    /// Process-wide context.
    pub shared: Arc<Shared>,
    /// Where this state's statements are counted.
    pub stats: Arc<ClientStats>,
}

/// Innermost message of a Lua error (without mlua's wrapping and traceback).
/// A bad argument to one of our functions reads as Lua's own (`bad
/// argument #1 to 'update' (number expected, got string)`), not in mlua's
/// terms of Rust types.
pub fn error_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => error_message(cause),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::ExternalError(e) => e.to_string(),
        mlua::Error::WithContext { cause, .. } => error_message(cause),
        mlua::Error::BadArgument { to, pos, cause, .. } => {
            // mlua names a method `Type.method` and counts its `self`; Lua
            // does not count it.
            let (func, pos) = match to.as_deref().map(|t| t.rsplit_once('.')) {
                Some(Some((_, method))) => (Some(method.to_string()), pos.saturating_sub(1)),
                Some(None) => (to.clone(), *pos),
                None => (None, *pos),
            };
            let to = func.map(|f| format!(" to '{f}'")).unwrap_or_default();
            format!("bad argument #{pos}{to} ({})", error_message(cause))
        }
        mlua::Error::FromLuaConversionError { from, to, .. } => format!("{} expected, got {from}", lua_type_of(to)),
        other => other.to_string(),
    }
}

/// The Lua type a Rust type converts from, for messages.
fn lua_type_of(rust: &str) -> &'static str {
    let t = rust.trim_start_matches("Option<").trim_end_matches('>');
    match t {
        "f32" | "f64" | "i8" | "i16" | "i32" | "i64" | "isize" | "u8" | "u16" | "u32" | "u64" | "usize" => "number",
        "String" | "BString" | "&str" | "str" | "CString" | "OsString" | "PathBuf" => "string",
        "bool" => "boolean",
        "Table" => "table",
        "Function" => "function",
        _ => "a value of another type",
    }
}

/// Registry name of the prelude's protected call (`sysbench._pcall`).
const PCALL_KEY: &str = "dbbench.pcall";

/// Calls a script function as sysbench reports its errors: Ok(its first
/// result), or Err(the error as one `file:line: message` line naming the
/// script's own line, plus a traceback of the script's frames when the
/// error went through more than one). The text is built by the prelude's
/// message handler where the error was raised, so the stack is intact:
/// errors of C and Rust functions and error objects (tables, nil) get the
/// script line too, and nothing prints as `table: 0x...`.
pub fn call(lua: &Lua, f: &Function, args: impl mlua::IntoLuaMulti) -> Result<Value, String> {
    let pcall: Function =
        lua.named_registry_value(PCALL_KEY).map_err(|e| format!("the Lua state has no error handler: {e}"))?;
    let mut args = args.into_lua_multi(lua).map_err(|e| error_message(&e))?;
    args.push_front(Value::Function(f.clone()));
    let mut out = pcall.call::<mlua::MultiValue>(args).map_err(|e| error_message(&e))?;
    let ok = matches!(out.pop_front(), Some(Value::Boolean(true)));
    let first = out.pop_front().unwrap_or(Value::Nil);
    if ok {
        return Ok(first);
    }
    Err(match first {
        Value::String(s) => s.to_string_lossy(),
        other => other.to_string().unwrap_or_default(),
    })
}

/// Builds a Lua state for `tid` and runs the script body in it.
pub fn new_state(shared: &Arc<Shared>, phase: Phase, tid: u32, stats: Arc<ClientStats>) -> Result<Lua, String> {
    rand::seed_thread(phase, tid);
    // SAFETY: `ffi` must be available because sysbench scripts (and
    // third-party suites) use it; scripts are trusted code the user runs.
    let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::default()) };
    zero_extend_cfunction_results(&lua)
        .map_err(|e| format!("FATAL: cannot initialise the Lua state: {}", error_message(&e)))?;
    lua.set_app_data(StateCtx { shared: shared.clone(), stats });
    install_api(&lua, shared, tid)
        .map_err(|e| format!("FATAL: cannot initialise the Lua API: {}", error_message(&e)))?;
    let body = lua
        .load(&shared.script.code)
        .set_name(format!("@{}", shared.script.chunk_name))
        .into_function()
        .map_err(|e| format!("FATAL: {}", error_message(&e)))?;
    call(&lua, &body, shared.script.module.as_deref()).map_err(|e| format!("FATAL: {e}"))?;
    // What parsing the prelude, the script and its modules left behind
    // (the parser's string anchors and scratch tables, about a third of a
    // new state) is garbage now; LuaJIT would keep it until the state
    // doubled. At thousands of clients every state is built before the
    // first one runs its first event, so it all counted in the peak
    // (docs/performance.md, "Memory per client").
    lua.gc_collect().map_err(|e| format!("FATAL: {}", error_message(&e)))?;
    Ok(lua)
}

/// Makes LuaJIT call every Lua C function of `lua`'s state through
/// [`call_cfunction`] (LuaJIT's `LUAJIT_MODE_WRAPCFUNC`).
///
/// Why: after a `lua_CFunction` returns, LuaJIT's x64 interpreter (GC64,
/// `BC_FUNCC` in vm_x64.dasc) computes the result offset with the whole of
/// `rax` (`lea RA, [BASE+RD*8]`), but the C ABI defines only its low 32 bits
/// (`eax`, the `int`). C compilers happen to leave the upper half zero;
/// rustc does not always: in the dev build, each of mlua's userdata `__gc`
/// functions (`destroy_userdata_storage::<T>`) returns 1 with a stack
/// address's upper half in `rax` (`lea 0x8(%rsp),%rax; and
/// $0xffffffff00000000,%rax; inc %rax`), and the first finalized userdata
/// crashed LuaJIT in `lj_vm_return`. Every call through the wrapper returns
/// the count zero-extended, whatever the callee left in the upper half.
fn zero_extend_cfunction_results(lua: &Lua) -> mlua::Result<()> {
    use mlua::ffi;
    extern "C" {
        fn luaJIT_setmode(l: *mut ffi::lua_State, idx: std::ffi::c_int, mode: std::ffi::c_int) -> std::ffi::c_int;
    }
    const LUAJIT_MODE_WRAPCFUNC: std::ffi::c_int = 0x10;
    const LUAJIT_MODE_ON: std::ffi::c_int = 0x0100;

    /// LuaJIT's C function wrapper (`int wrapf(lua_State *, lua_CFunction)`,
    /// called only from `BC_FUNCCW`): returns `f`'s result count as a
    /// 64-bit value so that all of `rax` holds it. Lua errors raised in `f`
    /// unwind through it (hence C-unwind; nothing to drop here).
    unsafe extern "C-unwind" fn call_cfunction(l: *mut ffi::lua_State, f: ffi::lua_CFunction) -> u64 {
        // SAFETY: LuaJIT passes the function it was about to call, and its state.
        (unsafe { f(l) }) as u32 as u64
    }

    // SAFETY: pushes a light userdata, switches the mode (which reads it
    // at the top of the stack) and pops it again.
    let ok: bool = unsafe {
        lua.exec_raw((), |state| {
            ffi::lua_pushlightuserdata(state, call_cfunction as *mut std::ffi::c_void);
            let ok = luaJIT_setmode(state, -1, LUAJIT_MODE_WRAPCFUNC | LUAJIT_MODE_ON);
            ffi::lua_pop(state, 1);
            ffi::lua_pushboolean(state, ok);
        })?
    };
    if ok {
        Ok(())
    } else {
        Err(mlua::Error::runtime("LuaJIT refused the C function wrapper mode"))
    }
}

fn install_api(lua: &Lua, shared: &Arc<Shared>, tid: u32) -> mlua::Result<()> {
    let g = lua.globals();
    let sb = lua.create_table()?;
    sb.set("tid", tid)?;
    sb.set("version", crate::SYSBENCH_COMPAT_VERSION)?;
    sb.set("version_string", format!("sysbench {} (dbbench {})", crate::SYSBENCH_COMPAT_VERSION, crate::VERSION))?;
    sb.set("rand", rand_table(lua)?)?;
    sb.set("histogram", histogram_table(lua)?)?;
    sb.set("_sql", sql::raw_table(lua)?)?;
    sb.set("_cdef", ffi::CDEF)?;
    sb.set(
        "_print_test_options",
        lua.create_function(|lua, ()| {
            if let Ok(Some(mut specs)) = declared_options(lua) {
                specs.sort_by(|a, b| a.name.cmp(&b.name));
                print!("{}", crate::cli::format_option_list(&specs));
            }
            Ok(())
        })?,
    )?;
    sb.set(
        "_bulk_rows",
        lua.create_function(|_, n: u64| {
            crate::progress::add_rows(n);
            Ok(())
        })?,
    )?;
    let cmdline = lua.create_table()?;
    let argv = lua.create_table()?;
    for (i, a) in shared.argv.iter().enumerate() {
        argv.raw_set(i as i64, a.as_str())?;
    }
    cmdline.set("argv", argv)?;
    cmdline.set("command", shared.command.as_deref())?;
    cmdline.set("script_path", shared.script.script_path.as_deref())?;
    sb.set("cmdline", cmdline)?;
    g.set("sysbench", &sb)?;

    // Route Lua output through Rust's stdout so it interleaves correctly
    // with the engine's own lines.
    let print = lua.create_function(|_, args: mlua::Variadic<Value>| {
        crate::progress::clear_line();
        let mut out = std::io::stdout().lock();
        for (i, v) in args.iter().enumerate() {
            if i > 0 {
                let _ = out.write_all(b"\t");
            }
            let _ = out.write_all(&lua_tostring(v));
        }
        let _ = out.write_all(b"\n");
        Ok(())
    })?;
    g.set("print", print)?;
    let write = lua.create_function(|_, args: mlua::Variadic<Value>| {
        let mut out = std::io::stdout().lock();
        for v in args.iter() {
            let _ = out.write_all(&lua_tostring(v));
        }
        Ok(())
    })?;
    let io: Table = g.get("io")?;
    io.set("write", write)?;

    sb.set(
        "_error_text",
        lua.create_function(|_, v: Value| {
            Ok(match v {
                Value::Error(e) => error_message(&e),
                other => other.to_string().unwrap_or_else(|_| format!("error object is a {}", other.type_name())),
            })
        })?,
    )?;
    lua.load(include_str!("prelude.lua")).set_name("@dbbench/prelude.lua").exec()?;
    // The protected call of `call`, kept where a script cannot replace it.
    let pcall: Function = sb.get("_pcall")?;
    sb.set("_pcall", Value::Nil)?;
    lua.set_named_registry_value(PCALL_KEY, pcall)?;

    // Modules: sysbench 1.0.20's search path (see `lua_path`), with the
    // built-in workloads where sysbench's bundled scripts are. Lua's own
    // file searcher is replaced by one that knows that entry; a last one
    // only explains a module that is in the script's directory alone.
    let package: Table = g.get("package")?;
    package.set("path", lua_path())?;
    package.set("cpath", lua_cpath())?;
    let loaders: Table = package.get("loaders")?;
    let searcher = lua.create_function(|lua, name: String| {
        let path: String = lua.globals().get::<Table>("package")?.get("path")?;
        match search_path(&path, &name) {
            Ok(Found::Builtin(code)) => {
                Ok(Value::Function(lua.load(code).set_name(format!("@{name}.lua")).into_function()?))
            }
            Ok(Found::File(file)) => {
                let code = std::fs::read(&file).map_err(|e| {
                    mlua::Error::runtime(format!(
                        "error loading module '{name}' from file '{file}':\n\tcannot read {file}: {e}"
                    ))
                })?;
                match lua.load(code).set_name(format!("@{file}")).into_function() {
                    Ok(f) => Ok(Value::Function(f)),
                    Err(e) => Err(mlua::Error::runtime(format!(
                        "error loading module '{name}' from file '{file}':\n\t{}",
                        error_message(&e)
                    ))),
                }
            }
            Err(tried) => Ok(Value::String(lua.create_string(tried)?)),
        }
    })?;
    loaders.raw_set(2, searcher)?;
    let script_dir = shared.script.dir.clone();
    let hint = lua.create_function(move |lua, name: String| {
        let Some(dir) = &script_dir else { return Ok(Value::Nil) };
        let file = format!("{dir}/{}.lua", name.replace('.', "/"));
        let here = std::fs::canonicalize(dir).ok() == std::env::current_dir().ok();
        if here || !Path::new(&file).is_file() {
            return Ok(Value::Nil);
        }
        Ok(Value::String(lua.create_string(format!(
            "\n\t{file} is not searched: as sysbench, dbbench looks in the current directory, not the \
             script's; run from {dir}, or set LUA_PATH='{dir}/?.lua;;'"
        ))?))
    })?;
    loaders.raw_set(loaders.raw_len() + 1, hint)?;
    Ok(())
}

fn lua_tostring(v: &Value) -> Vec<u8> {
    match v {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Nil => b"nil".to_vec(),
        Value::Boolean(b) => b.to_string().into_bytes(),
        Value::Integer(i) => i.to_string().into_bytes(),
        Value::Number(n) => format_lua_number(*n).into_bytes(),
        other => other.to_string().unwrap_or_default().into_bytes(),
    }
}

/// Formats a number as Lua prints it: integers without a decimal point,
/// others in their shortest exact form (Lua 5.1 uses `%.14g`, which agrees
/// for the values option defaults and parameters take).
pub fn format_lua_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// `sysbench.rand`: the functions are defined in `prelude.lua` over the C
/// symbols of [`ffi`]; only sysbench 0.5's `sb_rand_uniq` helper is here.
fn rand_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "_unique_in",
        lua.create_function(|_, (a, b): (Option<f64>, Option<f64>)| {
            let bound = |x: f64| x.clamp(0.0, u32::MAX as f64) as u32;
            Ok(rand::unique_in(bound(a.unwrap_or(0.0)), bound(b.unwrap_or(u32::MAX as f64))) as f64)
        })?,
    )?;
    Ok(t)
}

/// A script's histogram (`sysbench.histogram.new(size, min, max)`): values
/// in milliseconds, as the latency histogram, kept in the same HDR
/// histogram (1 µs to 1 h, 3 significant digits), so `size`, `min` and
/// `max` need not bound anything and are accepted for compatibility.
struct ScriptHistogram(crate::collector::LatencyAcc);

impl mlua::UserData for ScriptHistogram {
    fn add_methods<M: mlua::UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut("update", |_, this, v: f64| {
            // ms → ns; negative and NaN values count as the smallest.
            this.0.record((v * 1e6).max(0.0) as u64);
            Ok(())
        });
        m.add_method("print", |_, this, ()| {
            crate::progress::clear_line();
            crate::output::text::histogram_table(&this.0);
            Ok(())
        });
    }
}

fn histogram_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "new",
        lua.create_function(|_, (_size, _min, _max): (Option<f64>, Option<f64>, Option<f64>)| {
            Ok(ScriptHistogram(crate::collector::LatencyAcc::default()))
        })?,
    )?;
    Ok(t)
}

/// Exports the options into a state after its body ran, as sysbench does:
/// `sysbench.opt`, and in legacy mode also the globals.
pub fn export(lua: &Lua, opts: &Options, legacy: bool) -> mlua::Result<()> {
    export_options(lua, opts)?;
    if legacy {
        export_legacy_globals(lua)?;
    }
    Ok(())
}

/// Sets `sysbench.opt` from the options.
fn export_options(lua: &Lua, opts: &Options) -> mlua::Result<()> {
    let t = lua.create_table()?;
    for spec in opts.specs() {
        let raw = opts.raw(&spec.name);
        if spec.name == "percentile" {
            // sysbench's `percentile` is one number, and scripts format it
            // as such (`lat (ms,%u%%)`): export the first of our list (0 =
            // disabled); the whole list is `sysbench.opt.percentiles`.
            let list = opts.list("percentile");
            let first = list.first().and_then(|p| p.parse::<f64>().ok()).unwrap_or(0.0);
            t.set("percentile", first)?;
            let all = lua.create_table()?;
            for (i, p) in list.iter().filter_map(|p| p.parse::<f64>().ok()).filter(|p| *p > 0.0).enumerate() {
                all.raw_set(i + 1, p)?;
            }
            t.set("percentiles", all)?;
            continue;
        }
        let v: Value = match spec.kind {
            OptKind::Bool => Value::Boolean(opts.bool(&spec.name)),
            OptKind::Int | OptKind::Size => Value::Number(opts.int(&spec.name) as f64),
            OptKind::Double => Value::Number(opts.double(&spec.name)),
            OptKind::String => Value::String(lua.create_string(raw)?),
            OptKind::List => {
                let l = lua.create_table()?;
                for (i, item) in opts.list(&spec.name).iter().enumerate() {
                    l.raw_set(i + 1, item.as_str())?;
                }
                Value::Table(l)
            }
            OptKind::File => Value::Nil,
        };
        t.set(spec.name.as_str(), v)?;
    }
    let sb: Table = lua.globals().get("sysbench")?;
    sb.set("opt", t)
}

/// Legacy mode (a script that declares no options): options are also
/// globals, as strings for undeclared ones; existing functions are kept.
fn export_legacy_globals(lua: &Lua) -> mlua::Result<()> {
    let g = lua.globals();
    let sb: Table = g.get("sysbench")?;
    let opt: Table = sb.get("opt")?;
    for pair in opt.pairs::<String, Value>() {
        let (k, v) = pair?;
        if !matches!(g.get::<Value>(k.as_str())?, Value::Function(_)) {
            g.set(k, v)?;
        }
    }
    Ok(())
}

/// Reads `sysbench.cmdline.options` after the body ran: `None` when the
/// script declares none (legacy mode).
pub fn declared_options(lua: &Lua) -> Result<Option<Vec<OptionSpec>>, String> {
    let read = || -> mlua::Result<Option<Vec<OptionSpec>>> {
        let sb: Table = lua.globals().get("sysbench")?;
        let cmdline: Table = sb.get("cmdline")?;
        let Value::Table(decl) = cmdline.get::<Value>("options")? else { return Ok(None) };
        let mut specs = Vec::new();
        for pair in decl.pairs::<String, Table>() {
            let (name, d) = pair?;
            let description: String = d.get::<Option<String>>(1)?.unwrap_or_default();
            let default: Value = d.get(2)?;
            let explicit: Option<i64> = d.get(3)?;
            let (kind, default_text) = match &default {
                Value::Boolean(b) => (OptKind::Bool, if *b { "on" } else { "off" }.to_string()),
                Value::Integer(i) => (OptKind::Double, i.to_string()),
                Value::Number(n) => (OptKind::Double, format_lua_number(*n)),
                Value::String(s) => (OptKind::String, s.to_string_lossy()),
                Value::Table(t) => {
                    let items: Vec<String> = t
                        .sequence_values::<Value>()
                        .filter_map(|v| v.ok())
                        .map(|v| String::from_utf8_lossy(&lua_tostring(&v)).into_owned())
                        .collect();
                    (OptKind::List, items.join(","))
                }
                _ => (OptKind::String, String::new()),
            };
            let kind = explicit.and_then(OptKind::from_sysbench_code).unwrap_or(kind);
            specs.push(OptionSpec { name: name.replace('-', "_"), kind, default: default_text, description });
        }
        Ok(Some(specs))
    };
    read().map_err(|e| format!("FATAL: invalid sysbench.cmdline.options in {}: {}", "script", error_message(&e)))
}

/// Checks the values of the options a script gave ranges for in
/// `sysbench.cmdline.option_ranges = { name = {min, max}, ... }` (a dbbench
/// addition that sysbench ignores; the built-in workloads use it): each
/// must be a whole number from min to max. Checked once, in the main
/// state, before any command, so a bad value is one line even for a
/// parallel `prepare`.
pub fn check_option_ranges(lua: &Lua, opts: &Options) -> Result<(), String> {
    let ranges = || -> mlua::Result<Vec<(String, f64, f64)>> {
        let sb: Table = lua.globals().get("sysbench")?;
        let cmdline: Table = sb.get("cmdline")?;
        let Value::Table(t) = cmdline.get::<Value>("option_ranges")? else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for pair in t.pairs::<String, Table>() {
            let (name, r) = pair?;
            out.push((name.replace('-', "_"), r.get::<f64>(1)?, r.get::<f64>(2)?));
        }
        Ok(out)
    };
    let ranges =
        ranges().map_err(|e| format!("FATAL: invalid sysbench.cmdline.option_ranges: {}", error_message(&e)))?;
    for (name, min, max) in ranges {
        if opts.spec(&name).is_none() {
            continue;
        }
        let raw = opts.raw(&name);
        let v = crate::options::parse_double(raw).unwrap_or(f64::NAN);
        if !(v.fract() == 0.0 && (min..=max).contains(&v)) {
            return Err(format!(
                "FATAL: Invalid value for --{}: {raw}. Use a whole number from {} to {}.",
                name.replace('_', "-"),
                format_lua_number(min),
                format_lua_number(max)
            ));
        }
    }
    Ok(())
}

/// A global function of the state, if the script defines it.
pub fn global_fn(lua: &Lua, name: &str) -> Option<Function> {
    match lua.globals().get::<Value>(name) {
        Ok(Value::Function(f)) => Some(f),
        _ => None,
    }
}

/// Ends what the script's report formatters left open (the JSON array of
/// `sysbench.report_json`); called once the last report was printed.
pub fn close_reports(lua: &Lua) {
    let close = lua.globals().get::<Table>("sysbench").and_then(|sb| sb.get::<Function>("_close_reports"));
    if let Ok(f) = close {
        if let Err(e) = f.call::<()>(()) {
            crate::log::fatal(&format!("closing the script's reports failed: {}", error_message(&e)));
        }
    }
}

/// A hook from `sysbench.hooks`, if set.
pub fn hook(lua: &Lua, name: &str) -> Option<Function> {
    let sb: Table = lua.globals().get("sysbench").ok()?;
    let hooks: Table = sb.get("hooks").ok()?;
    match hooks.get::<Value>(name) {
        Ok(Value::Function(f)) => Some(f),
        _ => None,
    }
}

/// `sysbench.cmdline.commands[name]`: (function, parallel?).
pub fn custom_command(lua: &Lua, name: &str) -> Option<(Function, bool)> {
    let sb: Table = lua.globals().get("sysbench").ok()?;
    let cmdline: Table = sb.get("cmdline").ok()?;
    let cmds: Table = cmdline.get("commands").ok()?;
    let c: Table = cmds.get(name).ok()?;
    let f: Function = c.get(1).ok()?;
    let parallel = matches!(c.get::<Value>(2), Ok(Value::Boolean(true)));
    Some((f, parallel))
}

//! Build script: export the binary's C entry points (`sb_counter_inc`,
//! `sb_rand_uniform`, ...; src/script/ffi.rs) in its dynamic symbol table,
//! where LuaJIT's `ffi.C` looks them up with dlsym.
fn main() {
    println!("cargo:rustc-link-arg=-rdynamic");
}

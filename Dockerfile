# The container image `dbbench k8s` runs (docs/scale-out.md, "The image").
#
#   docker build -t REGISTRY/dbbench:TAG .      (from the repository's root)
#   docker push REGISTRY/dbbench:TAG
#   dbbench k8s --image=REGISTRY/dbbench:TAG ...
#
# Not a static musl binary, on purpose: the Lua scripts reach dbbench's C
# functions through LuaJIT's ffi.C, which looks them up with dlsym in the
# binary's own dynamic symbol table (build.rs links with -rdynamic); a
# static musl binary has no dynamic linker to answer, and it would also
# lose the glibc-only allocator front end (src/alloc.rs), so a shard would
# not cost what the same run costs on a host. Instead: the glibc build on
# a minimal Debian of the same release (glibc, libgcc_s, libz: what `ldd`
# lists), no shell tools added, running as an unprivileged uid.

# The Rust of Cargo.toml's rust-version, on Debian 12 (the runtime's glibc).
FROM rust:1.88-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked \
 && install -m 0755 target/release/dbbench /usr/local/bin/dbbench \
 && /usr/local/bin/dbbench --version

FROM debian:bookworm-slim
COPY --from=build /usr/local/bin/dbbench /usr/local/bin/dbbench
# The pods of `dbbench k8s` run as this uid (runAsNonRoot); nothing in the
# image needs another.
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/dbbench"]

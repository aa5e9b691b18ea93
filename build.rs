//! Link options of the `troupe` binary.
//!
//! Relative relocations are packed (`DT_RELR`) when the binary is built for the glibc
//! it is built on and that glibc reads packed relocations (2.36 and later): the loader
//! then reads a table of about 10 KB at every start instead of 38,000 entries of 24
//! bytes (900 KB). Anywhere else nothing changes. A linker that does not know the
//! option warns and ignores it.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    if native
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && glibc_version().is_some_and(|v| v >= (2, 36))
    {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The version of this machine's glibc, from the first line of `ldd --version`
/// ("ldd (Debian GLIBC 2.36-9) 2.36").
fn glibc_version() -> Option<(u32, u32)> {
    let out = Command::new("ldd").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next()?;
    if !first.contains("GLIBC") && !first.contains("GNU libc") {
        return None;
    }
    let version = first.split_whitespace().last()?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

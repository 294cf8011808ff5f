// SPDX-License-Identifier: Apache-2.0
//! Links libmemguard.
//!
//! Where: pkg-config (the program, as `$PKG_CONFIG` or `pkg-config`; the
//! pkg-config crate is not vendored here) for an install, or a meson build
//! tree with `PKG_CONFIG_PATH=BUILD/meson-uninstalled`; or, without
//! pkg-config, `MEMGUARD_LIB_DIR` (the library's directory) and
//! `MEMGUARD_INCLUDE_DIR` (the headers', for tests/layout.rs).
//!
//! How: the shared library by default; with the `static` feature or
//! `MEMGUARD_STATIC=1`, libmemguard.a and what it needs
//! (`pkg-config --static --libs`: threads, and libseccomp where the library
//! was built with it; with `MEMGUARD_LIB_DIR`, the libraries named in
//! `MEMGUARD_STATIC_LIBS`, default `pthread seccomp`).
//!
//! RUNPATH: only with `MEMGUARD_RPATH=1` (the in-tree tests,
//! bindings/run-tests), and only for the shared library: the library's
//! directories go in the RUNPATH of this crate's tests, and to dependents as
//! `DEP_MEMGUARD_RPATH` (cargo passes a link argument to the package's own
//! binaries only, so cgroupguard's build.rs puts it in its own).
//!
//! To dependents (`links = "memguard"`): `DEP_MEMGUARD_LIBDIR`,
//! `DEP_MEMGUARD_INCLUDE` (directories, `:`-separated), `DEP_MEMGUARD_STATIC`
//! (`0` or `1`) and `DEP_MEMGUARD_RPATH` (empty unless asked for).
use std::env;
use std::process::Command;

fn flag(name: &str) -> bool {
    println!("cargo:rerun-if-env-changed={name}");
    matches!(env::var(name).as_deref(), Ok("1" | "yes" | "true" | "on"))
}

fn var(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    env::var(name).ok().filter(|v| !v.is_empty())
}

fn pkg_config(args: &[&str]) -> String {
    let prog = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&prog)
        .args(args)
        .arg("memguard")
        .output()
        .unwrap_or_else(|e| panic!("memguard-sys: cannot run {prog}: {e} (or set MEMGUARD_LIB_DIR)"));
    if !out.status.success() {
        panic!(
            "memguard-sys: {prog} {} memguard failed: {}(set PKG_CONFIG_PATH, e.g. to BUILD/meson-uninstalled, or MEMGUARD_LIB_DIR)",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("memguard-sys: pkg-config's output is not UTF-8")
}

/// What to link: search directories and libraries, memguard's own first.
#[derive(Default)]
struct Link {
    dirs: Vec<String>,
    libs: Vec<String>,
    include: Vec<String>,
    cflags: String,
}

fn from_pkg_config(stat: bool) -> Link {
    let mut l = Link::default();
    let libs = if stat {
        pkg_config(&["--static", "--libs"])
    } else {
        pkg_config(&["--libs"])
    };
    for w in libs.split_whitespace() {
        if let Some(dir) = w.strip_prefix("-L") {
            l.dirs.push(dir.into());
        } else if let Some(lib) = w.strip_prefix("-l") {
            l.libs.push(lib.into());
        } else if w == "-pthread" {
            l.libs.push("pthread".into());
        } else {
            println!("cargo:warning=memguard-sys: pkg-config's {w} ignored");
        }
    }
    l.cflags = pkg_config(&["--cflags"]).trim().to_string();
    l.include = l
        .cflags
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("-I"))
        .map(String::from)
        .collect();
    l
}

fn from_env(dir: String, stat: bool) -> Link {
    let mut l = Link {
        dirs: vec![dir],
        libs: vec!["memguard".into()],
        ..Default::default()
    };
    if stat {
        let deps = var("MEMGUARD_STATIC_LIBS").unwrap_or_else(|| "pthread seccomp".into());
        l.libs.extend(deps.split_whitespace().map(String::from));
    }
    if let Some(inc) = var("MEMGUARD_INCLUDE_DIR") {
        l.cflags = format!("-I{inc}");
        l.include.push(inc);
    }
    l
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    let stat = env::var_os("CARGO_FEATURE_STATIC").is_some() | flag("MEMGUARD_STATIC");
    let rpath = flag("MEMGUARD_RPATH") && !stat;
    let l = match var("MEMGUARD_LIB_DIR") {
        Some(dir) => from_env(dir, stat),
        None => from_pkg_config(stat),
    };
    for d in &l.dirs {
        println!("cargo:rustc-link-search=native={d}");
        if rpath {
            // This crate's own tests (tests/layout.rs).
            println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
        }
    }
    for lib in &l.libs {
        if stat && lib == "memguard" {
            println!("cargo:rustc-link-lib=static=memguard");
        } else {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
    // For tests/layout.rs, which compiles a C program against the header.
    println!("cargo:rustc-env=MEMGUARD_SYS_CFLAGS={}", l.cflags);
    // Metadata for dependents, as DEP_MEMGUARD_*.
    println!("cargo:libdir={}", l.dirs.join(":"));
    println!("cargo:include={}", l.include.join(":"));
    println!("cargo:static={}", u8::from(stat));
    println!("cargo:rpath={}", if rpath { l.dirs.join(":") } else { String::new() });
}

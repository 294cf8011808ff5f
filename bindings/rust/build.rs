// SPDX-License-Identifier: Apache-2.0
//! Finds libmemguard with pkg-config (the program, not a crate): installed,
//! or a meson build tree with PKG_CONFIG_PATH=BUILD/meson-uninstalled.  The
//! library's directory is also put in the binaries' RUNPATH, so tests and
//! examples run against a build tree without LD_LIBRARY_PATH.
use std::process::Command;

fn pkg_config(arg: &str) -> String {
    let out = Command::new(std::env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args([arg, "memguard"])
        .output()
        .expect("cgroupguard: cannot run pkg-config");
    if !out.status.success() {
        panic!(
            "cgroupguard: pkg-config {arg} memguard failed: {}(set PKG_CONFIG_PATH, e.g. to BUILD/meson-uninstalled)",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).unwrap()
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    for w in pkg_config("--libs").split_whitespace() {
        if let Some(dir) = w.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        } else if let Some(lib) = w.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
    // For tests/layout.rs, which compiles a C program against the header.
    println!("cargo:rustc-env=CGROUPGUARD_CFLAGS={}", pkg_config("--cflags").trim());
}

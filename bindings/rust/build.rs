// SPDX-License-Identifier: Apache-2.0
//! Linking is memguard-sys's.  This only puts the library's directory in the
//! RUNPATH of this crate's tests and examples when memguard-sys was asked to
//! (`MEMGUARD_RPATH=1`, the in-tree tests): cargo gives a dependency's link
//! arguments to none of the dependent's binaries.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_MEMGUARD_RPATH");
    println!("cargo:rerun-if-env-changed=MEMGUARD_RPATH");
    for d in std::env::var("DEP_MEMGUARD_RPATH").unwrap_or_default().split(':') {
        if !d.is_empty() {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
        }
    }
}

//! Link against the system rdma-core libraries. Bindings are pre-generated (src/sys.rs, committed;
//! `just bindings` regenerates them), so no bindgen or libclang runs at build time.

fn main() {
    println!("cargo:rustc-link-lib=dylib=ibverbs");
    println!("cargo:rustc-link-lib=dylib=rdmacm");
    println!("cargo:rerun-if-changed=build.rs");
}

//! VM harness for rpcrdma-rig (`just interop`): builds Debian kernel and rootfs images, boots a
//! server and a client guest per kernel on a private virtual wire with soft-RoCE, runs suites
//! described as data (`vm-images/suites/*.toml`), and reports per kernel × suite × case.
//!
//! Code map: [`matrix`] (kernel matrix) → [`apt`] (private apt, checksums) → [`images`] (rootfs,
//! initramfs, module sets in the [`cache`]; source-built kernels in [`kbuild`]) → [`runner`] (qemu pair, 9p share, [`process`]
//! groups) → [`results`] (RESULT/STEP lines, dmesg scan) → [`expect`] (mutants that must be caught,
//! known failures) → [`report`] (table, JSON, JUnit) → [`html`] (the run page, `index.html`).
//!
//! Architecture Invariant: nothing here touches the host's apt state or network; the only
//! network is the unix-socket wire between the two guests.
#![forbid(unsafe_code)]

pub mod apt;
pub mod bench;
pub mod bisect;
pub mod cache;
pub mod capture;
pub mod changelog;
pub mod expect;
pub mod findings;
pub mod fuzz_wire;
pub mod guest;
pub mod host;
pub mod html;
pub mod images;
pub mod kbuild;
pub mod kcidb;
pub mod kmod;
pub mod known;
pub mod matrix;
pub mod mbox;
pub mod process;
pub mod progress;
pub mod report;
pub mod results;
pub mod retry;
pub mod runner;
pub mod runs;
pub mod saved_guests;
pub mod shard;
pub mod snapshots;
pub mod suite;
pub mod wire;

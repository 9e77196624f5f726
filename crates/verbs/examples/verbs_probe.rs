//! List RDMA devices, ports and GIDs, and check that rdma_cm is usable. Exits non-zero with the
//! "load rdma_rxe" hint on a machine without RDMA (e.g. the build host).

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut healthy = true;
    match verbs::probe() {
        Ok(devices) => devices.iter().for_each(|device| print!("{device}")),
        Err(error) => {
            eprintln!("verbs_probe: {error}");
            healthy = false;
        }
    }
    // Devices can exist while rdma_cm cannot (rdma_ucm not loaded): check it separately.
    match verbs::EventChannel::new() {
        Ok(channel) => println!("rdma_cm: event channel open (fd {})", channel.fd()),
        Err(error) => {
            eprintln!("verbs_probe: {error}");
            healthy = false;
        }
    }
    if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

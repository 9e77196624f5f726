//! The seam between the executor and a transport: the [`Target`] trait, and target specs as
//! given on the command line (`sim:linux-2026`, `sim:classic`, `model:linux-6.1`, `ADDR:PORT`).
//!
//! A target is one requester-side RDMA connection to the responder under test. The simulated
//! target ([`crate::sim_target`]) implements it on the host; the rdma target (rdma_cm over
//! crates/verbs, feature `rdma`, run inside the interop guests) implements the same operations.

use std::fmt;
use std::time::Duration;

use wire::svcrdma::{KernelModel, Profile};

use crate::case::{Region, RegionKey};
use crate::rules::{kernel_model, profile_names};

/// What a target reports while the executor waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetEvent {
    /// A Send from the responder landed in one of our Receives.
    Message(Vec<u8>),
    /// The connection is gone (DISCONNECTED, or our QP went to error).
    Disconnected,
    /// Nothing arrived before the deadline (the simulator: nothing left to run).
    Quiet,
}

/// How long the executor waits for one event. The simulator counts scheduler steps (so runs
/// stay deterministic); a real target uses the wall-clock part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    pub sim_steps: u64,
    pub wall: Duration,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline {
            sim_steps: 20_000,
            wall: Duration::from_secs(2),
        }
    }
}

/// A target failed in a way that stops the run (not an outcome of a case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// The target kind exists but cannot run here (e.g. rdma without the verbs driver).
    Unavailable(String),
    /// Connecting failed (rdma_cm REJECTED, unreachable, ...).
    Connect(String),
    /// Registration or posting failed locally.
    Local(String),
    /// The spec names no known target.
    BadSpec(String),
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Unavailable(why) => write!(f, "target unavailable: {why}"),
            TargetError::Connect(why) => write!(f, "connect failed: {why}"),
            TargetError::Local(why) => write!(f, "local error: {why}"),
            TargetError::BadSpec(why) => write!(f, "bad target spec: {why}"),
        }
    }
}

impl std::error::Error for TargetError {}

/// One requester-side connection to a responder under test.
pub trait Target {
    /// Stable name for reports (the spec it was opened from).
    fn name(&self) -> String;
    /// (Re)connect, offering `private_data` in the CM connect request (RFC 8797 §4);
    /// `None` sends none. Any previous connection is torn down first.
    fn connect(&mut self, private_data: Option<&[u8]>) -> Result<(), TargetError>;
    /// Whether the connection is up as far as this side knows.
    fn is_connected(&self) -> bool;
    /// Register `region` for remote access; returns its handle and wire base address.
    fn register(&mut self, region: &Region) -> Result<RegionKey, TargetError>;
    /// Deregister everything [`Target::register`] returned since the last call.
    fn deregister_all(&mut self);
    /// Post one Send of exactly `bytes` (no checks: the point is to send invalid headers).
    fn post_send(&mut self, bytes: &[u8]) -> Result<(), TargetError>;
    /// The next event, or [`TargetEvent::Quiet`] once `deadline` passes with none.
    fn next_event(&mut self, deadline: Deadline) -> TargetEvent;
    /// Tear the connection down from our side.
    fn disconnect(&mut self);
    /// Diagnostic lines gathered since the last call (the simulator's trace; a real target
    /// might return its CM events). Bounded by the target; empty by default.
    fn take_notes(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// The responder's events since the last call, when the target has an event source of its
    /// own (the simulator derives them from its model); `None` for targets whose events come
    /// from elsewhere (a live kernel's are collected by the trace relay).
    fn take_events(&mut self) -> Option<crate::signature::Signature> {
        None
    }
}

/// What the simulated responder runs above the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimServerKind {
    /// The engine's responder judging headers as this kernel model does (a modelled or a
    /// measured profile, `crate::rules::kernel_model`), answering every call that reaches it
    /// with an empty RPC SUCCESS reply (transport behaviour only).
    Responder(KernelModel),
    /// Our reference NFSv3 server with this DRC policy, judging headers as `profile`.
    Server {
        policy: String,
        profile: KernelModel,
    },
}

impl SimServerKind {
    /// The spec name: `sim:linux-6.1`, `sim:classic`, `sim:classic@linux-6.1` (the server's
    /// default profile, linux-2026, is left out).
    pub fn name(&self) -> String {
        match self {
            SimServerKind::Responder(model) => format!("sim:{}", model.name),
            SimServerKind::Server { policy, profile } if *profile == Profile::Linux2026.model() => {
                format!("sim:{policy}")
            }
            SimServerKind::Server { policy, profile } => {
                format!("sim:{policy}@{}", profile.name)
            }
        }
    }
}

/// A parsed `--target` / `--against` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// `sim:linux-6.1`, `sim:linux-2026`, or `sim:POLICY[@PROFILE]` (classic, acked,
    /// acked-mark; default profile linux-2026).
    Sim(SimServerKind),
    /// `model:PROFILE`: no transport, the svcrdma rule model's prediction (a modelled or a
    /// measured profile).
    Model(KernelModel),
    /// `ADDR:PORT`: a real RPC-over-RDMA listener reached with rdma_cm.
    Rdma(String),
}

impl TargetSpec {
    pub fn parse(spec: &str) -> Result<TargetSpec, TargetError> {
        if let Some(rest) = spec.strip_prefix("sim:") {
            if let Ok(model) = kernel_model(rest) {
                return Ok(TargetSpec::Sim(SimServerKind::Responder(model)));
            }
            let (policy, profile) = match rest.split_once('@') {
                Some((policy, profile)) => (
                    policy,
                    kernel_model(profile).map_err(|e| TargetError::BadSpec(e.to_string()))?,
                ),
                None => (rest, Profile::Linux2026.model()),
            };
            if server::drc::POLICY_NAMES.contains(&policy) {
                return Ok(TargetSpec::Sim(SimServerKind::Server {
                    policy: policy.to_string(),
                    profile,
                }));
            }
            return Err(TargetError::BadSpec(format!(
                "{spec:?}: after sim: give a kernel profile ({}) or a DRC policy ({}), \
                 optionally @PROFILE",
                profile_names().collect::<Vec<_>>().join(", "),
                server::drc::POLICY_NAMES.join(", ")
            )));
        }
        if let Some(rest) = spec.strip_prefix("model:") {
            return kernel_model(rest)
                .map(TargetSpec::Model)
                .map_err(|e| TargetError::BadSpec(e.to_string()));
        }
        match spec.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(TargetSpec::Rdma(spec.to_string()))
            }
            _ => Err(TargetError::BadSpec(format!(
                "{spec:?}: expected sim:PROFILE, sim:POLICY[@PROFILE], model:PROFILE or ADDR:PORT"
            ))),
        }
    }

    /// The spec as written.
    pub fn name(&self) -> String {
        match self {
            TargetSpec::Sim(kind) => kind.name(),
            TargetSpec::Model(model) => format!("model:{}", model.name),
            TargetSpec::Rdma(addr) => addr.clone(),
        }
    }
}

/// How a caller opens a live rdma target (`ADDR:PORT`): the verbs driver is the caller's (rig's
/// `rdma_target`); a build without one passes [`no_rdma_driver`].
pub type OpenRdma<'a> = &'a dyn Fn(&str) -> Result<Box<dyn Target>, TargetError>;

/// The rdma target where no verbs driver is linked: refused with what it needs.
pub fn no_rdma_driver(addr: &str) -> Result<Box<dyn Target>, TargetError> {
    Err(TargetError::Unavailable(format!(
        "rdma target {addr} needs the verbs driver (rig has it); run it inside the interop \
         guests (`just fuzz-wire`), or use --target sim:linux-2026 on the host"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spec_kind() {
        assert_eq!(
            TargetSpec::parse("sim:linux-6.1"),
            Ok(TargetSpec::Sim(SimServerKind::Responder(
                Profile::Linux6_1.model()
            )))
        );
        assert_eq!(
            TargetSpec::parse("sim:acked-mark"),
            Ok(TargetSpec::Sim(SimServerKind::Server {
                policy: "acked-mark".into(),
                profile: Profile::Linux2026.model()
            }))
        );
        assert_eq!(
            TargetSpec::parse("sim:classic@linux-6.1"),
            Ok(TargetSpec::Sim(SimServerKind::Server {
                policy: "classic".into(),
                profile: Profile::Linux6_1.model()
            }))
        );
        assert_eq!(
            TargetSpec::parse("sim:acked@linux-2026").unwrap().name(),
            "sim:acked"
        );
        assert_eq!(
            TargetSpec::parse("model:linux-2026"),
            Ok(TargetSpec::Model(Profile::Linux2026.model()))
        );
        assert_eq!(
            TargetSpec::parse("192.168.77.2:20049"),
            Ok(TargetSpec::Rdma("192.168.77.2:20049".into()))
        );
        for bad in [
            "sim:lru",
            "sim:classic@linux-5.4",
            "sim:lru@linux-6.1",
            "model:linux-5.4",
            "nfsd",
            ":20049",
            "host:port",
        ] {
            assert!(
                matches!(TargetSpec::parse(bad), Err(TargetError::BadSpec(_))),
                "{bad}"
            );
        }
        for spec in [
            "sim:linux-2026",
            "sim:classic",
            "model:linux-6.1",
            "model:debian-6.12.117",
            "sim:debian-7.2.13",
            "sim:classic@debian-6.1.176",
            "10.0.0.1:1",
        ] {
            assert_eq!(TargetSpec::parse(spec).unwrap().name(), spec);
        }
    }

    #[test]
    fn rdma_target_says_what_it_needs() {
        // Without a verbs driver the target cannot be reached; the refusal names where it runs.
        let err = no_rdma_driver("10.0.0.2:20049").err().unwrap();
        assert!(matches!(err, TargetError::Unavailable(_)), "{err}");
        assert!(err.to_string().contains("interop guests"), "{err}");
        assert!(err.to_string().contains("needs the verbs driver"), "{err}");
    }
}

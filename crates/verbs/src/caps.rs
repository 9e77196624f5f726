//! Queue pair sizing from RPC-over-RDMA credits: what a QP is created with (`cm`) and what the
//! posting code (`qp`) relies on, apart from both.

use crate::error::{Result, VerbsError};
use crate::sys;

/// Most credits a connection is sized for (Linux svcrdma's default is 64, xprtrdma's 128).
pub const MAX_CREDITS: u32 = 4096;
/// Most RDMA Reads/Writes one RPC may need on the Send Queue (chunk segments).
pub const MAX_RDMA_OPS_PER_RPC: u32 = 64;

/// Send and Receive Queue depths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpCaps {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
}

impl QpCaps {
    /// Depths for `credits` outstanding RPCs, each needing one Send plus up to `rdma_ops_per_rpc`
    /// RDMA Reads/Writes.
    ///
    /// RFC 8166 §3.3.1: a receiver must post at least as many Receives as the credits it grants, so
    /// the Receive Queue holds `credits`; the Send Queue holds every operation of `credits` RPCs.
    pub fn for_credits(credits: u32, rdma_ops_per_rpc: u32) -> Result<QpCaps> {
        if credits == 0 || credits > MAX_CREDITS {
            return Err(VerbsError::OverLimit {
                what: "credits (1 ..= MAX_CREDITS)",
                value: u64::from(credits),
                limit: u64::from(MAX_CREDITS),
            });
        }
        if rdma_ops_per_rpc > MAX_RDMA_OPS_PER_RPC {
            return Err(VerbsError::OverLimit {
                what: "RDMA operations per RPC",
                value: u64::from(rdma_ops_per_rpc),
                limit: u64::from(MAX_RDMA_OPS_PER_RPC),
            });
        }
        // Both factors are bounded above, so the product fits in u32 (4096 × 65).
        Ok(QpCaps {
            max_send_wr: credits * (1 + rdma_ops_per_rpc),
            max_recv_wr: credits,
        })
    }

    /// Completion queue entries for one CQ shared by both queues.
    pub fn cq_entries(&self) -> u32 {
        self.max_send_wr + self.max_recv_wr
    }

    pub(crate) fn init_attr(
        &self,
        send_cq: *mut sys::ibv_cq,
        recv_cq: *mut sys::ibv_cq,
    ) -> sys::ibv_qp_init_attr {
        sys::ibv_qp_init_attr {
            send_cq,
            recv_cq,
            cap: sys::ibv_qp_cap {
                max_send_wr: self.max_send_wr,
                max_recv_wr: self.max_recv_wr,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            qp_type: sys::IBV_QPT_RC,
            // Only requests posted with `signaled` produce completions.
            sq_sig_all: 0,
            ..Default::default()
        }
    }
}

//! InfiniBand Communication Management MADs (IBTA Vol 1 §12.6) as RDMA-CM sends them to QP1:
//! enough of REQ/REP/RTU/DREQ/DREP/REJ to pair the two QPs of a connection, learn the service
//! (port), the path MTU, the starting PSNs and the RFC 8797 private data.

use wire::{DecodeError, Reader};

/// Management class of CM MADs.
pub const MGMT_CLASS_CM: u8 = 0x07;
/// Size of the common MAD header.
pub const MAD_HEADER_LEN: usize = 24;
/// Offset of the private data in a REQ (IBTA Vol 1 Table 99).
const REQ_PRIVATE_DATA: usize = 140;
/// Offset of the private data in a REP (IBTA Vol 1 Table 103).
const REP_PRIVATE_DATA: usize = 36;
/// In RDMA-CM's IP-based REQ private data (IBTA Annex A11.6), the consumer's private data follows
/// a 36-byte header (version, IP version, source port, source and destination addresses).
const IP_CM_HEADER_LEN: usize = 36;

/// One CM message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmMessage {
    /// ConnectRequest, sent by the active side (the RPC client).
    Request {
        local_comm_id: u32,
        service_id: u64,
        local_qpn: u32,
        starting_psn: u32,
        /// Path MTU in bytes (256..4096), from the REQ's "Path Packet Payload MTU".
        path_mtu: Option<u32>,
        /// The consumer's private data (after the IP CM header).
        private_data: Vec<u8>,
    },
    /// ConnectReply, sent by the passive side (the RPC server).
    Reply {
        local_comm_id: u32,
        remote_comm_id: u32,
        local_qpn: u32,
        starting_psn: u32,
        private_data: Vec<u8>,
    },
    ReadyToUse {
        local_comm_id: u32,
        remote_comm_id: u32,
    },
    Reject {
        local_comm_id: u32,
        remote_comm_id: u32,
        reason: u16,
    },
    DisconnectRequest {
        local_comm_id: u32,
        remote_comm_id: u32,
    },
    DisconnectReply {
        local_comm_id: u32,
        remote_comm_id: u32,
    },
    /// Any other CM attribute (MRA, LAP, APR, SIDR ...), kept by number.
    Other { attribute_id: u16 },
}

impl CmMessage {
    /// Short name used in trace lines.
    pub fn name(&self) -> String {
        match self {
            CmMessage::Request { .. } => "CM_REQ".into(),
            CmMessage::Reply { .. } => "CM_REP".into(),
            CmMessage::ReadyToUse { .. } => "CM_RTU".into(),
            CmMessage::Reject { .. } => "CM_REJ".into(),
            CmMessage::DisconnectRequest { .. } => "CM_DREQ".into(),
            CmMessage::DisconnectReply { .. } => "CM_DREP".into(),
            CmMessage::Other { attribute_id } => format!("CM_ATTR_{attribute_id:#06x}"),
        }
    }
}

/// The TCP/UDP port in an RDMA IP CM service ID (`0x0000_0000_01PS_PPPP`, Annex A11.6), if the
/// service ID has that form.
pub fn service_port(service_id: u64) -> Option<u16> {
    if service_id >> 24 == 0x01 {
        Some((service_id & 0xffff) as u16)
    } else {
        None
    }
}

/// Decode a MAD (the payload of a UD Send to QP1). `Ok(None)` for MADs of other classes.
pub fn decode_mad(mad: &[u8]) -> Result<Option<CmMessage>, DecodeError> {
    let mut r = Reader::new(mad);
    let _base_version = r.take(1, "mad.base_version")?;
    let class = r.take(1, "mad.mgmt_class")?[0];
    if class != MGMT_CLASS_CM {
        return Ok(None);
    }
    r.take(6, "mad.header")?; // class version, method, status, class specific
    r.u64("mad.transaction_id")?;
    let attribute_id = r.take(2, "mad.attribute_id")?;
    let attribute_id = u16::from_be_bytes([attribute_id[0], attribute_id[1]]);
    r.take(6, "mad.header")?; // reserved, attribute modifier
    let data = r.rest();
    let mut d = Reader::new(data);
    let word = |r: &mut Reader<'_>, f| r.u32(f);
    Ok(Some(match attribute_id {
        0x0010 => {
            let local_comm_id = word(&mut d, "cm.req.local_comm_id")?;
            d.u32("cm.req.reserved")?;
            let service_id = d.u64("cm.req.service_id")?;
            d.take(12, "cm.req.ca_guid")?; // local CA GUID, reserved
            d.u32("cm.req.local_qkey")?;
            let local_qpn = word(&mut d, "cm.req.local_qpn")? >> 8;
            d.take(8, "cm.req.eecn")?;
            let starting_psn = word(&mut d, "cm.req.starting_psn")? >> 8;
            let mtu_word = word(&mut d, "cm.req.pkey_mtu")?;
            let path_mtu = match (mtu_word >> 12) & 0xf {
                code @ 1..=5 => Some(128u32 << code),
                _ => None,
            };
            let private_data = private_data(
                data,
                REQ_PRIVATE_DATA + IP_CM_HEADER_LEN,
                "cm.req.private_data",
            )?;
            CmMessage::Request {
                local_comm_id,
                service_id,
                local_qpn,
                starting_psn,
                path_mtu,
                private_data,
            }
        }
        0x0013 => {
            let local_comm_id = word(&mut d, "cm.rep.local_comm_id")?;
            let remote_comm_id = word(&mut d, "cm.rep.remote_comm_id")?;
            d.u32("cm.rep.local_qkey")?;
            let local_qpn = word(&mut d, "cm.rep.local_qpn")? >> 8;
            d.u32("cm.rep.local_eecn")?;
            let starting_psn = word(&mut d, "cm.rep.starting_psn")? >> 8;
            let private_data = private_data(data, REP_PRIVATE_DATA, "cm.rep.private_data")?;
            CmMessage::Reply {
                local_comm_id,
                remote_comm_id,
                local_qpn,
                starting_psn,
                private_data,
            }
        }
        0x0012 => {
            let local_comm_id = word(&mut d, "cm.rej.local_comm_id")?;
            let remote_comm_id = word(&mut d, "cm.rej.remote_comm_id")?;
            d.u32("cm.rej.flags")?;
            let reason = d.take(2, "cm.rej.reason")?;
            CmMessage::Reject {
                local_comm_id,
                remote_comm_id,
                reason: u16::from_be_bytes([reason[0], reason[1]]),
            }
        }
        0x0014..=0x0016 => {
            let local_comm_id = word(&mut d, "cm.local_comm_id")?;
            let remote_comm_id = word(&mut d, "cm.remote_comm_id")?;
            match attribute_id {
                0x0014 => CmMessage::ReadyToUse {
                    local_comm_id,
                    remote_comm_id,
                },
                0x0015 => CmMessage::DisconnectRequest {
                    local_comm_id,
                    remote_comm_id,
                },
                _ => CmMessage::DisconnectReply {
                    local_comm_id,
                    remote_comm_id,
                },
            }
        }
        other => CmMessage::Other {
            attribute_id: other,
        },
    }))
}

/// The private data of a CM message: the bytes of `data` from offset `at` (where the message's
/// fixed fields end) on.
fn private_data(data: &[u8], at: usize, field: &'static str) -> Result<Vec<u8>, DecodeError> {
    let bytes = data.get(at..).ok_or(DecodeError::Truncated {
        field,
        needed: at,
        available: data.len(),
    })?;
    Ok(bytes.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mad(attr: u16, data: &[u8]) -> Vec<u8> {
        let mut m = vec![1, MGMT_CLASS_CM, 2, 3, 0, 0, 0, 0];
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(&attr.to_be_bytes());
        m.extend_from_slice(&[0; 6]);
        m.extend_from_slice(data);
        m
    }

    #[test]
    fn decodes_req_fields() {
        let mut data = vec![0u8; 232];
        data[0..4].copy_from_slice(&0x1234u32.to_be_bytes());
        data[8..16].copy_from_slice(&0x0000_0000_0106_4e51u64.to_be_bytes());
        data[32..36].copy_from_slice(&((0x11u32 << 8) | 0x10).to_be_bytes());
        data[44..48].copy_from_slice(&(0xabcdefu32 << 8).to_be_bytes());
        data[48..52].copy_from_slice(&0xffff_3000u32.to_be_bytes());
        data[176..180].copy_from_slice(&0xf6ab_0e18u32.to_be_bytes());
        let m = decode_mad(&mad(0x0010, &data)).unwrap().unwrap();
        let CmMessage::Request {
            local_comm_id,
            service_id,
            local_qpn,
            starting_psn,
            path_mtu,
            private_data,
        } = m
        else {
            panic!("not a REQ: {m:?}")
        };
        assert_eq!(local_comm_id, 0x1234);
        assert_eq!(service_port(service_id), Some(20049));
        assert_eq!(local_qpn, 0x11);
        assert_eq!(starting_psn, 0xabcdef);
        assert_eq!(path_mtu, Some(1024));
        assert_eq!(&private_data[..4], &[0xf6, 0xab, 0x0e, 0x18]);
    }

    #[test]
    fn short_mads_are_errors_and_other_classes_ignored() {
        let full = mad(0x0013, &[0u8; 232]);
        for cut in 0..MAD_HEADER_LEN + REP_PRIVATE_DATA {
            assert!(decode_mad(&full[..cut]).is_err(), "cut {cut}");
        }
        let mut sa = full.clone();
        sa[1] = 0x03;
        assert_eq!(decode_mad(&sa).unwrap(), None);
    }
}

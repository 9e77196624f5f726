//! Device discovery (devices, ports, GIDs) and the verbs context handle other objects are created on.

use std::ffi::CStr;
use std::fmt;
use std::ptr::NonNull;

use crate::error::{Result, VerbsError};
use crate::sys;
use crate::wc::WcFlagLayout;

/// `RXE_VENDOR_ID` (drivers/infiniband/sw/rxe/rxe_param.h; 0 before Linux 4.x's change to 0xFFFFFF).
pub const RXE_VENDOR_ID: u32 = 0xff_ffff;

/// At most this many devices are listed (the C count is not trusted to be small).
pub const MAX_DEVICES: usize = 64;
/// At most this many GID table entries are read per port.
pub const MAX_GIDS_PER_PORT: i32 = 256;

/// A device context (`struct ibv_context`) owned by librdmacm, obtained from a [`crate::CmId`].
///
/// librdmacm opens every device once and keeps the context open for the life of the process (it
/// closes it only on device removal), so this handle is a plain pointer that PDs, CQs and completion
/// channels are created on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    pub(crate) raw: NonNull<sys::ibv_context>,
}

impl Context {
    /// The device's name, e.g. `rxe0`.
    pub fn device_name(&self) -> String {
        // SAFETY: `raw` is a live context (see the type's doc); `device` is set by libibverbs at open
        // and ibv_get_device_name returns a pointer into the device struct, NUL-terminated.
        unsafe {
            let name = sys::ibv_get_device_name((*self.raw.as_ptr()).device);
            c_string(name)
        }
    }

    /// `ibv_query_device` on this context.
    pub fn query(&self) -> Result<sys::ibv_device_attr> {
        let mut attr = sys::ibv_device_attr::default();
        // SAFETY: live context (see the type's doc), valid out-pointer.
        let rc = unsafe { sys::ibv_query_device(self.raw.as_ptr(), &mut attr) };
        if rc != 0 {
            return Err(VerbsError::from_errno("ibv_query_device", rc));
        }
        Ok(attr)
    }

    /// How this device's completions lay out `wc_flags` (see [`WcFlagLayout`]).
    pub fn wc_flag_layout(&self) -> WcFlagLayout {
        let vendor_id = self.query().map(|attr| attr.vendor_id).ok();
        wc_flag_layout_for(vendor_id, &self.device_name())
    }
}

/// rxe passes the kernel's completion flags through; recognise it by its vendor id, or by the
/// `rxe` name prefix for kernels that report another vendor id.
pub fn wc_flag_layout_for(vendor_id: Option<u32>, device_name: &str) -> WcFlagLayout {
    if vendor_id == Some(RXE_VENDOR_ID) || device_name.starts_with("rxe") {
        WcFlagLayout::KernelIbWc
    } else {
        WcFlagLayout::Verbs
    }
}

/// One port of a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub port_num: u8,
    pub state: &'static str,
    /// Active path MTU in bytes.
    pub active_mtu: u32,
    pub link_layer: &'static str,
    pub gid_table_len: i32,
    /// Non-zero GID table entries: (index, GID).
    pub gids: Vec<(i32, [u8; 16])>,
}

/// What `ibv_query_device` and friends say about one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub name: String,
    pub node_guid: u64,
    pub firmware: String,
    /// Max outstanding RDMA Reads this device accepts as responder / issues as initiator, per QP:
    /// the ceilings for `responder_resources` / `initiator_depth` at connect time.
    pub max_qp_rd_atom: i32,
    pub max_qp_init_rd_atom: i32,
    pub ports: Vec<PortInfo>,
    /// The transport the device speaks (`ibv_device.transport_type`): soft-RoCE reports
    /// InfiniBand (RoCE is IB transport over Ethernet), soft-iWARP iWARP.
    pub transport: DeviceTransport,
}

/// `ibv_device.transport_type`, the part the rig tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceTransport {
    /// InfiniBand transport: InfiniBand itself and RoCE (rxe).
    InfiniBand,
    /// iWARP: RDMAP/DDP/MPA over TCP (siw).
    Iwarp,
    /// Anything else libibverbs reports (usNIC, unknown), with its raw value.
    Other(i32),
}

impl DeviceTransport {
    fn from_raw(raw: sys::ibv_transport_type) -> DeviceTransport {
        match raw {
            sys::IBV_TRANSPORT_IB => DeviceTransport::InfiniBand,
            sys::IBV_TRANSPORT_IWARP => DeviceTransport::Iwarp,
            other => DeviceTransport::Other(other),
        }
    }
}

/// Every RDMA device libibverbs can open. Empty when the machine has none; an error only when
/// libibverbs itself fails (e.g. ENOSYS: kernel without RDMA support).
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    let mut count: i32 = 0;
    // SAFETY: `count` is a valid out-pointer; a NULL result is handled below.
    let list = unsafe { sys::ibv_get_device_list(&mut count) };
    let Some(list) = NonNull::new(list) else {
        return Err(VerbsError::last_os_error("ibv_get_device_list"));
    };
    let list = DeviceList(list);
    let count = usize::try_from(count).unwrap_or(0).min(MAX_DEVICES);
    let mut devices = Vec::with_capacity(count);
    for index in 0..count {
        // SAFETY: the list holds `count` (>= index + 1) device pointers followed by NULL.
        let device = unsafe { *list.0.as_ptr().add(index) };
        if device.is_null() {
            break;
        }
        devices.push(describe_device(device)?);
    }
    Ok(devices)
}

/// Like [`list_devices`], but "no device" is an error carrying the hint to load rdma_rxe.
pub fn probe() -> Result<Vec<DeviceInfo>> {
    let devices = list_devices()?;
    if devices.is_empty() {
        return Err(VerbsError::NoDevice {
            verb: "ibv_get_device_list",
            errno: libc::ENODEV,
        });
    }
    Ok(devices)
}

/// Frees the device list on every return path.
struct DeviceList(NonNull<*mut sys::ibv_device>);

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ibv_get_device_list and is freed exactly once, here.
        unsafe { sys::ibv_free_device_list(self.0.as_ptr()) }
    }
}

/// Closes a context opened for probing on every return path.
struct OpenedContext(NonNull<sys::ibv_context>);

impl Drop for OpenedContext {
    fn drop(&mut self) {
        // SAFETY: the context came from ibv_open_device, nothing created on it outlives this guard.
        unsafe {
            sys::ibv_close_device(self.0.as_ptr());
        }
    }
}

fn describe_device(device: *mut sys::ibv_device) -> Result<DeviceInfo> {
    // SAFETY: `device` is a non-NULL entry of a live device list.
    let name = unsafe { c_string(sys::ibv_get_device_name(device)) };
    // SAFETY: as above.
    let node_guid = u64::from_be(unsafe { sys::ibv_get_device_guid(device) });
    // SAFETY: as above; NULL is handled.
    let context = NonNull::new(unsafe { sys::ibv_open_device(device) })
        .ok_or_else(|| VerbsError::last_os_error("ibv_open_device"))?;
    let context = OpenedContext(context);

    let mut attr = sys::ibv_device_attr::default();
    // SAFETY: live context, valid out-pointer.
    let rc = unsafe { sys::ibv_query_device(context.0.as_ptr(), &mut attr) };
    if rc != 0 {
        return Err(VerbsError::from_errno("ibv_query_device", rc));
    }
    let firmware = fixed_c_string(&attr.fw_ver);
    // SAFETY: `device` is a non-NULL entry of a live device list; the field is a plain int.
    let transport = DeviceTransport::from_raw(unsafe { (*device).transport_type });
    let mut ports = Vec::with_capacity(usize::from(attr.phys_port_cnt));
    for port_num in 1..=attr.phys_port_cnt {
        ports.push(describe_port(context.0, port_num)?);
    }
    Ok(DeviceInfo {
        name,
        node_guid,
        firmware,
        max_qp_rd_atom: attr.max_qp_rd_atom,
        max_qp_init_rd_atom: attr.max_qp_init_rd_atom,
        ports,
        transport,
    })
}

fn describe_port(context: NonNull<sys::ibv_context>, port_num: u8) -> Result<PortInfo> {
    let mut attr = sys::ibv_port_attr::default();
    // The exported ibv_query_port takes the older `_compat_ibv_port_attr`, a prefix of
    // `ibv_port_attr`; verbs.h's inline wrapper passes the full struct the same way when the
    // provider has no extended query (fields past the prefix stay zero).
    // SAFETY: live context; `attr` is zeroed and at least as large as the compat struct.
    let rc = unsafe {
        sys::ibv_query_port(
            context.as_ptr(),
            port_num,
            (&mut attr as *mut sys::ibv_port_attr).cast(),
        )
    };
    if rc != 0 {
        return Err(VerbsError::from_errno("ibv_query_port", rc));
    }
    let mut gids = Vec::new();
    for index in 0..attr.gid_tbl_len.clamp(0, MAX_GIDS_PER_PORT) {
        let mut gid = sys::ibv_gid::default();
        // SAFETY: live context, index below the port's table length, valid out-pointer.
        let rc = unsafe { sys::ibv_query_gid(context.as_ptr(), port_num, index, &mut gid) };
        if rc != 0 {
            // rxe reports a table larger than its populated entries; unpopulated ones fail.
            continue;
        }
        // SAFETY: `raw` is the byte view of the 16-byte union; every pattern is valid.
        let raw = unsafe { gid.raw };
        if raw != [0; 16] {
            gids.push((index, raw));
        }
    }
    Ok(PortInfo {
        port_num,
        state: port_state_name(attr.state),
        active_mtu: mtu_bytes(attr.active_mtu),
        link_layer: link_layer_name(attr.link_layer),
        gid_table_len: attr.gid_tbl_len,
        gids,
    })
}

/// `enum ibv_port_state` as text.
pub fn port_state_name(state: sys::ibv_port_state) -> &'static str {
    match state {
        sys::IBV_PORT_NOP => "NOP",
        sys::IBV_PORT_DOWN => "DOWN",
        sys::IBV_PORT_INIT => "INIT",
        sys::IBV_PORT_ARMED => "ARMED",
        sys::IBV_PORT_ACTIVE => "ACTIVE",
        sys::IBV_PORT_ACTIVE_DEFER => "ACTIVE_DEFER",
        _ => "UNKNOWN",
    }
}

/// `enum ibv_mtu` in bytes (0 when unknown).
pub fn mtu_bytes(mtu: sys::ibv_mtu) -> u32 {
    match mtu {
        sys::IBV_MTU_256 => 256,
        sys::IBV_MTU_512 => 512,
        sys::IBV_MTU_1024 => 1024,
        sys::IBV_MTU_2048 => 2048,
        sys::IBV_MTU_4096 => 4096,
        _ => 0,
    }
}

/// `IBV_LINK_LAYER_*` as text (soft-RoCE reports Ethernet).
pub fn link_layer_name(link_layer: u8) -> &'static str {
    match u32::from(link_layer) {
        sys::IBV_LINK_LAYER_INFINIBAND => "InfiniBand",
        sys::IBV_LINK_LAYER_ETHERNET => "Ethernet",
        _ => "unspecified",
    }
}

/// A GID in IPv6 notation (RoCEv2 GIDs are IPv4-mapped or IPv6 addresses).
pub fn format_gid(gid: &[u8; 16]) -> String {
    std::net::Ipv6Addr::from(*gid).to_string()
}

/// Copy a NUL-terminated C string (NULL → empty).
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string valid for the duration of the call.
unsafe fn c_string(ptr: *const std::os::raw::c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// Text of a fixed-size C char array that may lack a terminating NUL.
fn fixed_c_string(chars: &[std::os::raw::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "device {} node_guid {:016x} fw {:?} max_qp_rd_atom {} max_qp_init_rd_atom {}",
            self.name, self.node_guid, self.firmware, self.max_qp_rd_atom, self.max_qp_init_rd_atom
        )?;
        for port in &self.ports {
            writeln!(
                f,
                "  port {} state {} active_mtu {} link_layer {} gid_tbl_len {}",
                port.port_num, port.state, port.active_mtu, port.link_layer, port.gid_table_len
            )?;
            for (index, gid) in &port.gids {
                writeln!(f, "    gid[{index}] {}", format_gid(gid))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_devices_never_crashes_and_probe_explains_an_empty_list() {
        // On CI and dev hosts there is no RDMA device; in the guests there is rxe0. Either way the
        // calls return, and probe's error (if any) is the actionable one.
        match list_devices() {
            Ok(devices) if devices.is_empty() => {
                let error = probe().unwrap_err();
                assert!(error.is_no_device());
                assert!(error.to_string().contains("load rdma_rxe"), "{error}");
            }
            Ok(devices) => {
                let probed = probe().unwrap();
                assert_eq!(probed.len(), devices.len());
                assert!(devices.iter().all(|device| !device.name.is_empty()));
            }
            Err(error) => assert!(
                error.to_string().starts_with("ibv_get_device_list"),
                "{error}"
            ),
        }
    }

    #[test]
    fn rxe_is_recognised_by_vendor_id_or_name() {
        assert_eq!(
            wc_flag_layout_for(Some(RXE_VENDOR_ID), "roce0"),
            WcFlagLayout::KernelIbWc
        );
        assert_eq!(
            wc_flag_layout_for(Some(0), "rxe0"),
            WcFlagLayout::KernelIbWc
        );
        assert_eq!(
            wc_flag_layout_for(Some(0x02c9), "mlx5_0"),
            WcFlagLayout::Verbs
        );
        assert_eq!(wc_flag_layout_for(None, "siw0"), WcFlagLayout::Verbs);
    }

    #[test]
    fn port_and_gid_formatting() {
        assert_eq!(port_state_name(sys::IBV_PORT_ACTIVE), "ACTIVE");
        assert_eq!(port_state_name(99), "UNKNOWN");
        assert_eq!(mtu_bytes(sys::IBV_MTU_1024), 1024);
        assert_eq!(mtu_bytes(0), 0);
        assert_eq!(link_layer_name(2), "Ethernet");
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[10, 0, 2, 15]);
        assert_eq!(format_gid(&gid), "::ffff:10.0.2.15");
        assert_eq!(
            fixed_c_string(&[b'1' as _, b'.' as _, b'0' as _, 0, b'x' as _]),
            "1.0"
        );
        assert_eq!(fixed_c_string(&[b'a' as _; 4]), "aaaa");
    }
}

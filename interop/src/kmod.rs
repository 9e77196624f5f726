//! Kernel module metadata: `modules.dep`, `modules.builtin`, the kernel `config`, and the check
//! that a kernel under test can run the suites at all (rdma_rxe, rpcrdma, nfsd present).

use std::collections::BTreeMap;

/// Canonical module name: file name without directory and `.ko[.xz|.zst|.gz]`, `-` as `_`.
pub fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = [".ko.xz", ".ko.zst", ".ko.gz", ".ko"]
        .iter()
        .find_map(|suffix| file.strip_suffix(suffix))
        .unwrap_or(file);
    stem.replace('-', "_")
}

/// Where a module comes from in a given kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provided {
    /// A loadable module at this path (relative to the modules directory).
    Loadable(String),
    /// Compiled into the kernel image.
    Builtin,
}

/// The modules a kernel provides, from its `modules.dep` and `modules.builtin`.
#[derive(Debug, Clone, Default)]
pub struct ModuleIndex {
    modules: BTreeMap<String, Provided>,
    deps: BTreeMap<String, Vec<String>>,
}

impl ModuleIndex {
    /// Build from the text of `modules.dep` and `modules.builtin` (either may be empty).
    pub fn parse(modules_dep: &str, modules_builtin: &str) -> Self {
        let mut index = ModuleIndex::default();
        for line in modules_builtin
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            index.modules.insert(module_name(line), Provided::Builtin);
        }
        for line in modules_dep.lines() {
            let Some((path, deps)) = line.split_once(':') else {
                continue;
            };
            let name = module_name(path.trim());
            index
                .modules
                .insert(name.clone(), Provided::Loadable(path.trim().to_owned()));
            index
                .deps
                .insert(name, deps.split_whitespace().map(module_name).collect());
        }
        index
    }

    /// How `name` is provided, if at all (`-`/`_` insensitive).
    pub fn lookup(&self, name: &str) -> Option<&Provided> {
        self.modules.get(&name.replace('-', "_"))
    }

    /// Direct dependencies of a loadable module.
    pub fn dependencies(&self, name: &str) -> &[String] {
        self.deps
            .get(&name.replace('-', "_"))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Number of loadable + builtin modules known.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The required modules this kernel provides neither as a module nor built in.
    pub fn missing<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        required
            .iter()
            .filter(|name| self.lookup(name).is_none())
            .map(String::as_str)
            .collect()
    }
}

/// Kernel config options the suites depend on, with the module each one builds.
pub const REQUIRED_CONFIG: &[(&str, &str)] = &[
    ("CONFIG_RDMA_RXE", "rdma_rxe"),
    ("CONFIG_SUNRPC_XPRT_RDMA", "rpcrdma"),
    ("CONFIG_NFSD", "nfsd"),
    ("CONFIG_NFS_FS", "nfs"),
    ("CONFIG_INFINIBAND", "ib_core"),
    // the drc suite's export, frozen by a case's execution hold
    ("CONFIG_BLK_DEV_LOOP", "loop"),
    ("CONFIG_EXT4_FS", "ext4"),
];

/// Options from [`REQUIRED_CONFIG`] that a kernel `config` file leaves unset (not `=y`/`=m`).
pub fn missing_config_options(config: &str) -> Vec<&'static str> {
    REQUIRED_CONFIG
        .iter()
        .filter(|(option, _)| {
            !config.lines().any(|line| {
                line.strip_prefix(option)
                    .and_then(|rest| rest.strip_prefix('='))
                    .is_some_and(|value| value == "y" || value == "m")
            })
        })
        .map(|(option, _)| *option)
        .collect()
}

/// Parse `modprobe --show-depends` output into module file paths (builtins are skipped).
pub fn parse_show_depends(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            match (words.next(), words.next()) {
                (Some("insmod"), Some(path)) => Some(path.to_owned()),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP: &str = "\
kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko.xz: kernel/drivers/infiniband/core/ib_uverbs.ko.xz kernel/drivers/infiniband/core/ib_core.ko.xz kernel/net/ipv4/udp_tunnel.ko.xz
kernel/drivers/infiniband/core/ib_core.ko.xz:
kernel/net/sunrpc/xprtrdma/rpcrdma.ko.xz: kernel/drivers/infiniband/core/rdma_cm.ko.xz kernel/net/sunrpc/sunrpc.ko.xz
kernel/fs/nfsd/nfsd.ko.xz: kernel/fs/lockd/lockd.ko.xz
";
    const BUILTIN: &str = "kernel/drivers/virtio/virtio_pci.ko\nkernel/fs/ext4/ext4.ko\n";

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn module_names_drop_path_suffix_and_dashes() {
        assert_eq!(module_name("kernel/fs/nfsd/nfsd.ko.xz"), "nfsd");
        assert_eq!(module_name("kernel/net/9p/9pnet_virtio.ko"), "9pnet_virtio");
        assert_eq!(module_name("crc32c-intel.ko.zst"), "crc32c_intel");
        assert_eq!(module_name("rdma_rxe"), "rdma_rxe");
    }

    #[test]
    fn index_knows_loadable_and_builtin_modules() {
        let index = ModuleIndex::parse(DEP, BUILTIN);
        assert_eq!(index.len(), 6);
        assert_eq!(index.lookup("virtio-pci"), Some(&Provided::Builtin));
        assert_eq!(
            index.lookup("nfsd"),
            Some(&Provided::Loadable("kernel/fs/nfsd/nfsd.ko.xz".into()))
        );
        assert_eq!(
            index.dependencies("rdma_rxe"),
            ["ib_uverbs", "ib_core", "udp_tunnel"]
        );
        assert!(index.dependencies("ib_core").is_empty());
    }

    #[test]
    fn missing_lists_required_modules_that_are_absent() {
        let index = ModuleIndex::parse(DEP, BUILTIN);
        let required = names(&["rdma_rxe", "rpcrdma", "nfsd", "ext4"]);
        assert!(index.missing(&required).is_empty());
        let without_rxe = DEP.lines().skip(1).collect::<Vec<_>>().join("\n");
        let index = ModuleIndex::parse(&without_rxe, BUILTIN);
        assert_eq!(index.missing(&required), ["rdma_rxe"]);
    }

    #[test]
    fn config_check_accepts_y_and_m_only() {
        let good = "CONFIG_RDMA_RXE=m\nCONFIG_SUNRPC_XPRT_RDMA=m\nCONFIG_NFSD=m\nCONFIG_NFS_FS=y\nCONFIG_INFINIBAND=m\n\
                    CONFIG_BLK_DEV_LOOP=y\nCONFIG_EXT4_FS=y\n";
        assert!(missing_config_options(good).is_empty());
        let bad = "# CONFIG_RDMA_RXE is not set\nCONFIG_SUNRPC_XPRT_RDMA=m\nCONFIG_NFSD=m\nCONFIG_NFS_FS=y\nCONFIG_INFINIBAND_X=m\n\
                   CONFIG_EXT4_FS=m\n";
        assert_eq!(
            missing_config_options(bad),
            [
                "CONFIG_RDMA_RXE",
                "CONFIG_INFINIBAND",
                "CONFIG_BLK_DEV_LOOP"
            ]
        );
    }

    #[test]
    fn show_depends_keeps_insmod_paths() {
        let output = "builtin virtio_pci\ninsmod /k/lib/modules/6.1/kernel/ib_core.ko \ninsmod /k/lib/modules/6.1/kernel/rdma_rxe.ko.xz\n";
        assert_eq!(
            parse_show_depends(output),
            [
                "/k/lib/modules/6.1/kernel/ib_core.ko",
                "/k/lib/modules/6.1/kernel/rdma_rxe.ko.xz"
            ]
        );
    }
}

//! The NFSv3 procedures on one object: SETATTR, LOOKUP, READLINK, READ, WRITE (RFC 1813 §3.3).

use super::*;

impl Fs {
    pub(super) fn setattr(&mut self, a: &SetattrArgs) -> SetattrRes {
        let id = match self.id_of(&a.object) {
            Ok(id) => id,
            Err(status) => return wcc_result_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(id);
        // RFC 1813 §3.3.2: with a guard, the change happens only if ctime still matches.
        if let Some(guard) = a.guard {
            if guard != before.ctime {
                return wcc_result_fail(Nfsstat3::NotSync, self.wcc(id, before));
            }
        }
        match self.apply_sattr(id, &a.new_attributes) {
            Ok(()) => NfsRes::Ok(WccResult {
                obj_wcc: self.wcc(id, before),
            }),
            Err(status) => wcc_result_fail(status, self.wcc(id, before)),
        }
    }

    pub(super) fn lookup(&mut self, a: &LookupArgs) -> LookupRes {
        let dir = match self.id_of(&a.what.dir) {
            Ok(id) => id,
            Err(status) => return fail_attr(status),
        };
        let found = self.dir(dir).map(|d| d.get(&a.what.name.0).copied());
        match found {
            Ok(Some(id)) => NfsRes::Ok(LookupResOk {
                object: handle(id),
                obj_attributes: Some(self.attr(id)),
                dir_attributes: Some(self.attr(dir)),
            }),
            Ok(None) => NfsRes::Fail {
                status: Nfsstat3::Noent,
                resfail: AttrResult {
                    attributes: Some(self.attr(dir)),
                },
            },
            Err(status) => fail_attr(status),
        }
    }

    pub(super) fn readlink(&mut self, a: &ReadlinkArgs) -> ReadlinkRes {
        match self.id_of(&a.symlink) {
            Ok(id) => match &self.inodes[&id].content {
                Content::Symlink(path) => NfsRes::Ok(ReadlinkResOk {
                    symlink_attributes: Some(self.attr(id)),
                    data: DdpData::Inline(path.clone()),
                }),
                _ => fail_attr(Nfsstat3::Inval),
            },
            Err(status) => fail_attr(status),
        }
    }

    pub(super) fn read(&mut self, a: &ReadArgs) -> ReadRes {
        let id = match self.id_of(&a.file) {
            Ok(id) => id,
            Err(status) => return fail_attr(status),
        };
        let data = match &self.inodes[&id].content {
            Content::File(d) => d,
            Content::Dir(_) => return fail_attr(Nfsstat3::Isdir),
            _ => return fail_attr(Nfsstat3::Inval),
        };
        let len = data.len() as u64;
        let start = a.offset.min(len) as usize;
        let end = a
            .offset
            .saturating_add(a.count.min(MAX_DATA).into())
            .min(len) as usize;
        let bytes = data[start..end].to_vec();
        NfsRes::Ok(ReadResOk {
            file_attributes: Some(self.attr(id)),
            count: bytes.len() as u32,
            eof: end as u64 == len,
            data: DdpData::Inline(bytes),
        })
    }

    pub(super) fn write(&mut self, a: &WriteArgs) -> WriteRes {
        let id = match self.id_of(&a.file) {
            Ok(id) => id,
            Err(status) => return wcc_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(id);
        let DdpData::Inline(data) = &a.data else {
            return wcc_fail(Nfsstat3::Inval, self.wcc(id, before));
        };
        match &self.inodes[&id].content {
            Content::File(_) => {}
            Content::Dir(_) => return wcc_fail(Nfsstat3::Isdir, self.wcc(id, before)),
            _ => return wcc_fail(Nfsstat3::Inval, self.wcc(id, before)),
        }
        // RFC 1813 §3.3.7: count is the number of bytes of data; they must agree.
        if a.count as usize != data.len() {
            return wcc_fail(Nfsstat3::Inval, self.wcc(id, before));
        }
        let Some(end) = a.offset.checked_add(data.len() as u64) else {
            return wcc_fail(Nfsstat3::Fbig, self.wcc(id, before));
        };
        if end > before.size {
            if let Err(status) = self.set_size(id, end) {
                return wcc_fail(status, self.wcc(id, before));
            }
        }
        if let Some(Content::File(file)) = self.inodes.get_mut(&id).map(|n| &mut n.content) {
            file[a.offset as usize..end as usize].copy_from_slice(data);
        }
        self.touch(id);
        NfsRes::Ok(WriteResOk {
            file_wcc: self.wcc(id, before),
            count: a.count,
            committed: StableHow::FileSync,
            verf: self.write_verf,
        })
    }
}

//! The NFSv3 procedures that change a directory: CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR,
//! RENAME, LINK (RFC 1813 §3.3).

use super::*;

impl Fs {
    pub(super) fn create(&mut self, a: &CreateArgs) -> CreateRes {
        let dir = match self.id_of(&a.where_.dir) {
            Ok(id) => id,
            Err(status) => return wcc_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(dir);
        if let Err(status) = Self::check_name(&a.where_.name) {
            return wcc_fail(status, self.wcc(dir, before));
        }
        let existing = match self.dir(dir) {
            Ok(d) => d.get(&a.where_.name.0).copied(),
            Err(status) => return wcc_fail(status, self.wcc(dir, before)),
        };
        let (attrs, verf) = match &a.how {
            CreateHow3::Unchecked(s) | CreateHow3::Guarded(s) => (s.clone(), None),
            CreateHow3::Exclusive(v) => (Sattr3::default(), Some(*v)),
        };
        let id = match (existing, &a.how) {
            // RFC 1813 §3.3.8: GUARDED fails if the name exists.
            (Some(_), CreateHow3::Guarded(_)) => {
                return wcc_fail(Nfsstat3::Exist, self.wcc(dir, before))
            }
            // EXCLUSIVE succeeds again only for the same verifier (a retransmission).
            (Some(id), CreateHow3::Exclusive(v)) => {
                if self.inodes[&id].create_verf != Some(*v) {
                    return wcc_fail(Nfsstat3::Exist, self.wcc(dir, before));
                }
                id
            }
            (Some(id), CreateHow3::Unchecked(s)) => {
                if !matches!(self.inodes[&id].content, Content::File(_)) {
                    return wcc_fail(Nfsstat3::Exist, self.wcc(dir, before));
                }
                if let Err(status) = self.apply_sattr(id, s) {
                    return wcc_fail(status, self.wcc(dir, before));
                }
                id
            }
            (None, _) => {
                let id = match self.new_inode(Content::File(Vec::new()), &attrs, 0o644) {
                    Ok(id) => id,
                    Err(status) => return wcc_fail(status, self.wcc(dir, before)),
                };
                if let Some(n) = self.inodes.get_mut(&id) {
                    n.create_verf = verf;
                }
                if let Err(status) = self.link_into(dir, &a.where_.name, id) {
                    return wcc_fail(status, self.wcc(dir, before));
                }
                id
            }
        };
        NfsRes::Ok(DiropResOk {
            obj: Some(handle(id)),
            obj_attributes: Some(self.attr(id)),
            dir_wcc: self.wcc(dir, before),
        })
    }

    pub(super) fn make(
        &mut self,
        where_: &DirOpArgs3,
        content: Content,
        attrs: &Sattr3,
        default_mode: u32,
    ) -> NfsRes<DiropResOk, WccFail> {
        let dir = match self.id_of(&where_.dir) {
            Ok(id) => id,
            Err(status) => return wcc_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(dir);
        if let Err(status) = Self::check_name(&where_.name) {
            return wcc_fail(status, self.wcc(dir, before));
        }
        match self.dir(dir) {
            Ok(d) if d.contains_key(&where_.name.0) => {
                return wcc_fail(Nfsstat3::Exist, self.wcc(dir, before))
            }
            Ok(_) => {}
            Err(status) => return wcc_fail(status, self.wcc(dir, before)),
        }
        let is_dir = matches!(content, Content::Dir(_));
        let id = match self.new_inode(content, attrs, default_mode) {
            Ok(id) => id,
            Err(status) => return wcc_fail(status, self.wcc(dir, before)),
        };
        if let Err(status) = self.link_into(dir, &where_.name, id) {
            return wcc_fail(status, self.wcc(dir, before));
        }
        if is_dir {
            if let Some(n) = self.inodes.get_mut(&dir) {
                n.nlink += 1;
            }
        }
        NfsRes::Ok(DiropResOk {
            obj: Some(handle(id)),
            obj_attributes: Some(self.attr(id)),
            dir_wcc: self.wcc(dir, before),
        })
    }

    pub(super) fn remove(&mut self, object: &DirOpArgs3, want_dir: bool) -> RemoveRes {
        let dir = match self.id_of(&object.dir) {
            Ok(id) => id,
            Err(status) => return wcc_result_fail(status, WccData::none()),
        };
        let before = self.wcc_attr(dir);
        let target = match self.dir(dir) {
            Ok(d) => d.get(&object.name.0).copied(),
            Err(status) => return wcc_result_fail(status, self.wcc(dir, before)),
        };
        let Some(target) = target else {
            return wcc_result_fail(Nfsstat3::Noent, self.wcc(dir, before));
        };
        match (&self.inodes[&target].content, want_dir) {
            (Content::Dir(entries), true) => {
                if !entries.is_empty() {
                    return wcc_result_fail(Nfsstat3::Notempty, self.wcc(dir, before));
                }
                if let Some(n) = self.inodes.get_mut(&dir) {
                    n.nlink = n.nlink.saturating_sub(1);
                }
            }
            (_, true) => return wcc_result_fail(Nfsstat3::Notdir, self.wcc(dir, before)),
            (Content::Dir(_), false) => {
                return wcc_result_fail(Nfsstat3::Isdir, self.wcc(dir, before))
            }
            (_, false) => {}
        }
        self.unlink(dir, &object.name.0);
        NfsRes::Ok(WccResult {
            obj_wcc: self.wcc(dir, before),
        })
    }

    pub(super) fn rename(&mut self, a: &RenameArgs) -> RenameRes {
        let fail = |status, from: WccData, to: WccData| NfsRes::Fail {
            status,
            resfail: RenameResult {
                fromdir_wcc: from,
                todir_wcc: to,
            },
        };
        let (from_dir, to_dir) = match (self.id_of(&a.from.dir), self.id_of(&a.to.dir)) {
            (Ok(f), Ok(t)) => (f, t),
            (Err(s), _) | (_, Err(s)) => return fail(s, WccData::none(), WccData::none()),
        };
        let (before_from, before_to) = (self.wcc_attr(from_dir), self.wcc_attr(to_dir));
        let wccs = |fs: &Fs| (fs.wcc(from_dir, before_from), fs.wcc(to_dir, before_to));
        if let Err(status) = Self::check_name(&a.to.name) {
            let (f, t) = wccs(self);
            return fail(status, f, t);
        }
        let source = match self.dir(from_dir) {
            Ok(d) => d.get(&a.from.name.0).copied(),
            Err(status) => {
                let (f, t) = wccs(self);
                return fail(status, f, t);
            }
        };
        let Some(source) = source else {
            let (f, t) = wccs(self);
            return fail(Nfsstat3::Noent, f, t);
        };
        let existing = match self.dir(to_dir) {
            Ok(d) => d.get(&a.to.name.0).copied(),
            Err(status) => {
                let (f, t) = wccs(self);
                return fail(status, f, t);
            }
        };
        if existing == Some(source) {
            let (f, t) = wccs(self);
            return NfsRes::Ok(RenameResult {
                fromdir_wcc: f,
                todir_wcc: t,
            });
        }
        if let Some(victim) = existing {
            let source_is_dir = matches!(self.inodes[&source].content, Content::Dir(_));
            match &self.inodes[&victim].content {
                Content::Dir(entries) if !source_is_dir || !entries.is_empty() => {
                    let (f, t) = wccs(self);
                    return fail(Nfsstat3::Exist, f, t);
                }
                Content::Dir(_) => {}
                _ if source_is_dir => {
                    let (f, t) = wccs(self);
                    return fail(Nfsstat3::Notdir, f, t);
                }
                _ => {}
            }
            self.unlink(to_dir, &a.to.name.0);
        }
        if let Ok(d) = self.dir_mut(from_dir) {
            d.remove(&a.from.name.0);
        }
        if let Ok(d) = self.dir_mut(to_dir) {
            d.insert(a.to.name.0.clone(), source);
        }
        self.touch(from_dir);
        self.touch(to_dir);
        let (f, t) = wccs(self);
        NfsRes::Ok(RenameResult {
            fromdir_wcc: f,
            todir_wcc: t,
        })
    }

    pub(super) fn link(&mut self, a: &LinkArgs) -> LinkRes {
        let fail = |status, attrs, wcc| NfsRes::Fail {
            status,
            resfail: LinkResult {
                file_attributes: attrs,
                linkdir_wcc: wcc,
            },
        };
        let (file, dir) = match (self.id_of(&a.file), self.id_of(&a.link.dir)) {
            (Ok(f), Ok(d)) => (f, d),
            (Err(s), _) | (_, Err(s)) => return fail(s, None, WccData::none()),
        };
        let before = self.wcc_attr(dir);
        if matches!(self.inodes[&file].content, Content::Dir(_)) {
            return fail(
                Nfsstat3::Isdir,
                Some(self.attr(file)),
                self.wcc(dir, before),
            );
        }
        if let Err(status) = Self::check_name(&a.link.name) {
            return fail(status, Some(self.attr(file)), self.wcc(dir, before));
        }
        match self.dir(dir) {
            Ok(d) if d.contains_key(&a.link.name.0) => {
                return fail(
                    Nfsstat3::Exist,
                    Some(self.attr(file)),
                    self.wcc(dir, before),
                )
            }
            Ok(_) => {}
            Err(status) => return fail(status, Some(self.attr(file)), self.wcc(dir, before)),
        }
        if let Err(status) = self.link_into(dir, &a.link.name, file) {
            return fail(status, Some(self.attr(file)), self.wcc(dir, before));
        }
        let now = self.tick();
        if let Some(n) = self.inodes.get_mut(&file) {
            n.nlink += 1;
            n.ctime = now;
        }
        NfsRes::Ok(LinkResult {
            file_attributes: Some(self.attr(file)),
            linkdir_wcc: self.wcc(dir, before),
        })
    }
}

//! Inodes: created with their attributes, linked into and out of directories, freed with their last
//! link, resized and given new attributes (RFC 1813 sattr3 semantics).

use super::*;

impl Fs {
    pub(super) fn new_inode(
        &mut self,
        content: Content,
        attrs: &Sattr3,
        default_mode: u32,
    ) -> Res<u64> {
        if self.inodes.len() >= self.limits.max_inodes {
            return Err(Nfsstat3::Nospc);
        }
        let now = self.tick();
        let id = self.next_id;
        self.next_id += 1;
        let nlink = if matches!(content, Content::Dir(_)) {
            2
        } else {
            1
        };
        self.inodes.insert(
            id,
            Inode {
                content,
                mode: attrs.mode.unwrap_or(default_mode) & 0o7777,
                uid: attrs.uid.unwrap_or(0),
                gid: attrs.gid.unwrap_or(0),
                nlink,
                atime: now,
                mtime: now,
                ctime: now,
                create_verf: None,
            },
        );
        Ok(id)
    }

    pub(super) fn link_into(&mut self, dir: u64, name: &Filename, id: u64) -> Res<()> {
        self.dir_mut(dir)?.insert(name.0.clone(), id);
        self.touch(dir);
        Ok(())
    }

    pub(super) fn unlink(&mut self, dir: u64, name: &[u8]) {
        if let Ok(d) = self.dir_mut(dir) {
            if let Some(id) = d.remove(name) {
                self.drop_link(id);
            }
        }
        self.touch(dir);
    }

    pub(super) fn drop_link(&mut self, id: u64) {
        let gone = match self.inodes.get_mut(&id) {
            Some(n) if matches!(n.content, Content::Dir(_)) => true,
            Some(n) => {
                n.nlink = n.nlink.saturating_sub(1);
                n.nlink == 0
            }
            None => false,
        };
        if gone {
            if let Some(Inode {
                content: Content::File(data),
                ..
            }) = self.inodes.remove(&id)
            {
                self.total_bytes -= data.len() as u64;
            }
        }
    }

    pub(super) fn set_size(&mut self, id: u64, size: u64) -> Res<()> {
        if size > self.limits.max_file_bytes {
            return Err(Nfsstat3::Fbig);
        }
        let total = self.total_bytes;
        let limit = self.limits.max_total_bytes;
        let Some(Content::File(data)) = self.inodes.get_mut(&id).map(|n| &mut n.content) else {
            return Err(Nfsstat3::Inval);
        };
        let old = data.len() as u64;
        if size > old && total + (size - old) > limit {
            return Err(Nfsstat3::Nospc);
        }
        data.resize(size as usize, 0);
        self.total_bytes = total - old + size;
        Ok(())
    }

    pub(super) fn apply_sattr(&mut self, id: u64, attrs: &Sattr3) -> Res<()> {
        if let Some(size) = attrs.size {
            self.set_size(id, size)?;
        }
        let now = self.tick();
        let node = self.inodes.get_mut(&id).ok_or(Nfsstat3::Stale)?;
        if let Some(mode) = attrs.mode {
            node.mode = mode & 0o7777;
        }
        if let Some(uid) = attrs.uid {
            node.uid = uid;
        }
        if let Some(gid) = attrs.gid {
            node.gid = gid;
        }
        match attrs.atime {
            SetTime::DontChange => {}
            SetTime::SetToServerTime => node.atime = now,
            SetTime::SetToClientTime(t) => node.atime = t.seconds,
        }
        match attrs.mtime {
            SetTime::DontChange => {}
            SetTime::SetToServerTime => node.mtime = now,
            SetTime::SetToClientTime(t) => node.mtime = t.seconds,
        }
        node.ctime = now;
        Ok(())
    }
}

//! READDIR and READDIRPLUS: a directory's entries after a cookie, within the reply budget (RFC 1813
//! §3.3.16, §3.3.17).

use super::*;

impl Fs {
    /// Directory entries after `cookie` (cookies are 1-based entry indexes), bounded by `budget`
    /// bytes of XDR.
    pub(super) fn entries_after(
        &self,
        dir: u64,
        cookie: u64,
        budget: u32,
    ) -> Res<(Vec<DirEntry>, bool)> {
        let d = self.dir(dir)?;
        let mut out = Vec::new();
        let mut used = 0u64;
        let skip = usize::try_from(cookie).unwrap_or(usize::MAX);
        for (index, (name, id)) in d.iter().enumerate().skip(skip) {
            let cost = 24 + pad4(name.len()) as u64;
            if used + cost > u64::from(budget) {
                return Ok((out, false));
            }
            used += cost;
            out.push((*id, name.clone(), index as u64 + 1));
        }
        Ok((out, true))
    }

    pub(super) fn readdir(&mut self, a: &ReaddirArgs) -> ReaddirRes {
        let dir = match self.id_of(&a.dir) {
            Ok(id) => id,
            Err(status) => return fail_attr(status),
        };
        match self.entries_after(dir, a.cookie, a.count.saturating_sub(128)) {
            Ok((entries, eof)) => NfsRes::Ok(ReaddirResOk {
                dir_attributes: Some(self.attr(dir)),
                cookieverf: [0; 8],
                entries: entries
                    .into_iter()
                    .map(|(fileid, name, cookie)| Entry3 {
                        fileid,
                        name: Filename(name),
                        cookie,
                    })
                    .collect(),
                eof,
            }),
            Err(status) => fail_attr(status),
        }
    }

    pub(super) fn readdirplus(&mut self, a: &ReaddirplusArgs) -> ReaddirplusRes {
        let dir = match self.id_of(&a.dir) {
            Ok(id) => id,
            Err(status) => return fail_attr(status),
        };
        // Each entry also carries ~100 bytes of attributes and a handle.
        match self.entries_after(dir, a.cookie, a.maxcount.saturating_sub(128) / 5) {
            Ok((entries, eof)) => NfsRes::Ok(ReaddirplusResOk {
                dir_attributes: Some(self.attr(dir)),
                cookieverf: [0; 8],
                entries: entries
                    .into_iter()
                    .map(|(fileid, name, cookie)| Entryplus3 {
                        fileid,
                        name: Filename(name),
                        cookie,
                        name_attributes: Some(self.attr(fileid)),
                        name_handle: Some(handle(fileid)),
                    })
                    .collect(),
                eof,
            }),
            Err(status) => fail_attr(status),
        }
    }
}

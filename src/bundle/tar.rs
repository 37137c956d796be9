//! The `tar-ustar-v1` transport profile: a byte-exact ustar writer and a strict reader.
//!
//! Writer: members in path byte order, directories (typeflag 5, mode 0755, size 0, name
//! ending in `/`) and regular files (typeflag 0, mode 0644); uid, gid and mtime 0; magic
//! `ustar\0`, version `00`; link, owner, group and device fields all NUL; numbers as
//! zero-padded octal plus NUL (7 digits for mode, uid, gid; 11 for size and mtime); the
//! checksum as six octal digits, NUL, space; a long path split at the longest slash that
//! fits `prefix` (155) and `name` (100); payloads NUL-padded to 512 bytes; exactly two zero
//! blocks at the end. Reader: accepts exactly that, and nothing else (no links, devices,
//! PAX or GNU extensions, no member out of order, no bytes after the end).

use std::io::{self, Read, Write};

pub const BLOCK: usize = 512;

/// The bytes a member takes: its header and its padded payload.
pub fn member_size(payload: u64) -> u64 {
    BLOCK as u64 + payload.div_ceil(BLOCK as u64) * BLOCK as u64
}

/// The two zero blocks that end an archive.
pub const END: [u8; 2 * BLOCK] = [0; 2 * BLOCK];

/// Splits a path into ustar `(prefix, name)`; `None` when it fits neither way.
fn split(path: &str) -> Option<(&str, &str)> {
    if path.len() <= 100 {
        return Some(("", path));
    }
    path.char_indices()
        .filter(|(_, c)| *c == '/')
        .map(|(at, _)| (&path[..at], &path[at + 1..]))
        .filter(|(prefix, name)| prefix.len() <= 155 && name.len() <= 100 && !name.is_empty())
        .max_by_key(|(prefix, _)| prefix.len())
}

fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(text.as_bytes());
    field[digits] = 0;
}

/// The header of a file (`size` bytes) or, for a path ending in `/`, a directory.
pub fn header(path: &str, size: u64) -> Result<[u8; BLOCK], String> {
    let directory = path.ends_with('/');
    let (prefix, name) = split(path).ok_or_else(|| {
        format!("{path:?} does not fit a ustar header (name 100, prefix 155 bytes)")
    })?;
    if size >= 1 << 33 {
        return Err(format!("{path:?} is {size} bytes, beyond ustar's 8 GiB"));
    }
    let mut block = [0u8; BLOCK];
    block[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut block[100..108], if directory { 0o755 } else { 0o644 });
    octal(&mut block[108..116], 0);
    octal(&mut block[116..124], 0);
    octal(&mut block[124..136], if directory { 0 } else { size });
    octal(&mut block[136..148], 0);
    block[156] = if directory { b'5' } else { b'0' };
    block[257..263].copy_from_slice(b"ustar\0");
    block[263..265].copy_from_slice(b"00");
    block[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    block[148..156].copy_from_slice(b"        ");
    let sum: u32 = block.iter().map(|b| u32::from(*b)).sum();
    let text = format!("{sum:06o}");
    block[148..154].copy_from_slice(text.as_bytes());
    block[154] = 0;
    block[155] = b' ';
    Ok(block)
}

/// Writes the NUL padding after a payload of `size` bytes.
pub fn pad(out: &mut dyn Write, size: u64) -> io::Result<()> {
    let rest = (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64;
    out.write_all(&[0u8; BLOCK][..rest as usize])
}

/// One member as the reader found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub path: String,
    pub directory: bool,
    pub size: u64,
}

/// The path a header names, read leniently (for messages about a header that is refused).
pub fn path_of(block: &[u8; BLOCK]) -> String {
    let field = |range: std::ops::Range<usize>| {
        let bytes = &block[range];
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    };
    match field(345..500) {
        prefix if prefix.is_empty() => field(0..100),
        prefix => format!("{prefix}/{}", field(0..100)),
    }
}

/// Parses one header block; `Ok(None)` for a zero block.
pub fn parse_header(block: &[u8; BLOCK]) -> Result<Option<Member>, String> {
    if block.iter().all(|b| *b == 0) {
        return Ok(None);
    }
    let text = |range: std::ops::Range<usize>| -> Result<&str, String> {
        let field = &block[range];
        let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
        if field[end..].iter().any(|b| *b != 0) {
            return Err("a text field has bytes after its NUL padding".into());
        }
        std::str::from_utf8(&field[..end]).map_err(|_| "a path is not UTF-8".to_owned())
    };
    let number = |range: std::ops::Range<usize>, what: &str| -> Result<u64, String> {
        let field = &block[range];
        let (digits, last) = field.split_at(field.len() - 1);
        if last != [0] || !digits.iter().all(|b| (b'0'..=b'7').contains(b)) {
            return Err(format!(
                "the {what} field is not zero-padded octal digits and NUL"
            ));
        }
        Ok(
            u64::from_str_radix(std::str::from_utf8(digits).expect("octal digits"), 8)
                .expect("octal"),
        )
    };
    let mut summed = *block;
    summed[148..156].copy_from_slice(b"        ");
    let sum: u32 = summed.iter().map(|b| u32::from(*b)).sum();
    if block[148..156] != *format!("{sum:06o}\0 ").as_bytes() {
        return Err("the header checksum does not match (a damaged or altered header)".into());
    }
    if &block[257..263] != b"ustar\0" || &block[263..265] != b"00" {
        return Err("not a ustar header (magic ustar NUL, version 00)".into());
    }
    let typeflag = block[156];
    let directory = match typeflag {
        b'0' => false,
        b'5' => true,
        b'1' | b'2' => return Err("a link member (links are refused)".into()),
        b'3' | b'4' | b'6' => return Err("a device or FIFO member".into()),
        b'x' | b'g' | b'L' | b'K' => return Err("a PAX or GNU extension header".into()),
        other => {
            return Err(format!(
                "member type {:?} is not a file or a folder",
                other as char
            ));
        }
    };
    let mode = number(100..108, "mode")?;
    if mode != if directory { 0o755 } else { 0o644 } {
        return Err(format!("mode {mode:o} is not the profile's"));
    }
    if number(108..116, "uid")? != 0
        || number(116..124, "gid")? != 0
        || number(136..148, "mtime")? != 0
    {
        return Err("uid, gid and mtime must be 0".into());
    }
    let size = number(124..136, "size")?;
    if directory && size != 0 {
        return Err("a folder member has a size".into());
    }
    if block[157..257]
        .iter()
        .chain(&block[265..345])
        .chain(&block[500..])
        .any(|b| *b != 0)
    {
        return Err("link, owner, group, device or padding fields are not all NUL".into());
    }
    let name = text(0..100)?;
    let prefix = text(345..500)?;
    let path = if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    };
    if directory != path.ends_with('/') {
        return Err(format!("{path:?}: only a folder's name ends with /"));
    }
    Ok(Some(Member {
        path,
        directory,
        size,
    }))
}

/// Reads exactly one block, or fails on a short read.
pub fn read_block(input: &mut dyn Read) -> io::Result<[u8; BLOCK]> {
    let mut block = [0u8; BLOCK];
    input.read_exact(&mut block)?;
    Ok(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_and_long_paths_split_at_the_longest_boundary() {
        let long = format!("{}/{}/file.json", "a".repeat(90), "b".repeat(60));
        for (path, size) in [("top/", 0), ("top/x.json", 1234), (long.as_str(), 7)] {
            let block = header(path, size).unwrap();
            let member = parse_header(&block).unwrap().unwrap();
            assert_eq!(member.path, path);
            assert_eq!(member.size, size);
        }
        let (prefix, name) = split(&long).unwrap();
        assert_eq!(prefix.len(), 151, "the longest prefix that fits");
        assert_eq!(name, "file.json");
        assert!(header(&"n".repeat(101), 0).is_err(), "no slash to split at");
    }

    #[test]
    fn any_changed_header_byte_is_refused() {
        let block = header("top/x.json", 10).unwrap();
        for at in 0..BLOCK {
            let mut changed = block;
            changed[at] ^= 0x01;
            assert!(parse_header(&changed).is_err(), "byte {at}");
        }
    }
}

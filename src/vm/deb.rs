//! The kernel out of a Debian or Ubuntu `linux-image-*.deb`, without dpkg,
//! read only as far as the kernel.
//!
//! A `.deb` is an `ar(1)` archive: `debian-binary`, `control.tar.*` (the
//! package's name and dependencies), `data.tar.*` (the installed tree), in
//! that order (deb(5)). The kernel is `boot/vmlinuz-<release>` and its build
//! configuration `boot/config-<release>`; dpkg-deb writes the tree sorted, so
//! `boot/` comes long before the modules under `lib/`, and the data member is
//! decompressed only until both are out (under a second for a 70 MB package).
//!
//! # References
//! - deb(5): <https://manpages.debian.org/bookworm/dpkg-dev/deb.5.en.html>
//! - The `ar` format's member header: <https://www.freebsd.org/cgi/man.cgi?query=ar&sektion=5>

use crate::error::{Error, Result, usage};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// The kernel a package holds, extracted.
#[derive(Debug)]
pub struct Found {
    /// `boot/vmlinuz-<release>`, copied out.
    pub image: PathBuf,
    /// `boot/config-<release>`, when the package has it (Ubuntu ships it in
    /// linux-modules-*).
    pub config: Option<PathBuf>,
    /// `<release>`, from the image's name.
    pub release: String,
}

/// Extracts the kernel image (and its config) of `deb` into `scratch`.
/// Errors are one line, without the file's name (the caller adds it).
pub fn extract_kernel(deb: &Path, scratch: &Path) -> Result<Found> {
    let file = File::open(deb).map_err(Error::usage)?;
    let size = file.metadata().map_err(Error::usage)?.len();
    let mut ar = BufReader::new(file);
    let mut magic = [0u8; 8];
    if read_full(&mut ar, &mut magic).map_err(Error::usage)? < magic.len() || &magic != b"!<arch>\n"
    {
        return Err(Error::usage("not a .deb (no ar archive signature)"));
    }
    let mut offset = magic.len() as u64;
    let mut control = None;
    while let Some(member) = next_member(&mut ar, &mut offset)? {
        let ends = offset + member.size;
        if ends > size {
            return Err(usage!(
                "cut short: its {} member is {} bytes, the file holds {} of them",
                member.name,
                member.size,
                size.saturating_sub(offset)
            ));
        }
        if member.name.starts_with("data.tar") {
            return extract_from_data(&member.name, ar, member.size, scratch)
                .and_then(|found| found.ok_or_else(|| Error::Usage(no_kernel(control.as_ref()))));
        }
        let mut body = (&mut ar).take(member.size);
        if member.name.starts_with("control.tar") {
            control = Some(read_control(&member.name, &mut body)?);
        }
        io::copy(&mut body, &mut io::sink()).map_err(Error::usage)?;
        // Members start on even offsets.
        if member.size % 2 == 1 {
            read_full(&mut ar, &mut [0u8; 1]).map_err(Error::usage)?;
        }
        offset = ends + member.size % 2;
    }
    Err(Error::usage("not a .deb: no data.tar member"))
}

/// Why a package with no `boot/vmlinuz-*` cannot boot, naming the package
/// to pass instead when it is a meta package.
fn no_kernel(control: Option<&Control>) -> String {
    let Some(control) = control else {
        return "holds no boot/vmlinuz-*: pass a linux-image-* package".into();
    };
    match control
        .depends
        .iter()
        .find(|d| d.starts_with("linux-image-"))
    {
        Some(image) => format!(
            "holds no boot/vmlinuz-*: {} is a meta package; pass the package it depends on, \
             {image} (apt-get download {image})",
            control.package
        ),
        None => format!(
            "holds no boot/vmlinuz-* ({}): pass a linux-image-* package",
            control.package
        ),
    }
}

/// One ar member's header.
struct Member {
    name: String,
    size: u64,
}

/// Reads the next member header at `offset` (advanced past it); `None` at
/// the archive's end.
fn next_member(ar: &mut impl Read, offset: &mut u64) -> Result<Option<Member>> {
    let mut header = [0u8; 60];
    match read_full(ar, &mut header).map_err(Error::usage)? {
        0 => return Ok(None),
        60 => {}
        n => return Err(usage!("cut short: an ar member header of {n} of 60 bytes")),
    }
    *offset += 60;
    let text = |range: std::ops::Range<usize>| String::from_utf8_lossy(&header[range]).into_owned();
    if &header[58..60] != b"`\n" {
        return Err(usage!(
            "not a .deb: a damaged ar member header at byte {}",
            *offset - 60
        ));
    }
    // GNU ar ends names with '/'; dpkg-deb pads them with spaces.
    let name = text(0..16).trim_end().trim_end_matches('/').to_owned();
    let size = text(48..58)
        .trim()
        .parse()
        .map_err(|_| usage!("not a .deb: member {name:?} has no size"))?;
    Ok(Some(Member { name, size }))
}

/// Fills `buf` as far as the reader goes; the number of bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The package's name and what it depends on (control.tar's `./control`).
#[derive(Debug, Default)]
struct Control {
    package: String,
    depends: Vec<String>,
}

/// The control member is a few kilobytes: decompressed whole.
const CONTROL_LIMIT: u64 = 1 << 20;

fn read_control(name: &str, body: impl Read) -> Result<Control> {
    let mut packed = Vec::new();
    body.take(CONTROL_LIMIT)
        .read_to_end(&mut packed)
        .map_err(Error::usage)?;
    let tar = decompress_whole(name, &packed)?;
    let mut archive = tar::Archive::new(tar.as_slice());
    for entry in archive.entries().map_err(|e| usage!("{name}: {e}"))? {
        let mut entry = entry.map_err(|e| usage!("{name}: {e}"))?;
        let path = entry.path().map_err(Error::usage)?.into_owned();
        if path.strip_prefix("./").unwrap_or(&path) != Path::new("control") {
            continue;
        }
        let mut text = String::new();
        entry
            .read_to_string(&mut text)
            .map_err(|e| usage!("{name}: control: {e}"))?;
        return Ok(parse_control(&text));
    }
    Ok(Control::default())
}

/// `Package:` and the package names of `Depends:` (deb-control(5)).
fn parse_control(text: &str) -> Control {
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .map(str::trim)
            .unwrap_or_default()
    };
    let depends = field("Depends")
        .split([',', '|'])
        .filter_map(|d| d.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    Control {
        package: field("Package").to_owned(),
        depends,
    }
}

fn decompress_whole(name: &str, packed: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match compression(name)? {
        Compression::None => out.extend_from_slice(packed),
        Compression::Xz => lzma_rs::xz_decompress(&mut { packed }, &mut out)
            .map_err(|e| usage!("{name}: xz: {e}"))?,
        Compression::Zstd => {
            ruzstd::decoding::StreamingDecoder::new(packed)
                .map_err(|e| usage!("{name}: zstd: {e}"))?
                .read_to_end(&mut out)
                .map_err(|e| usage!("{name}: zstd: {e}"))?;
        }
    }
    Ok(out)
}

enum Compression {
    None,
    Xz,
    Zstd,
}

/// The member's compression, from its suffix: Debian's packages use xz,
/// Ubuntu's zstd.
fn compression(name: &str) -> Result<Compression> {
    match name.rsplit_once(".tar").map(|(_, suffix)| suffix) {
        Some("") => Ok(Compression::None),
        Some(".xz") => Ok(Compression::Xz),
        Some(".zst") => Ok(Compression::Zstd),
        _ => Err(usage!(
            "its {name} is compressed in a way read here only by dpkg (xz, zstd and none are \
             read here): extract boot/vmlinuz-* with `dpkg-deb -x` and pass the image"
        )),
    }
}

/// Walks the data member (`size` bytes at `ar`'s position) until the kernel
/// and its config are out; `None` when it holds no kernel.
fn extract_from_data(
    name: &str,
    ar: BufReader<File>,
    size: u64,
    scratch: &Path,
) -> Result<Option<Found>> {
    let body = ar.take(size);
    match compression(name)? {
        Compression::None => walk_data(name, body, scratch),
        Compression::Zstd => {
            let decoder = ruzstd::decoding::StreamingDecoder::new(body)
                .map_err(|e| usage!("{name}: zstd: {e}"))?;
            walk_data(name, decoder, scratch)
        }
        Compression::Xz => {
            // lzma-rs decodes into a writer: a thread feeds a pipe the walk
            // reads, and dropping the read end stops the thread (EPIPE).
            let (reader, mut writer) = io::pipe().map_err(Error::usage)?;
            let decoder = std::thread::spawn(move || {
                lzma_rs::xz_decompress(&mut BufReader::new(body), &mut writer)
            });
            let walked = walk_data(name, reader, scratch);
            let decoded = decoder
                .join()
                .map_err(|_| Error::usage("the xz decoder panicked"))?;
            match (walked, decoded) {
                (Ok(Some(found)), _) => Ok(Some(found)),
                // The decoder's error is the cause of the walk's.
                (_, Err(e)) => Err(usage!("{name}: xz: {e}")),
                (walked, Ok(())) => walked,
            }
        }
    }
}

fn walk_data(name: &str, tar: impl Read, scratch: &Path) -> Result<Option<Found>> {
    let boot = scratch.join("boot");
    std::fs::create_dir_all(&boot).map_err(|e| usage!("create {}: {e}", boot.display()))?;
    let mut archive = tar::Archive::new(tar);
    let mut image: Option<(PathBuf, String)> = None;
    let mut config = None;
    let bad = |e: io::Error| usage!("{name}: {e}");
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry.path().map_err(bad)?.into_owned();
        let path = path.strip_prefix("./").unwrap_or(&path);
        let in_boot = path.parent() == Some(Path::new("boot"));
        if image.is_some() && !path.starts_with("boot") {
            break; // Past boot/: no config in this package.
        }
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(file) = file.filter(|_| in_boot && entry.header().entry_type().is_file()) else {
            continue;
        };
        let (is_image, is_config) = (file.starts_with("vmlinuz-"), file.starts_with("config-"));
        if !(is_image && image.is_none() || is_config && config.is_none()) {
            continue;
        }
        let out = boot.join(&file);
        let mut dest = File::create(&out).map_err(|e| usage!("create {}: {e}", out.display()))?;
        io::copy(&mut entry, &mut dest).map_err(bad)?;
        if is_image {
            image = Some((out, file["vmlinuz-".len()..].to_owned()));
        } else {
            config = Some((out, file["config-".len()..].to_owned()));
        }
        if image.is_some() && config.is_some() {
            break;
        }
    }
    Ok(image.map(|(image, release)| Found {
        image,
        // The config of this image's release only.
        config: config.filter(|(_, r)| *r == release).map(|(c, _)| c),
        release,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meta_packages_control_names_the_image_package() {
        let control = parse_control(
            "Package: linux-image-cloud-amd64\nVersion: 6.1.192-3\n\
             Depends: linux-image-6.1.0-57-cloud-amd64 (= 6.1.192-3), foo | bar\n",
        );
        assert_eq!(control.package, "linux-image-cloud-amd64");
        assert_eq!(
            control.depends,
            ["linux-image-6.1.0-57-cloud-amd64", "foo", "bar"]
        );
        let why = no_kernel(Some(&control));
        assert!(
            why.contains("meta package") && why.contains("apt-get download linux-image-6.1.0-57"),
            "{why}"
        );
    }

    #[test]
    fn only_xz_zstd_and_plain_tar_are_read() {
        assert!(matches!(compression("data.tar.xz"), Ok(Compression::Xz)));
        assert!(matches!(compression("data.tar.zst"), Ok(Compression::Zstd)));
        assert!(matches!(compression("data.tar"), Ok(Compression::None)));
        let gz = compression("data.tar.gz").err().unwrap().to_string();
        assert!(gz.contains("dpkg-deb -x"), "{gz}");
    }
}

//! The results channel: the guest's results document, framed with its length
//! and a checksum, on the second serial port (ttyS1).
//!
//! The kernel's console is ttyS0 (`console=ttyS0`), so no kernel message is
//! ever written to ttyS1; the frame's length and checksum catch what the
//! channel itself may lose (a guest that dies mid-write, a port left in cooked
//! mode that rewrites `\n` as `\r\n`).

use crate::error::{Error, Result, failed};
use std::fmt::Write as _;

const HEADER: &str = "FDWINDOW-RESULTS v1";
const TRAILER: &[u8] = b"\nFDWINDOW-END\n";

/// FNV-1a, 64 bits (Fowler, Noll, Vo; <http://www.isthe.com/chongo/tech/comp/fnv/>):
/// a checksum and a cache key for inputs no one crafts against it.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }

    /// The hash of one byte string.
    pub fn of(bytes: &[u8]) -> u64 {
        let mut h = Fnv1a::default();
        h.update(bytes);
        h.finish()
    }
}

/// What the guest sent.
#[derive(Debug, PartialEq, Eq)]
pub struct Frame {
    /// `fdwindow run`'s exit status in the guest (0: every probe ran).
    pub status: i32,
    /// The results document (empty for a smoke boot).
    pub payload: Vec<u8>,
}

/// The bytes the guest writes for `frame`.
pub fn encode(frame: &Frame) -> Vec<u8> {
    let mut head = String::new();
    let _ = writeln!(
        head,
        "\n{HEADER} status={} len={} fnv1a64={:016x}",
        frame.status,
        frame.payload.len(),
        Fnv1a::of(&frame.payload)
    );
    let mut out = head.into_bytes();
    out.extend_from_slice(&frame.payload);
    out.extend_from_slice(TRAILER);
    out
}

/// A frame's header: what the guest said it sends.
struct Header {
    status: i32,
    len: usize,
    sum: u64,
    /// Where the payload starts in the bytes read.
    body: usize,
}

fn header(bytes: &[u8]) -> Result<Header> {
    let start = find(bytes, HEADER.as_bytes()).ok_or_else(|| {
        Error::failed("no results frame on the results port: the guest stopped before sending one")
    })?;
    let rest = &bytes[start + HEADER.len()..];
    let eol = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| Error::failed("results frame: header cut short"))?;
    let line = std::str::from_utf8(&rest[..eol])
        .map_err(|_| Error::failed("results frame: bad header"))?;
    let field = |name: &str| {
        line.split_ascii_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
            .ok_or_else(|| failed!("results frame: header lacks {name}: {line:?}"))
    };
    Ok(Header {
        status: field("status")?
            .parse()
            .map_err(|_| failed!("results frame: bad status in {line:?}"))?,
        len: field("len")?
            .parse()
            .map_err(|_| failed!("results frame: bad len in {line:?}"))?,
        sum: u64::from_str_radix(field("fnv1a64")?, 16)
            .map_err(|_| failed!("results frame: bad checksum in {line:?}"))?,
        body: start + HEADER.len() + eol + 1,
    })
}

/// How far a frame has come: bytes of its results document that arrived,
/// of those its header announced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Payload bytes that arrived.
    pub received: u64,
    /// Payload bytes the header announced.
    pub expected: u64,
}

/// The progress of the frame whose start is in `head` (the port's first
/// bytes) in a port of `total` bytes; `None` before its header is whole.
pub fn progress(head: &[u8], total: u64) -> Option<Progress> {
    let h = header(head).ok()?;
    let expected = h.len as u64;
    Some(Progress {
        received: total.saturating_sub(h.body as u64).min(expected),
        expected,
    })
}

/// The frame in what the host read from the port, or why there is none.
pub fn decode(bytes: &[u8]) -> Result<Frame> {
    let Header {
        status,
        len,
        sum,
        body,
    } = header(bytes)?;
    let body = &bytes[body..];
    // A damaged length may be near usize::MAX: compare without overflowing.
    if len
        .checked_add(TRAILER.len())
        .is_none_or(|need| body.len() < need)
    {
        return Err(failed!(
            "results frame cut short: {} of {len} bytes and the end marker arrived",
            body.len()
        ));
    }
    let payload = &body[..len];
    if &body[len..len + TRAILER.len()] != TRAILER {
        return Err(Error::failed(
            "results frame: no end marker after the declared length",
        ));
    }
    if Fnv1a::of(payload) != sum {
        return Err(Error::failed(
            "results frame: checksum mismatch: the document was damaged",
        ));
    }
    Ok(Frame {
        status,
        payload: payload.to_vec(),
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Frame {
        Frame {
            status: 1,
            payload: b"{\"schema\": 3,\n \"x\": \"FDWINDOW-END\"}\n".to_vec(),
        }
    }

    #[test]
    fn round_trip_with_noise_before() {
        let mut bytes = b"garbage\r\n".to_vec();
        bytes.extend(encode(&sample()));
        assert_eq!(decode(&bytes).unwrap(), sample());
    }

    #[test]
    fn fnv_matches_the_published_vectors() {
        assert_eq!(Fnv1a::of(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv1a::of(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv1a::of(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn damage_truncation_and_absence_are_errors() {
        let good = encode(&sample());
        let mut flipped = good.clone();
        let at = good.len() - TRAILER.len() - 3;
        flipped[at] ^= 0x20;
        assert!(
            decode(&flipped)
                .unwrap_err()
                .to_string()
                .contains("checksum")
        );
        let cut = &good[..good.len() - 5];
        assert!(decode(cut).unwrap_err().to_string().contains("cut short"));
        // A cooked port turns \n into \r\n: the length no longer lines up.
        let cooked: Vec<u8> = good
            .iter()
            .flat_map(|&b| {
                if b == b'\n' {
                    vec![b'\r', b'\n']
                } else {
                    vec![b]
                }
            })
            .collect();
        assert!(decode(&cooked).is_err());
        assert!(
            decode(b"")
                .unwrap_err()
                .to_string()
                .contains("no results frame")
        );
    }

    #[test]
    fn a_damaged_huge_length_is_an_error_not_a_panic() {
        let frame = format!(
            "\n{HEADER} status=0 len={} fnv1a64=0\n{{}}\nFDWINDOW-END\n",
            usize::MAX
        );
        assert!(
            decode(frame.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("cut short")
        );
        let empty = format!("\n{HEADER} status=0 len=0 fnv1a64=0\nFDWINDOW");
        assert!(
            decode(empty.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("cut short")
        );
    }

    #[test]
    fn progress_counts_the_payload_that_arrived() {
        let good = encode(&sample());
        let len = sample().payload.len() as u64;
        let body = good.len() as u64 - len - TRAILER.len() as u64;
        assert_eq!(progress(&good[..10], 10), None, "no whole header yet");
        let p = |total: u64| progress(&good, total).unwrap();
        assert_eq!(
            p(body),
            Progress {
                received: 0,
                expected: len
            }
        );
        assert_eq!(p(body + 7).received, 7);
        assert_eq!(
            p(good.len() as u64).received,
            len,
            "the trailer is not payload"
        );
    }
}

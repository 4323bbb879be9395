//! What an inline file is: magic-byte sniffing and image dimensions, from a small decoded prefix
//! plus, for JPEG, a walk over segment headers done in base64 space (a few characters decoded per
//! segment, the segment bodies skipped arithmetically).

use crate::scan::base64::{decode_small, Alphabet};

/// Characters of each inline file kept for sniffing and imagesize (48 decoded bytes: every
/// magic number and every header imagesize reads, except JPEG's, which is walked instead).
pub(crate) const PREFIX_CHARS: usize = 64;
const PREFIX_BYTES: usize = PREFIX_CHARS / 4 * 3;
/// A JPEG window covers decoded bytes [o, o+9): marker, length, and a SOF's height and width.
const WINDOW_BYTES: u64 = 9;
const WINDOW_CHARS: usize = 16;

/// Formats recognised by their magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Jpeg,
    Gif,
    Webp,
    Bmp,
    Pdf,
}

impl Format {
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Gif => "image/gif",
            Format::Webp => "image/webp",
            Format::Bmp => "image/bmp",
            Format::Pdf => "application/pdf",
        }
    }

    pub fn is_image(self) -> bool {
        !matches!(self, Format::Pdf)
    }

    /// The format a declared (normalized) media type names, with common aliases.
    pub fn from_media_type(t: &str) -> Option<Format> {
        Some(match t {
            "image/png" | "image/x-png" | "image/apng" => Format::Png,
            "image/jpeg" | "image/jpg" | "image/pjpeg" => Format::Jpeg,
            "image/gif" => Format::Gif,
            "image/webp" => Format::Webp,
            "image/bmp" | "image/x-bmp" | "image/x-ms-bmp" => Format::Bmp,
            "application/pdf" | "application/x-pdf" => Format::Pdf,
            _ => return None,
        })
    }
}

/// Sniff the magic bytes at the start of decoded content.
pub fn sniff(head: &[u8]) -> Option<Format> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(Format::Png)
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some(Format::Jpeg)
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(Format::Gif)
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some(Format::Webp)
    } else if head.len() >= 18
        && head.starts_with(b"BM")
        // "BM" alone is too weak (text can start with it): also require a known DIB header size.
        && matches!(u32::from_le_bytes([head[14], head[15], head[16], head[17]]), 12 | 40 | 52 | 56 | 64 | 108 | 124)
    {
        Some(Format::Bmp)
    } else if head.starts_with(b"%PDF-") {
        Some(Format::Pdf)
    } else {
        None
    }
}

/// Dimensions of an image held whole in `data` via imagesize, with BMP's signed height fixed.
pub fn image_dimensions(format: Format, data: &[u8]) -> Option<(u64, u64)> {
    if !format.is_image() {
        return None;
    }
    let size = imagesize::blob_size(data).ok()?;
    let (w, h) = (size.width as u64, size.height as u64);
    if format == Format::Bmp {
        // imagesize reads BMP's i32 height as u32; top-down bitmaps store it negative.
        let h = (h as u32 as i32).unsigned_abs() as u64;
        let w = (w as u32 as i32).unsigned_abs() as u64;
        return Some((w, h));
    }
    Some((w, h))
}

/// Outcome of the dimension probe for one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dims {
    /// Still looking.
    Pending,
    Found {
        width: u64,
        height: u64,
    },
    /// Not found: not an image, corrupt, truncated or past the probe budget.
    Unknown(UnknownWhy),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownWhy {
    NotAnImage,
    Unreadable,
    Budget,
}

/// Where the JPEG marker walk stands (decoded offsets), mirroring imagesize's parser so both
/// agree on every file.
#[derive(Debug, Clone, Copy)]
struct JpegWalk {
    offset: u64,
    depth: i32,
    segments: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Collecting the first PREFIX_CHARS characters.
    Prefix,
    /// Collecting the 16 characters that hold the next JPEG marker.
    Window,
    Done,
}

/// Per-file probe state: the raw prefix characters, then (for JPEG) one small window at a time.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    prefix: [u8; PREFIX_CHARS],
    prefix_len: usize,
    decoded: [u8; PREFIX_BYTES],
    decoded_len: usize,
    stage: Stage,
    pub sniffed: Option<Format>,
    /// Set once the prefix is decoded (or the file ended before it filled).
    pub sniff_ready: bool,
    pub dims: Dims,
    walk: JpegWalk,
    window: [u8; WINDOW_CHARS],
    window_start: u64,
    window_len: usize,
    window_decoded: [u8; 12],
    window_decoded_len: usize,
    budget: u64,
    max_segments: u32,
}

impl Probe {
    pub fn new() -> Self {
        Probe {
            prefix: [0; PREFIX_CHARS],
            prefix_len: 0,
            decoded: [0; PREFIX_BYTES],
            decoded_len: 0,
            stage: Stage::Prefix,
            sniffed: None,
            sniff_ready: false,
            dims: Dims::Pending,
            walk: JpegWalk {
                offset: 2,
                depth: 0,
                segments: 0,
            },
            window: [0; WINDOW_CHARS],
            window_start: 0,
            window_len: 0,
            window_decoded: [0; 12],
            window_decoded_len: 0,
            budget: 0,
            max_segments: 0,
        }
    }

    /// Start a new file (reuses the buffers). `budget`: decoded bytes the JPEG walk may look into.
    pub fn reset(&mut self, budget: u64, max_segments: u32) {
        self.prefix_len = 0;
        self.decoded_len = 0;
        self.stage = Stage::Prefix;
        self.sniffed = None;
        self.sniff_ready = false;
        self.dims = Dims::Pending;
        self.walk = JpegWalk {
            offset: 2,
            depth: 0,
            segments: 0,
        };
        self.window_len = 0;
        self.window_decoded_len = 0;
        self.budget = budget;
        self.max_segments = max_segments;
    }

    /// The character position where the caller must pause and call `at_stop`.
    pub fn next_stop(&self) -> Option<u64> {
        match self.stage {
            Stage::Prefix => Some(PREFIX_CHARS as u64),
            Stage::Window => Some(self.window_start + WINDOW_CHARS as u64),
            Stage::Done => None,
        }
    }

    /// Remember characters at string position `pos` (never beyond `next_stop`).
    pub fn capture(&mut self, pos: u64, s: &[u8]) {
        match self.stage {
            Stage::Prefix => {
                let n = (PREFIX_CHARS - self.prefix_len).min(s.len());
                self.prefix[self.prefix_len..self.prefix_len + n].copy_from_slice(&s[..n]);
                self.prefix_len += n;
            }
            Stage::Window => {
                let end = pos + s.len() as u64;
                let next = self.window_start + self.window_len as u64;
                if end > next && pos <= next {
                    let from = (next - pos) as usize;
                    let n = (s.len() - from).min(WINDOW_CHARS - self.window_len);
                    self.window[self.window_len..self.window_len + n]
                        .copy_from_slice(&s[from..from + n]);
                    self.window_len += n;
                }
            }
            Stage::Done => {}
        }
    }

    /// Everything up to `next_stop` has been captured and validated.
    pub fn at_stop(&mut self, alphabet: Alphabet) {
        self.step(alphabet, None);
    }

    /// The string ended; `decoded_size` is the file's exact size.
    pub fn finish(&mut self, alphabet: Alphabet, decoded_size: u64) {
        self.step(alphabet, Some(decoded_size));
        if self.dims == Dims::Pending {
            self.dims = Dims::Unknown(UnknownWhy::Unreadable);
        }
        self.stage = Stage::Done;
    }

    fn step(&mut self, alphabet: Alphabet, ended_at: Option<u64>) {
        match self.stage {
            Stage::Done => return,
            Stage::Prefix => {
                self.decoded_len = decode_small(
                    alphabet,
                    &self.prefix[..self.prefix_len],
                    &mut self.decoded[..],
                )
                .map_or(0, |d| d.len());
                let head = &self.decoded[..self.decoded_len];
                self.sniffed = sniff(head);
                self.sniff_ready = true;
                self.dims = match self.sniffed {
                    // imagesize reads 12 bytes to tell formats apart: a shorter file has no
                    // dimensions for it, and none here either.
                    Some(Format::Jpeg) if ended_at.is_some() && self.decoded_len < 12 => {
                        Dims::Unknown(UnknownWhy::Unreadable)
                    }
                    Some(Format::Jpeg) => Dims::Pending,
                    Some(f) if f.is_image() => match image_dimensions(f, head) {
                        Some((width, height)) => Dims::Found { width, height },
                        None => Dims::Unknown(UnknownWhy::Unreadable),
                    },
                    _ => Dims::Unknown(UnknownWhy::NotAnImage),
                };
                if self.dims != Dims::Pending {
                    self.stage = Stage::Done;
                    return;
                }
            }
            Stage::Window => {
                self.window_decoded_len = decode_small(
                    alphabet,
                    &self.window[..self.window_len],
                    &mut self.window_decoded,
                )
                .map_or(0, |d| d.len());
            }
        }
        self.walk_jpeg(alphabet, ended_at);
    }

    /// Up to 9 decoded bytes at `o`, from the prefix or the current window.
    fn bytes_at(&self, o: u64, n: u64) -> Option<[u8; WINDOW_BYTES as usize]> {
        let mut b = [0u8; WINDOW_BYTES as usize];
        if o + n <= self.decoded_len as u64 {
            b[..n as usize].copy_from_slice(&self.decoded[o as usize..(o + n) as usize]);
            return Some(b);
        }
        if self.stage == Stage::Window {
            let base = self.window_start / 4 * 3;
            if o >= base && o + n <= base + self.window_decoded_len as u64 {
                let from = (o - base) as usize;
                b[..n as usize].copy_from_slice(&self.window_decoded[from..from + n as usize]);
                return Some(b);
            }
        }
        None
    }

    fn walk_jpeg(&mut self, alphabet: Alphabet, ended_at: Option<u64>) {
        loop {
            let w = self.walk;
            let o = w.offset;
            if o.saturating_add(WINDOW_BYTES) > self.budget || w.segments >= self.max_segments {
                return self.give_up(UnknownWhy::Budget);
            }
            // Near the end of the file a marker may have fewer than 9 bytes after it.
            let want = match ended_at {
                Some(end) => WINDOW_BYTES.min(end.saturating_sub(o)),
                None => WINDOW_BYTES,
            };
            let Some(b) = self.bytes_at(o, want) else {
                if ended_at.is_some() {
                    return self.give_up(UnknownWhy::Unreadable);
                }
                // Retarget the window at this marker, reusing characters already captured.
                let start = o / 3 * 4;
                let mut window = [0u8; WINDOW_CHARS];
                let mut len = 0;
                let known_end = match self.stage {
                    Stage::Prefix => self.prefix_len as u64,
                    _ => self.window_start + self.window_len as u64,
                };
                if start < known_end {
                    let n = (known_end - start).min(WINDOW_CHARS as u64) as usize;
                    if self.stage == Stage::Prefix {
                        window[..n]
                            .copy_from_slice(&self.prefix[start as usize..start as usize + n]);
                    } else {
                        let from = (start - self.window_start) as usize;
                        window[..n].copy_from_slice(&self.window[from..from + n]);
                    }
                    len = n;
                }
                self.window = window;
                self.window_start = start;
                self.window_len = len;
                self.window_decoded_len = 0;
                self.stage = Stage::Window;
                if len == WINDOW_CHARS {
                    self.window_decoded_len =
                        decode_small(alphabet, &self.window, &mut self.window_decoded)
                            .map_or(0, |d| d.len());
                    // A full window that still lacks the bytes ends in padding: the file ends
                    // before the marker does (and looping here would never end).
                    if self.bytes_at(o, want).is_none() {
                        return self.give_up(UnknownWhy::Unreadable);
                    }
                    continue;
                }
                return;
            };
            if want < 2 || b[0] != 0xFF {
                return self.give_up(UnknownWhy::Unreadable);
            }
            let m = b[1];
            let sof = matches!(m, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF);
            let mut depth = w.depth;
            if sof && depth == 0 {
                if want < 9 {
                    return self.give_up(UnknownWhy::Unreadable);
                }
                let height = u16::from_be_bytes([b[5], b[6]]) as u64;
                let width = u16::from_be_bytes([b[7], b[8]]) as u64;
                self.dims = Dims::Found { width, height };
                self.stage = Stage::Done;
                return;
            } else if m == 0xD8 {
                depth += 1;
            } else if m == 0xD9 {
                depth -= 1;
                if depth < 0 {
                    return self.give_up(UnknownWhy::Unreadable);
                }
            }
            if want < 4 {
                return self.give_up(UnknownWhy::Unreadable);
            }
            let len = u16::from_be_bytes([b[2], b[3]]) as u64;
            self.walk = JpegWalk {
                offset: o + 2 + len,
                depth,
                segments: w.segments + 1,
            };
        }
    }

    fn give_up(&mut self, why: UnknownWhy) {
        self.dims = Dims::Unknown(why);
        self.stage = Stage::Done;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_magic_bytes() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some(Format::Png));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0"), Some(Format::Jpeg));
        assert_eq!(sniff(b"GIF89a.."), Some(Format::Gif));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(Format::Webp));
        assert_eq!(
            sniff(b"BM\0\0\0\0\0\0\0\0\0\0\0\0\x28\0\0\0"),
            Some(Format::Bmp)
        );
        assert_eq!(sniff(b"BMW makes cars, and this is text"), None);
        assert_eq!(sniff(b"%PDF-1.7"), Some(Format::Pdf));
        assert_eq!(sniff(b"hello"), None);
        assert_eq!(sniff(b""), None);
        assert_eq!(Format::from_media_type("image/jpg"), Some(Format::Jpeg));
        assert_eq!(Format::from_media_type("text/plain"), None);
    }
}

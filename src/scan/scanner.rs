//! The streaming JSON state machine and the checks it drives.
//!
//! Outside strings it walks byte by byte (structure is short); inside strings it jumps with
//! memchr2 to the next `"` or `\`, and inside base64 strings it validates whole blocks with
//! base64-simd (a block that fails is re-examined with memchr2 to find where the string ends).
//! A body known to be whole in its first chunk is walked by `whole.rs` over the same steps.

use std::sync::Arc;

use memchr::memchr2;
use serde_json::Value;

use crate::scan::base64::Base64Run;
use crate::scan::media::{Dims, Format, Probe};
use crate::scan::policy::{media_type_essence, Policy, TypeInfo};
use crate::scan::skip::{skip_container, Expect, Skipped, Stop};
use crate::scan::verdict::{human_bytes, Amount, Reason, Violation, ViolationData};
use crate::scan::{BodyShape, SniffMode, SniffWarning, Summary, UnknownDimensions};

mod whole;

/// Objects tracked semantically: root(1) params(2) message(3) parts(4) part(5) file(6).
const TRACKED: usize = 8;
/// Longest key worth matching (`file_with_bytes` is 15).
const KEY_CAP: usize = 24;
/// Longest media type, filename or method kept for messages and matching.
const CAPTURE_CAP: usize = 256;
/// Longest JSON-RPC id echoed back (longer ids are answered with `null`).
const ID_CAP: usize = 256;
/// Base64 validated optimistically in blocks of this size (a multiple of 4).
const BLOCK: usize = 32 * 1024;
const MAX_SNIFF_WARNINGS: usize = 16;
/// Longest media type kept; longer ones cannot name a real type and are judged as cut.
const TYPE_CAP: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Value,
    ArrayFirst,
    ObjectFirst,
    Key,
    Colon,
    After,
    Str,
    Lit,
    /// Inside a number; its sub-state is `Scanner::num`.
    Num,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    None,
    Backslash,
    Hex { n: u8, acc: u32 },
    LowBackslash { hi: u32 },
    LowU { hi: u32 },
    LowHex { hi: u32, n: u8, acc: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Skip,
    Root,
    Params,
    Message,
    Parts(ArrayName),
    Part,
    File,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArrayName {
    Parts,
    Content,
}

impl ArrayName {
    fn as_str(self) -> &'static str {
        match self {
            ArrayName::Parts => "parts",
            ArrayName::Content => "content",
        }
    }
}

/// Every key the scanner cares about; aliases (JSON and proto names) share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Key {
    Jsonrpc,
    Id,
    Method,
    Params,
    Message,
    Parts,
    Content,
    Kind,
    Text,
    Raw,
    Url,
    Data,
    MediaType,
    Filename,
    File,
    Metadata,
    Bytes,
    Uri,
    FileWithBytes,
    FileWithUri,
    MimeType,
    Name,
}

impl Key {
    fn bit(self) -> u32 {
        1 << (self as u8)
    }

    /// The JSON name (for paths and messages).
    fn json_name(self) -> &'static str {
        match self {
            Key::Jsonrpc => "jsonrpc",
            Key::Id => "id",
            Key::Method => "method",
            Key::Params => "params",
            Key::Message => "message",
            Key::Parts => "parts",
            Key::Content => "content",
            Key::Kind => "kind",
            Key::Text => "text",
            Key::Raw => "raw",
            Key::Url => "url",
            Key::Data => "data",
            Key::MediaType => "mediaType",
            Key::Filename => "filename",
            Key::File => "file",
            Key::Metadata => "metadata",
            Key::Bytes => "bytes",
            Key::Uri => "uri",
            Key::FileWithBytes => "fileWithBytes",
            Key::FileWithUri => "fileWithUri",
            Key::MimeType => "mimeType",
            Key::Name => "name",
        }
    }

    fn proto_alias(self) -> Option<&'static str> {
        match self {
            Key::MediaType => Some("media_type"),
            Key::Message => Some("request"),
            Key::FileWithBytes => Some("file_with_bytes"),
            Key::FileWithUri => Some("file_with_uri"),
            Key::MimeType => Some("mime_type"),
            _ => None,
        }
    }
}

const PART_CONTENT: u32 = (1 << Key::Text as u8)
    | (1 << Key::Raw as u8)
    | (1 << Key::Url as u8)
    | (1 << Key::Data as u8)
    | (1 << Key::File as u8);
const FILE_CONTENT: u32 = (1 << Key::Bytes as u8)
    | (1 << Key::Uri as u8)
    | (1 << Key::FileWithBytes as u8)
    | (1 << Key::FileWithUri as u8);

/// A key of up to 16 bytes as one integer, so matching is a compare, not a memcmp.
const fn pack(k: &[u8]) -> u128 {
    let mut v = 0u128;
    let mut i = 0;
    while i < k.len() && i < 16 {
        v |= (k[i] as u128) << (8 * i);
        i += 1;
    }
    v
}

fn lookup_key(ctx: Ctx, shape: BodyShape, k: &[u8]) -> Option<Key> {
    if k.is_empty() || k.len() > 16 {
        return None;
    }
    let mut buf = [0u8; 16];
    buf[..k.len()].copy_from_slice(k);
    lookup_packed(ctx, shape, u128::from_le_bytes(buf))
}

/// `lookup_key` on a key already packed (1 to 16 bytes, zero above them).
#[inline(always)]
fn lookup_packed(ctx: Ctx, shape: BodyShape, v: u128) -> Option<Key> {
    const JSONRPC: u128 = pack(b"jsonrpc");
    const ID: u128 = pack(b"id");
    const METHOD: u128 = pack(b"method");
    const PARAMS: u128 = pack(b"params");
    const MESSAGE: u128 = pack(b"message");
    const REQUEST: u128 = pack(b"request");
    const PARTS: u128 = pack(b"parts");
    const CONTENT: u128 = pack(b"content");
    const KIND: u128 = pack(b"kind");
    const TEXT: u128 = pack(b"text");
    const RAW: u128 = pack(b"raw");
    const URL: u128 = pack(b"url");
    const DATA: u128 = pack(b"data");
    const MEDIA_TYPE: u128 = pack(b"mediaType");
    const MEDIA_TYPE_P: u128 = pack(b"media_type");
    const FILENAME: u128 = pack(b"filename");
    const FILE: u128 = pack(b"file");
    const METADATA: u128 = pack(b"metadata");
    const BYTES: u128 = pack(b"bytes");
    const URI: u128 = pack(b"uri");
    const FILE_WITH_BYTES: u128 = pack(b"fileWithBytes");
    const FILE_WITH_BYTES_P: u128 = pack(b"file_with_bytes");
    const FILE_WITH_URI: u128 = pack(b"fileWithUri");
    const FILE_WITH_URI_P: u128 = pack(b"file_with_uri");
    const MIME_TYPE: u128 = pack(b"mimeType");
    const MIME_TYPE_P: u128 = pack(b"mime_type");
    const NAME: u128 = pack(b"name");
    // Keys never hold NUL raw, and `\u0000` makes a different (longer) key, so packing is exact.
    // Context first: each arm then compares against a handful of names only.
    Some(match ctx {
        Ctx::Root => {
            let rpc = shape == BodyShape::JsonRpc;
            match v {
                JSONRPC if rpc => Key::Jsonrpc,
                ID if rpc => Key::Id,
                METHOD if rpc => Key::Method,
                PARAMS if rpc => Key::Params,
                MESSAGE if !rpc => Key::Message,
                // v0.3 REST: `message` is the JSON name of the proto field `request`, and the
                // agent's ProtoJSON parser accepts both.
                REQUEST if !rpc => Key::Message,
                _ => return None,
            }
        }
        Ctx::Params => match v {
            MESSAGE => Key::Message,
            _ => return None,
        },
        Ctx::Message => match v {
            PARTS => Key::Parts,
            CONTENT => Key::Content,
            _ => return None,
        },
        Ctx::Part => match v {
            KIND => Key::Kind,
            TEXT => Key::Text,
            RAW => Key::Raw,
            URL => Key::Url,
            DATA => Key::Data,
            MEDIA_TYPE | MEDIA_TYPE_P => Key::MediaType,
            FILENAME => Key::Filename,
            FILE => Key::File,
            METADATA => Key::Metadata,
            _ => return None,
        },
        Ctx::File => match v {
            BYTES => Key::Bytes,
            URI => Key::Uri,
            FILE_WITH_BYTES | FILE_WITH_BYTES_P => Key::FileWithBytes,
            FILE_WITH_URI | FILE_WITH_URI_P => Key::FileWithUri,
            MIME_TYPE | MIME_TYPE_P => Key::MimeType,
            NAME => Key::Name,
            _ => return None,
        },
        Ctx::Skip | Ctx::Parts(_) => return None,
    })
}

/// The keys of which an object may hold only one (a part's content, a file's content).
#[inline(always)]
fn one_of(ctx: Ctx) -> u32 {
    match ctx {
        Ctx::Part => PART_CONTENT,
        Ctx::File => FILE_CONTENT,
        _ => 0,
    }
}

/// What the value of a known key means in its object.
#[inline(always)]
fn role_for(ctx: Ctx, key: Key) -> Role {
    match (ctx, key) {
        (Ctx::Root, Key::Id) => Role::Id,
        (Ctx::Root, Key::Method) => Role::Method,
        (Ctx::Root, Key::Params) => Role::Params,
        (Ctx::Root | Ctx::Params, Key::Message) => Role::Message,
        (Ctx::Message, Key::Parts) => Role::Parts(ArrayName::Parts),
        (Ctx::Message, Key::Content) => Role::Parts(ArrayName::Content),
        (Ctx::Part, Key::Text) => Role::Text,
        (Ctx::Part, Key::Raw) => Role::Inline(Key::Raw),
        (Ctx::Part, Key::Url) => Role::Reference(Key::Url),
        (Ctx::Part, Key::MediaType) => Role::PartMediaType,
        (Ctx::Part, Key::Filename) => Role::Filename,
        (Ctx::Part, Key::File) => Role::File,
        (Ctx::File, Key::Bytes | Key::FileWithBytes) => Role::Inline(key),
        (Ctx::File, Key::Uri | Key::FileWithUri) => Role::Reference(key),
        (Ctx::File, Key::MimeType) => Role::FileMimeType,
        (Ctx::File, Key::Name) => Role::Filename,
        _ => Role::Skip,
    }
}

/// A string kept inline, without allocating; longer input is cut (at a character boundary).
#[derive(Debug, Clone, Copy)]
struct Small<const N: usize> {
    buf: [u8; N],
    len: usize,
    cut: bool,
}

impl<const N: usize> Small<N> {
    const fn new() -> Self {
        Small {
            buf: [0; N],
            len: 0,
            cut: false,
        }
    }

    fn clear(&mut self) {
        self.len = 0;
        self.cut = false;
    }

    fn push(&mut self, s: &[u8]) {
        let room = N - self.len;
        let take = if s.len() > room {
            self.cut = true;
            let mut t = room;
            while t > 0 && (s[t] & 0xC0) == 0x80 {
                t -= 1;
            }
            t
        } else {
            s.len()
        };
        self.buf[self.len..self.len + take].copy_from_slice(&s[..take]);
        self.len += take;
    }

    /// Copy another's content (only its used bytes, not the whole buffer).
    fn assign<const M: usize>(&mut self, o: &Small<M>) {
        self.clear();
        self.push(o.bytes());
        self.cut |= o.cut;
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn as_str(&self) -> &str {
        let b = &self.buf[..self.len];
        match std::str::from_utf8(b) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or(""),
        }
    }
}

/// `type/subtype` lowercased, parameters dropped, into `out` (written in place: no buffer moves
/// per part); false when it is not a media type.
fn normalize_type(b: &[u8], out: &mut Small<TYPE_CAP>) -> bool {
    out.clear();
    // Already normal (the usual case): nothing to cut, trim or lowercase.
    // Whitespace is all at or below b' ' (bytes there that are not whitespace just take the
    // general path).
    let plain = b.len() <= TYPE_CAP
        && b.iter().fold(true, |ok, &c| {
            ok & (c > b' ' && c != b';' && !c.is_ascii_uppercase())
        });
    if plain {
        if let Some(slash) = b.iter().position(|&c| c == b'/') {
            if slash > 0 && slash + 1 < b.len() {
                out.push(b);
                return true;
            }
        }
    }
    let Some((t, st)) = media_type_essence(b) else {
        return false;
    };
    out.push(t);
    out.push(b"/");
    out.push(st);
    out.buf[..out.len].make_ascii_lowercase();
    true
}

/// A JSON-RPC id that is a plain integer, without a trip through serde_json.
fn parse_id_number(text: &str) -> Option<Value> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if !digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<i64>().ok().map(Value::from);
    }
    serde_json::from_str::<Value>(text).ok()
}

/// What the value about to start means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Skip,
    Root,
    Id,
    Method,
    Params,
    Message,
    Parts(ArrayName),
    PartElement,
    File,
    Text,
    Inline(Key),
    Reference(Key),
    PartMediaType,
    FileMimeType,
    Filename,
}

/// What the string being read is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrRole {
    Key,
    /// A key inside an object nobody looks into: validate only.
    SkipKey,
    Skip,
    Capture,
    Text,
    Inline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CaptureFor {
    Method,
    Id,
    PartMediaType,
    FileMimeType,
    Filename,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    None,
    Inline { field: Key, ended: bool, size: u64 },
    Reference,
    Text,
}

/// The part being read. Declared types: [part `mediaType`, file `mimeType`], normalized.
#[derive(Debug)]
struct PartState {
    index: u64,
    array: ArrayName,
    /// Valid where `typed` says so (kept apart so a new part does not move the buffers).
    types: [Small<TYPE_CAP>; 2],
    typed: [bool; 2],
    /// Per declared type, and for the sniffed type once the part ended: the policy's view.
    info: [Option<TypeInfo>; 3],
    mode_checked: [bool; 2],
    filename: Small<CAPTURE_CAP>,
    named: bool,
    content: Content,
    sniff_warned: bool,
}

impl PartState {
    fn new() -> Self {
        PartState {
            index: 0,
            array: ArrayName::Parts,
            types: [Small::new(); 2],
            typed: [false; 2],
            info: [None; 3],
            mode_checked: [false; 2],
            filename: Small::new(),
            named: false,
            content: Content::None,
            sniff_warned: false,
        }
    }
}

impl PartState {
    fn type_at(&self, slot: usize) -> Option<&Small<TYPE_CAP>> {
        self.typed[slot].then_some(&self.types[slot])
    }

    fn filename(&self) -> Option<&Small<CAPTURE_CAP>> {
        self.named.then_some(&self.filename)
    }
}

/// Streams one request body through the policy. One per request; bounded memory.
pub struct Scanner {
    policy: Arc<Policy>,
    shape: BodyShape,
    /// Body offset of the chunk being fed.
    base: u64,
    state: Lex,
    num: Num,
    depth: u32,
    /// Bit d set: the container at depth d is an object.
    kinds: [u64; 16],
    ctx: [Ctx; TRACKED],
    seen: [u32; TRACKED],
    elements: [u64; TRACKED],
    key: Option<Key>,
    pending: Role,
    // strings
    str_role: StrRole,
    esc: Esc,
    utf8: [u8; 4],
    utf8_len: u8,
    keybuf: [u8; KEY_CAP],
    key_len: usize,
    key_long: bool,
    capture: Small<ID_CAP>,
    capture_for: CaptureFor,
    lit: &'static [u8],
    lit_pos: u8,
    num_capture: bool,
    // request facts
    method: Option<Small<CAPTURE_CAP>>,
    id: Option<Value>,
    // the part being read
    part: PartState,
    in_part: bool,
    b64: Base64Run,
    probe: Probe,
    text_chars: u64,
    text_bytes: u64,
    text_buf: Vec<u8>,
    text_overflow: bool,
    // totals
    inline_done: u64,
    summary: Summary,
    failed: Option<Violation>,
    /// The body's length, when the caller knows it in advance.
    expected_len: Option<u64>,
}

/// Internally a violation travels boxed: results stay one word wide on the hot path.
type Res<T = ()> = Result<T, Box<Violation>>;

fn fail<T>(v: Violation) -> Res<T> {
    Err(Box::new(v))
}

impl Scanner {
    pub fn new(policy: Arc<Policy>, shape: BodyShape) -> Self {
        Scanner {
            policy,
            shape,
            base: 0,
            state: Lex::Value,
            num: Num::Zero,
            depth: 0,
            kinds: [0; 16],
            ctx: [Ctx::Skip; TRACKED],
            seen: [0; TRACKED],
            elements: [0; TRACKED],
            key: None,
            pending: Role::Root,
            str_role: StrRole::Skip,
            esc: Esc::None,
            utf8: [0; 4],
            utf8_len: 0,
            keybuf: [0; KEY_CAP],
            key_len: 0,
            key_long: false,
            capture: Small::new(),
            capture_for: CaptureFor::Method,
            lit: b"",
            lit_pos: 0,
            num_capture: false,
            method: None,
            id: None,
            part: PartState::new(),
            in_part: false,
            b64: Base64Run::new(),
            probe: Probe::new(),
            text_chars: 0,
            text_bytes: 0,
            text_buf: Vec::new(),
            text_overflow: false,
            inline_done: 0,
            summary: Summary::default(),
            failed: None,
            expected_len: None,
        }
    }

    /// The body's length, when known before it arrives (`Content-Length`). A first chunk that
    /// is the whole body is then walked in one recursive pass (`scanner/whole.rs`) instead of
    /// the byte-driven state machine: the same verdicts, in less time. Without it, or when
    /// the body comes in pieces, every body takes the state machine.
    pub fn expect_len(&mut self, len: u64) {
        self.expected_len = Some(len);
    }

    /// The JSON-RPC `id`, once seen (ids longer than 256 bytes are not kept).
    pub fn request_id(&self) -> Option<&Value> {
        self.id.as_ref()
    }

    /// The JSON-RPC `method`, once seen (at most 256 bytes kept).
    pub fn method(&self) -> Option<&str> {
        self.method.as_ref().map(Small::as_str)
    }

    pub fn bytes_scanned(&self) -> u64 {
        self.summary.bytes
    }

    /// Feed the next piece of the body; `Err` as soon as a violation is certain (and again on
    /// every later call).
    // The contract hands the violation over by value; it happens at most once per request.
    #[allow(clippy::result_large_err)]
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Violation> {
        if let Some(v) = &self.failed {
            return Err(v.clone());
        }
        // The whole body in hand at once, and small enough that giving up costs little.
        let whole = self.base == 0
            && self.expected_len == Some(chunk.len() as u64)
            && !chunk.is_empty()
            && chunk.len() <= whole::WHOLE_MAX
            && self.scan_whole(chunk);
        let r = if whole {
            Ok(())
        } else {
            self.feed_inner(chunk)
        };
        self.base += chunk.len() as u64;
        self.summary.bytes = self.base;
        r.map_err(|v| {
            self.failed = Some((*v).clone());
            *v
        })
    }

    /// End of the body. A body cut short is a parse error.
    #[allow(clippy::result_large_err)]
    pub fn finish(&mut self) -> Result<Summary, Violation> {
        if let Some(v) = &self.failed {
            return Err(v.clone());
        }
        match self.finish_inner() {
            Ok(()) => Ok(self.summary.clone()),
            Err(v) => {
                self.failed = Some((*v).clone());
                Err(*v)
            }
        }
    }

    fn finish_inner(&mut self) -> Res {
        match self.state {
            Lex::Done => Ok(()),
            Lex::Num
                if self.depth == 0
                    && matches!(self.num, Num::Zero | Num::Int | Num::Frac | Num::Exp) =>
            {
                self.end_number()?;
                Ok(())
            }
            Lex::Value if self.depth == 0 => fail(self.parse_error(self.base, "the body is empty")),
            _ => {
                fail(self.parse_error(self.base, "the body ends before the JSON value is complete"))
            }
        }
    }

    fn feed_inner(&mut self, c: &[u8]) -> Res {
        let mut i = 0;
        while i < c.len() {
            if self.state == Lex::Str {
                i = self.string_body(c, i)?;
                continue;
            }
            let b = c[i];
            match self.state {
                Lex::Value | Lex::ArrayFirst => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b == b']' && self.state == Lex::ArrayFirst {
                        self.close(b']', i)?;
                    } else {
                        if b == b'"' {
                            if let Some(next) = self.fast_value_string(c, i + 1)? {
                                i = next;
                                continue;
                            }
                        }
                        if let Some(end) = self.fast_skip(c, i) {
                            i = end;
                            continue;
                        }
                        self.start_value(b, i)?;
                    }
                }
                Lex::ObjectFirst | Lex::Key => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b == b'"' {
                        if let Some(next) = self.fast_key(c, i + 1)? {
                            i = next;
                            continue;
                        }
                        self.start_key();
                    } else if b == b'}' && self.state == Lex::ObjectFirst {
                        self.close(b'}', i)?;
                    } else {
                        return fail(
                            self.parse_error(self.at(i), "expected a key in double quotes"),
                        );
                    }
                }
                Lex::Colon => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b != b':' {
                        return fail(self.parse_error(self.at(i), "expected ':' after a key"));
                    }
                    self.state = Lex::Value;
                    // Most values follow the colon directly: start them without another dispatch.
                    if let Some(&next) = c.get(i + 1) {
                        if next == b'"' {
                            if let Some(after) = self.fast_value_string(c, i + 2)? {
                                i = after;
                                continue;
                            }
                        }
                        if !is_ws(next) {
                            i += 1;
                            if let Some(end) = self.fast_skip(c, i) {
                                i = end;
                                continue;
                            }
                            self.start_value(next, i)?;
                        }
                    }
                }
                Lex::After => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    match b {
                        b',' => {
                            if self.top_is_object() {
                                self.state = Lex::Key;
                                if c.get(i + 1) == Some(&b'"') {
                                    i += 1;
                                    if let Some(next) = self.fast_key(c, i + 1)? {
                                        i = next;
                                        continue;
                                    }
                                    self.start_key();
                                }
                            } else {
                                self.state = Lex::Value;
                                self.next_element();
                            }
                        }
                        b'}' | b']' => self.close(b, i)?,
                        _ => {
                            return fail(self.parse_error(
                                self.at(i),
                                "expected ',' or the end of the object or array",
                            ))
                        }
                    }
                }
                Lex::Lit => {
                    // The rest of the literal whole in this chunk: one compare.
                    let rest = &self.lit[self.lit_pos as usize..];
                    if c[i..].starts_with(rest) {
                        i += rest.len();
                        self.value_done();
                        continue;
                    }
                    if b != self.lit[self.lit_pos as usize] {
                        return fail(self.parse_error(
                            self.at(i),
                            "invalid literal (expected true, false or null)",
                        ));
                    }
                    self.lit_pos += 1;
                    if self.lit_pos as usize == self.lit.len() {
                        self.value_done();
                    }
                }
                Lex::Num => {
                    let n = self.num;
                    match self.number_byte(n, b) {
                        Some(next) => {
                            // More digits leave Int, Frac and Exp where they are: take the run.
                            let mut end = i + 1;
                            if matches!(next, Num::Int | Num::Frac | Num::Exp) {
                                end += c[end..].iter().take_while(|d| d.is_ascii_digit()).count();
                            }
                            if self.num_capture {
                                self.push_capture_bytes(&c[i..end]);
                            }
                            self.num = next;
                            i = end;
                            continue;
                        }
                        None => {
                            if !matches!(n, Num::Zero | Num::Int | Num::Frac | Num::Exp) {
                                return fail(self.parse_error(self.at(i), "invalid number"));
                            }
                            self.end_number()?;
                            // The delimiter is handled by the next state.
                            continue;
                        }
                    }
                }
                Lex::Done => {
                    if !is_ws(b) {
                        return fail(
                            self.parse_error(self.at(i), "unexpected data after the JSON value"),
                        );
                    }
                }
                Lex::Str => unreachable!("handled above"),
            }
            i += 1;
        }
        Ok(())
    }

    /// A container nobody looks into, validated by `skip_container` as far as it can take it:
    /// to its end, or to a token boundary from which the state machine goes on. `None` when it
    /// took nothing.
    #[inline]
    fn fast_skip(&mut self, c: &[u8], i: usize) -> Option<usize> {
        if self.pending != Role::Skip || self.depth == 0 || !matches!(c[i], b'{' | b'[') {
            return None;
        }
        self.skip_from(c, i)
    }

    /// `fast_skip` past its cheap tests, kept out of line so the dispatch loop stays small.
    #[inline(never)]
    fn skip_from(&mut self, c: &[u8], i: usize) -> Option<usize> {
        let room = self.depth_limit().checked_sub(self.depth)?;
        match skip_container(c, i, room)? {
            Skipped::Whole(end) => {
                self.value_done();
                Some(end)
            }
            Skipped::Partial(stop) => {
                self.resume_after_skip(stop);
                Some(stop.at)
            }
        }
    }

    /// The state the machine would be in had it read up to `stop` itself: the containers still
    /// open, all looked into by nobody, and what comes next.
    fn resume_after_skip(&mut self, stop: Stop) {
        for level in 0..stop.depth {
            let d = (self.depth + 1 + level) as usize;
            let bit = 1 << (d % 64);
            let word = &mut self.kinds[(d / 64).min(15)];
            if stop.objects & (1 << level) != 0 {
                *word |= bit;
            } else {
                *word &= !bit;
            }
            if d < TRACKED {
                self.ctx[d] = Ctx::Skip;
                self.seen[d] = 0;
                self.elements[d] = 0;
            }
        }
        self.depth += stop.depth;
        self.pending = Role::Skip;
        self.state = match stop.expect {
            Expect::ObjectFirst => Lex::ObjectFirst,
            Expect::ArrayFirst => Lex::ArrayFirst,
            Expect::Value => Lex::Value,
            Expect::Key => Lex::Key,
            Expect::After => Lex::After,
        };
    }

    /// The deepest nesting accepted (the container-kind bitset holds 1024 levels).
    fn depth_limit(&self) -> u32 {
        self.policy.options.max_depth.min(1000)
    }

    fn at(&self, i: usize) -> u64 {
        self.base + i as u64
    }

    fn number_byte(&self, n: Num, b: u8) -> Option<Num> {
        Some(match (n, b) {
            (Num::Minus, b'0') => Num::Zero,
            (Num::Minus, b'1'..=b'9') => Num::Int,
            (Num::Int, b'0'..=b'9') => Num::Int,
            (Num::Zero | Num::Int, b'.') => Num::Dot,
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::E,
            (Num::Dot | Num::Frac, b'0'..=b'9') => Num::Frac,
            (Num::E, b'+' | b'-') => Num::ESign,
            (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Num::Exp,
            _ => return None,
        })
    }

    fn end_number(&mut self) -> Res {
        if self.num_capture {
            self.num_capture = false;
            self.id = if self.capture.cut {
                None
            } else {
                parse_id_number(self.capture.as_str())
            };
        }
        self.value_done();
        Ok(())
    }

    fn top_is_object(&self) -> bool {
        let d = self.depth as usize;
        self.kinds[d / 64] & (1 << (d % 64)) != 0
    }

    fn ctx_at(&self, depth: u32) -> Ctx {
        if (depth as usize) < TRACKED {
            self.ctx[depth as usize]
        } else {
            Ctx::Skip
        }
    }

    /// A new array element begins (after '[' or ',').
    fn next_element(&mut self) {
        let d = self.depth;
        match self.ctx_at(d) {
            Ctx::Parts(_) => self.pending = Role::PartElement,
            _ => self.pending = Role::Skip,
        }
    }

    fn start_value(&mut self, b: u8, i: usize) -> Res {
        let role = self.pending;
        self.pending = Role::Skip;
        if self.depth == 0 && b != b'{' && self.shape == BodyShape::JsonRpc {
            let mut d = ViolationData::new(Reason::InvalidRequest);
            d.offset = Some(self.at(i));
            let msg = if b == b'[' {
                "batch requests are not supported: send one JSON-RPC request object per HTTP request"
            } else {
                "a JSON-RPC request must be a JSON object"
            };
            if matches!(b, b'[' | b'"' | b't' | b'f' | b'n' | b'-' | b'0'..=b'9') {
                return fail(Violation::new(msg, d));
            }
        }
        if self.depth > 0 && matches!(self.ctx_at(self.depth), Ctx::Parts(_)) {
            let d = self.depth as usize;
            self.elements[d] += 1;
        }
        match b {
            b'{' | b'[' => {
                if self.depth + 1 > self.depth_limit() {
                    return fail(self.parse_error(
                        self.at(i),
                        &format!(
                            "nested deeper than {} levels",
                            self.policy.options.max_depth
                        ),
                    ));
                }
                let parent = self.ctx_at(self.depth);
                self.depth += 1;
                let d = self.depth as usize;
                let word = &mut self.kinds[(d / 64).min(15)];
                if b == b'{' {
                    *word |= 1 << (d % 64);
                } else {
                    *word &= !(1 << (d % 64));
                }
                let ctx = match (b, role, parent) {
                    (b'{', Role::Root, _) => Ctx::Root,
                    (b'{', Role::Params, _) => Ctx::Params,
                    (b'{', Role::Message, _) => Ctx::Message,
                    (b'{', Role::PartElement, Ctx::Parts(name)) => {
                        self.start_part(self.elements[d - 1] - 1, name);
                        Ctx::Part
                    }
                    (b'{', Role::File, _) => Ctx::File,
                    (b'[', Role::Parts(name), _) => Ctx::Parts(name),
                    _ => Ctx::Skip,
                };
                if d < TRACKED {
                    self.ctx[d] = ctx;
                    self.seen[d] = 0;
                    self.elements[d] = 0;
                }
                if b == b'{' {
                    self.state = Lex::ObjectFirst;
                } else {
                    self.state = Lex::ArrayFirst;
                    self.next_element();
                }
            }
            b'"' => {
                self.start_string_value(role, i)?;
            }
            b't' | b'f' | b'n' => {
                self.lit = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.lit_pos = 1;
                if role == Role::Id && b == b'n' {
                    self.id = Some(Value::Null);
                }
                self.state = Lex::Lit;
            }
            b'-' | b'0'..=b'9' => {
                self.num_capture = role == Role::Id;
                if self.num_capture {
                    self.capture.clear();
                    self.capture_for = CaptureFor::Id;
                    self.push_capture_bytes(&[b]);
                }
                self.state = Lex::Num;
                self.num = match b {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                };
            }
            _ => return fail(self.parse_error(self.at(i), "expected a JSON value")),
        }
        Ok(())
    }

    fn value_done(&mut self) {
        self.state = if self.depth == 0 {
            Lex::Done
        } else {
            Lex::After
        };
    }

    fn close(&mut self, b: u8, i: usize) -> Res {
        if self.depth == 0 {
            return fail(self.parse_error(self.at(i), "unexpected closing bracket"));
        }
        let is_obj = self.top_is_object();
        if (b == b'}') != is_obj {
            return fail(self.parse_error(self.at(i), "mismatched closing bracket"));
        }
        if self.ctx_at(self.depth) == Ctx::Part {
            self.end_part()?;
        }
        self.depth -= 1;
        self.value_done();
        Ok(())
    }

    // ---- strings ----------------------------------------------------------------------------

    fn start_key(&mut self) {
        self.state = Lex::Str;
        self.esc = Esc::None;
        self.utf8_len = 0;
        if self.ctx_at(self.depth) == Ctx::Skip {
            self.str_role = StrRole::SkipKey;
        } else {
            self.str_role = StrRole::Key;
            self.key_len = 0;
            self.key_long = false;
        }
    }

    fn start_string_value(&mut self, role: Role, i: usize) -> Res {
        self.state = Lex::Str;
        self.esc = Esc::None;
        self.utf8_len = 0;
        self.str_role = match role {
            Role::Id => self.begin_capture(CaptureFor::Id),
            Role::Method => self.begin_capture(CaptureFor::Method),
            Role::PartMediaType => self.begin_capture(CaptureFor::PartMediaType),
            Role::FileMimeType => self.begin_capture(CaptureFor::FileMimeType),
            Role::Filename => self.begin_capture(CaptureFor::Filename),
            Role::Text => {
                self.part.content = Content::Text;
                self.summary.text_parts += 1;
                self.text_chars = 0;
                self.text_bytes = 0;
                self.text_buf.clear();
                self.text_overflow = false;
                StrRole::Text
            }
            Role::Inline(field) => {
                self.count_file(field, i)?;
                self.summary.inline_files += 1;
                self.part.content = Content::Inline {
                    field,
                    ended: false,
                    size: 0,
                };
                self.b64 = Base64Run::new();
                let o = &self.policy.options;
                self.probe
                    .reset(o.dimension_probe_bytes, o.jpeg_max_segments);
                StrRole::Inline
            }
            Role::Reference(field) => {
                self.count_file(field, i)?;
                self.part.content = Content::Reference;
                StrRole::Skip
            }
            _ => StrRole::Skip,
        };
        Ok(())
    }

    fn begin_capture(&mut self, what: CaptureFor) -> StrRole {
        self.capture.clear();
        self.capture_for = what;
        StrRole::Capture
    }

    fn push_capture_bytes(&mut self, s: &[u8]) {
        self.capture.push(s);
    }

    /// Inside a string: runs of plain bytes, escapes, and the closing quote.
    fn string_body(&mut self, c: &[u8], mut i: usize) -> Res<usize> {
        loop {
            if self.esc != Esc::None {
                if i >= c.len() {
                    return Ok(i);
                }
                self.escape_byte(c[i], i)?;
                i += 1;
                continue;
            }
            if self.str_role == StrRole::Inline {
                i += self.inline_blocks(&c[i..])?;
            } else if self.str_role == StrRole::Text && self.utf8_len == 0 {
                i = self.fast_text(c, i)?;
                if self.state != Lex::Str {
                    return Ok(i);
                }
            }
            let rest = &c[i..];
            if rest.is_empty() {
                return Ok(i);
            }
            // Inline strings look at most one block ahead so a huge chunk is not scanned twice.
            let window = if self.str_role == StrRole::Inline {
                &rest[..rest.len().min(BLOCK)]
            } else {
                rest
            };
            match find_quote_or_backslash(window) {
                Some(j) => {
                    self.run(&window[..j], i)?;
                    if self.utf8_len != 0 {
                        return fail(self.parse_error(self.at(i + j), "invalid UTF-8 in a string"));
                    }
                    i += j + 1;
                    if window[j] == b'"' {
                        self.end_string(i - 1)?;
                        return Ok(i);
                    }
                    if let Some(next) = self.fast_escape(c, i)? {
                        i = next;
                        continue;
                    }
                    self.esc = Esc::Backslash;
                }
                None => {
                    self.run(window, i)?;
                    i += window.len();
                    if self.str_role != StrRole::Inline {
                        return Ok(i);
                    }
                }
            }
        }
    }

    /// Fast path for base64: validate whole blocks that turn out to hold no quote or backslash.
    fn inline_blocks(&mut self, rest: &[u8]) -> Res<usize> {
        let mut done = 0;
        if self.probe.next_stop().is_some() {
            return Ok(0);
        }
        while rest.len() - done >= 4 {
            let n = (rest.len() - done).min(BLOCK);
            if !self.b64.push_clean(&rest[done..done + n]) {
                break;
            }
            done += n;
            self.check_inline_progress()?;
        }
        Ok(done)
    }

    /// A run of unescaped string bytes (no quote, no backslash).
    fn run(&mut self, s: &[u8], i: usize) -> Res {
        if s.is_empty() {
            return Ok(());
        }
        match self.str_role {
            StrRole::Inline => self.inline_push(s, i),
            role => {
                let ascii = self.validate_utf8(s, i)?;
                match role {
                    StrRole::Key => self.push_key(s),
                    StrRole::Capture => self.push_capture_bytes(s),
                    StrRole::Text => self.text_run(s, ascii)?,
                    _ => {}
                }
                Ok(())
            }
        }
    }

    /// `run` for bytes already known to be printable ASCII (the fast paths looked at each):
    /// nothing to validate again.
    #[inline]
    fn run_plain(&mut self, s: &[u8], i: usize) -> Res {
        match self.str_role {
            StrRole::Capture if self.utf8_len == 0 => {
                self.push_capture_bytes(s);
                Ok(())
            }
            StrRole::Text if self.utf8_len == 0 => self.text_run(s, true),
            StrRole::Skip if self.utf8_len == 0 => Ok(()),
            _ => self.run(s, i),
        }
    }

    /// Control characters are not allowed raw; UTF-8 may split across runs and chunks.
    /// Returns whether the run was plain ASCII.
    fn validate_utf8(&mut self, mut s: &[u8], i: usize) -> Res<bool> {
        // Short runs (between escapes): a word-at-a-time look is cheaper than the vector fold's
        // setup. A run holds no quote or backslash, so "special" means control or non-ASCII.
        if s.len() < 64 && self.utf8_len == 0 && first_special(s).is_none() {
            return Ok(true);
        }
        // One pass for both questions (it vectorizes; an early exit would not).
        let (lo, hi) = s
            .iter()
            .fold((0xFFu8, 0u8), |(lo, hi), &b| (lo.min(b), hi | b));
        if hi < 0x80 && self.utf8_len == 0 {
            if lo < 0x20 {
                return fail(self.parse_error(
                    self.at(i),
                    "control character inside a string (must be escaped)",
                ));
            }
            return Ok(true);
        }
        if lo < 0x20 {
            return fail(self.parse_error(
                self.at(i),
                "control character inside a string (must be escaped)",
            ));
        }
        if self.utf8_len > 0 {
            let width = utf8_width(self.utf8[0]);
            let need = width - self.utf8_len as usize;
            let take = need.min(s.len());
            self.utf8[self.utf8_len as usize..self.utf8_len as usize + take]
                .copy_from_slice(&s[..take]);
            self.utf8_len += take as u8;
            s = &s[take..];
            if (self.utf8_len as usize) < width {
                return Ok(false);
            }
            if std::str::from_utf8(&self.utf8[..width]).is_err() {
                return fail(self.parse_error(self.at(i), "invalid UTF-8 in a string"));
            }
            self.utf8_len = 0;
        }
        match std::str::from_utf8(s) {
            Ok(_) => Ok(false),
            Err(e) if e.error_len().is_none() => {
                let tail = &s[e.valid_up_to()..];
                self.utf8[..tail.len()].copy_from_slice(tail);
                self.utf8_len = tail.len() as u8;
                Ok(false)
            }
            Err(e) => fail(self.parse_error(
                self.at(i) + (e.valid_up_to() as u64),
                "invalid UTF-8 in a string",
            )),
        }
    }

    fn escape_byte(&mut self, b: u8, i: usize) -> Res {
        match self.esc {
            Esc::None => unreachable!("escape_byte outside an escape"),
            Esc::Backslash => {
                if b == b'u' {
                    self.esc = Esc::Hex { n: 0, acc: 0 };
                    return Ok(());
                }
                let Some(ch) = simple_escape(b) else {
                    return fail(self.parse_error(self.at(i), "invalid escape in a string"));
                };
                self.esc = Esc::None;
                self.escaped_char(ch, i)
            }
            Esc::Hex { n, acc } => {
                let acc = (acc << 4) | self.hex(b, i)?;
                if n < 3 {
                    self.esc = Esc::Hex { n: n + 1, acc };
                    return Ok(());
                }
                match acc {
                    0xD800..=0xDBFF => {
                        self.esc = Esc::LowBackslash { hi: acc };
                        Ok(())
                    }
                    0xDC00..=0xDFFF => {
                        fail(self.parse_error(self.at(i), "lone surrogate in a \\u escape"))
                    }
                    _ => {
                        self.esc = Esc::None;
                        let ch = char::from_u32(acc).unwrap_or('\u{FFFD}');
                        self.escaped_char(ch, i)
                    }
                }
            }
            Esc::LowBackslash { hi } => {
                if b != b'\\' {
                    return fail(self.parse_error(self.at(i), "lone surrogate in a \\u escape"));
                }
                self.esc = Esc::LowU { hi };
                Ok(())
            }
            Esc::LowU { hi } => {
                if b != b'u' {
                    return fail(self.parse_error(self.at(i), "lone surrogate in a \\u escape"));
                }
                self.esc = Esc::LowHex { hi, n: 0, acc: 0 };
                Ok(())
            }
            Esc::LowHex { hi, n, acc } => {
                let acc = (acc << 4) | self.hex(b, i)?;
                if n < 3 {
                    self.esc = Esc::LowHex { hi, n: n + 1, acc };
                    return Ok(());
                }
                if !(0xDC00..=0xDFFF).contains(&acc) {
                    return fail(self.parse_error(self.at(i), "lone surrogate in a \\u escape"));
                }
                self.esc = Esc::None;
                self.escaped_char(surrogate_pair(hi, acc), i)
            }
        }
    }

    /// A whole, valid escape in this chunk, decoded at once; `i` is just past the backslash.
    /// `None` (nothing consumed) leaves split or invalid escapes to `escape_byte`, which reports
    /// errors at the exact byte.
    #[inline]
    fn fast_escape(&mut self, c: &[u8], i: usize) -> Res<Option<usize>> {
        let Some((ch, next)) = decode_escape(c, i) else {
            return Ok(None);
        };
        self.escaped_char(ch, next - 1)?;
        Ok(Some(next))
    }

    /// Text made of printable ASCII runs and whole escapes, counted in one loop (the common
    /// shape of a message). Stops, state consistent, at anything else: a run holding non-ASCII or
    /// control bytes, a long run, a split or invalid escape, the chunk's end; `string_body`
    /// carries on from there. Returns where it stopped, or past the closing quote.
    fn fast_text(&mut self, c: &[u8], mut i: usize) -> Res<usize> {
        loop {
            let window = &c[i..c.len().min(i + 64)];
            let Some(n) = first_special(window) else {
                return Ok(i);
            };
            let run = &window[..n];
            let escape = match window[n] {
                b'"' => None,
                b'\\' => match decode_escape(c, i + n + 1) {
                    Some(escape) => Some(escape),
                    // Split or invalid: the general path takes it from the backslash.
                    None => {
                        self.text_run(run, true)?;
                        return Ok(i + n);
                    }
                },
                _ => return Ok(i),
            };
            self.count_text(run, n as u64);
            let Some((ch, next)) = escape else {
                self.check_text_length()?;
                self.end_string(i + n)?;
                return Ok(i + n + 1);
            };
            let mut buf = [0u8; 4];
            self.count_text(ch.encode_utf8(&mut buf).as_bytes(), 1);
            self.check_text_length()?;
            i = next;
        }
    }

    /// Text bytes holding `chars` characters: counted, and kept for the token count.
    #[inline]
    fn count_text(&mut self, s: &[u8], chars: u64) {
        self.text_chars += chars;
        self.text_append(s);
    }

    fn hex(&self, b: u8, i: usize) -> Res<u32> {
        (b as char).to_digit(16).ok_or_else(|| {
            Box::new(self.parse_error(self.at(i), "invalid \\u escape (expected 4 hex digits)"))
        })
    }

    /// One character written as an escape.
    /// Key bytes (plain or from an escape); a key too long to be one we know is only marked.
    #[inline]
    fn push_key(&mut self, bytes: &[u8]) {
        if bytes.len() > KEY_CAP - self.key_len {
            self.key_long = true;
        } else {
            self.keybuf[self.key_len..self.key_len + bytes.len()].copy_from_slice(bytes);
            self.key_len += bytes.len();
        }
    }

    #[inline]
    fn escaped_char(&mut self, ch: char, i: usize) -> Res {
        let mut buf = [0u8; 4];
        let enc = ch.encode_utf8(&mut buf).as_bytes();
        match self.str_role {
            StrRole::Key => self.push_key(enc),
            StrRole::Capture => self.push_capture_bytes(enc),
            StrRole::Text => {
                self.text_chars += 1;
                self.text_append(enc);
                self.check_text_length()?;
            }
            StrRole::Inline => {
                // `\/` is a `/`; anything non-ASCII cannot be base64.
                if enc.len() == 1 {
                    self.inline_push(enc, i)?;
                } else {
                    return fail(self.bad_base64());
                }
            }
            StrRole::Skip | StrRole::SkipKey => {}
        }
        Ok(())
    }

    fn end_string(&mut self, i: usize) -> Res {
        self.state = Lex::After;
        match self.str_role {
            StrRole::Key => {
                self.state = Lex::Colon;
                self.end_key(i)?;
                return Ok(());
            }
            StrRole::SkipKey => {
                self.state = Lex::Colon;
                self.pending = Role::Skip;
                return Ok(());
            }
            StrRole::Capture => self.end_capture()?,
            StrRole::Text => self.end_text()?,
            StrRole::Inline => self.end_inline()?,
            StrRole::Skip => {}
        }
        self.value_done();
        Ok(())
    }

    fn end_key(&mut self, i: usize) -> Res {
        let ctx = self.ctx_at(self.depth);
        let key = if self.key_long {
            None
        } else {
            lookup_key(ctx, self.shape, &self.keybuf[..self.key_len])
        };
        self.key_found(ctx, key, i)
    }

    /// Fast path for the common key: short, plain ASCII, whole in this chunk. `i` is just past
    /// the opening quote. Returns the index past the closing quote, or `None` to take the
    /// general path (nothing consumed then).
    #[inline]
    fn fast_key(&mut self, c: &[u8], i: usize) -> Res<Option<usize>> {
        let rest = &c[i..c.len().min(i + KEY_CAP)];
        let Some(n) = first_special(rest) else {
            return Ok(None);
        };
        if rest[n] != b'"' {
            return Ok(None);
        }
        let ctx = self.ctx_at(self.depth);
        if ctx == Ctx::Skip {
            self.pending = Role::Skip;
        } else {
            let key = key_in_chunk(ctx, self.shape, c, i, n);
            self.key_found(ctx, key, i + n)?;
        }
        self.state = Lex::Colon;
        Ok(Some(i + n + 1))
    }

    /// Fast path for a short plain string value (printable ASCII, no escapes, whole in this
    /// chunk): the same steps as the general path, without its per-byte dispatch. `i` is just
    /// past the opening quote; `None` = take the general path (nothing consumed).
    #[inline]
    fn fast_value_string(&mut self, c: &[u8], i: usize) -> Res<Option<usize>> {
        // The root and array elements of `parts` have bookkeeping of their own in start_value.
        if self.depth == 0 || matches!(self.ctx_at(self.depth), Ctx::Parts(_)) {
            return Ok(None);
        }
        // Inline files are long: their own path validates them in blocks.
        if matches!(self.pending, Role::Inline(_)) {
            return Ok(None);
        }
        // Printable ASCII up to the closing quote; anything else takes the general path.
        let rest = &c[i..c.len().min(i + 256)];
        let Some(n) = first_special(rest) else {
            return Ok(None);
        };
        if rest[n] != b'"' {
            return Ok(None);
        }
        let role = self.pending;
        self.pending = Role::Skip;
        // Values nobody reads, and the part's declared types and filename, are taken straight
        // from the chunk: what start_string_value and end_string would do, without the
        // dispatch and the capture buffer.
        let value = &rest[..n];
        match role {
            Role::Skip => {}
            Role::PartMediaType | Role::FileMimeType | Role::Filename => {
                self.plain_part_value(role, value)?
            }
            _ => {
                self.start_string_value(role, i - 1)?;
                if n > 0 {
                    self.run_plain(value, i)?;
                }
                self.end_string(i + n)?;
                return Ok(Some(i + n + 1));
            }
        }
        self.esc = Esc::None;
        self.utf8_len = 0;
        self.str_role = StrRole::Skip;
        self.value_done();
        Ok(Some(i + n + 1))
    }

    /// A declared type or filename written as plain printable ASCII, taken as it stands.
    #[inline]
    fn plain_part_value(&mut self, role: Role, value: &[u8]) -> Res {
        match role {
            Role::PartMediaType | Role::FileMimeType => {
                let slot = usize::from(role == Role::FileMimeType);
                let ok = normalize_type(value, &mut self.part.types[slot]);
                self.type_declared(slot, ok)
            }
            Role::Filename => {
                self.name_part(value);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A part's declared type (slot 0: part `mediaType`, 1: file `mimeType`), normalized into
    /// `part.types[slot]` already; `ok` is false when it is not a media type.
    fn type_declared(&mut self, slot: usize, ok: bool) -> Res {
        self.part.typed[slot] = ok;
        self.part.info[slot] = self.part.type_at(slot).map(|t| {
            self.policy
                .common_type_info(t.bytes())
                .unwrap_or_else(|| self.policy.type_info(t.as_str()))
        });
        self.check_part(false)
    }

    /// The part's filename: the first one given counts.
    fn name_part(&mut self, name: &[u8]) {
        if !self.part.named {
            self.part.filename.clear();
            self.part.filename.push(name);
            self.part.named = true;
        }
    }

    #[inline(always)]
    fn key_found(&mut self, ctx: Ctx, key: Option<Key>, i: usize) -> Res {
        self.key = key;
        let Some(key) = key else {
            self.pending = Role::Skip;
            return Ok(());
        };
        let d = self.depth as usize;
        let seen = self.seen[d];
        if seen & key.bit() != 0 {
            return fail(self.duplicate_key(key, i));
        }
        let oneof = one_of(ctx);
        if oneof & key.bit() != 0 && seen & oneof != 0 {
            return fail(self.ambiguous(ctx, seen & oneof, key));
        }
        self.seen[d] |= key.bit();
        self.pending = role_for(ctx, key);
        Ok(())
    }

    fn end_capture(&mut self) -> Res {
        match self.capture_for {
            // The capture as a whole (same capacity): its valid prefix is what `as_str` gives.
            CaptureFor::Method => self.method = Some(self.capture),
            CaptureFor::Id => {
                self.id = if self.capture.cut {
                    None
                } else {
                    Some(Value::String(self.capture.as_str().to_owned()))
                };
            }
            CaptureFor::Filename => {
                if !self.part.named {
                    self.part.filename.assign(&self.capture);
                    self.part.named = true;
                }
            }
            CaptureFor::PartMediaType | CaptureFor::FileMimeType => {
                let slot = usize::from(self.capture_for == CaptureFor::FileMimeType);
                // Uncut, the capture is whole characters (validated as they came): as_str would
                // return all of it, so its bytes can be used without validating them again.
                let out = &mut self.part.types[slot];
                let ok = if self.capture.cut {
                    normalize_type(self.capture.as_str().as_bytes(), out)
                } else {
                    normalize_type(self.capture.bytes(), out)
                };
                self.type_declared(slot, ok)?;
            }
        }
        Ok(())
    }

    // ---- parts ------------------------------------------------------------------------------

    fn start_part(&mut self, index: u64, array: ArrayName) {
        self.in_part = true;
        self.summary.parts += 1;
        let p = &mut self.part;
        p.index = index;
        p.array = array;
        p.typed = [false; 2];
        p.info = [None; 3];
        p.mode_checked = [false; 2];
        p.named = false;
        p.content = Content::None;
        p.sniff_warned = false;
    }

    fn end_part(&mut self) -> Res {
        self.check_part(true)?;
        self.in_part = false;
        Ok(())
    }

    fn count_file(&mut self, field: Key, _i: usize) -> Res {
        self.summary.files += 1;
        if let Some(max) = self.policy.max_count {
            if self.summary.files > max {
                let mut d = self.part_data(Reason::FileCount, Some(field));
                d.constraint = Some("files.maxCountPerRequest".into());
                d.limit = Some(Amount::Count(max));
                d.actual = Some(Amount::Count(self.summary.files));
                d.actual_is_lower_bound = true;
                let msg = format!(
                    "this request carries at least {} files (part {} is one too many); this agent accepts at most {} per request",
                    self.summary.files,
                    self.part.index,
                    max
                );
                return fail(Violation::new(msg, d));
            }
        }
        Ok(())
    }

    // ---- inline files -----------------------------------------------------------------------

    /// Feed base64 characters, pausing where the probe wants to look.
    fn inline_push(&mut self, mut s: &[u8], _i: usize) -> Res {
        while !s.is_empty() {
            let pos = self.b64.chars();
            let take = match self.probe.next_stop() {
                Some(stop) if stop > pos => ((stop - pos) as usize).min(s.len()),
                _ => s.len(),
            };
            let (now, later) = s.split_at(take);
            self.probe.capture(pos, now);
            if self.b64.push(now).is_err() {
                return fail(self.bad_base64());
            }
            if self.probe.next_stop() == Some(self.b64.chars()) {
                self.probe.at_stop(self.b64.alphabet());
                self.check_part(false)?;
            }
            s = later;
        }
        self.check_inline_progress()
    }

    /// Cheap checks while a base64 run grows: per-file size and total size.
    fn check_inline_progress(&mut self) -> Res {
        let size = self.b64.decoded_lower_bound();
        self.check_sizes(size, false, false, true)
    }

    /// File size and total size together. When both are broken, the one whose limit the run
    /// crossed first is reported, so the answer does not depend on how the body was chunked.
    #[inline]
    fn check_sizes(&self, size: u64, exact: bool, part_end: bool, with_total: bool) -> Res {
        if self.sizes_within(size, part_end, with_total) {
            return Ok(());
        }
        self.size_violations(size, exact, part_end, with_total)
    }

    /// True when neither `file_size_violation` nor `total_violation` would find anything: the
    /// common case, decided without building the violations.
    #[inline]
    fn sizes_within(&self, size: u64, part_end: bool, with_total: bool) -> bool {
        if with_total {
            if let Some(max) = self.policy.max_total {
                if self.inline_done + size > max {
                    return false;
                }
            }
        }
        let infos = self.judged_infos(part_end);
        if infos.iter().all(Option::is_none) {
            let cap = if part_end {
                self.policy.max_per_file
            } else {
                self.policy.early_file_cap
            };
            return cap.is_none_or(|cap| size <= cap);
        }
        infos.iter().all(|i| {
            i.and_then(|i| i.size)
                .is_none_or(|(limit, _)| size <= limit)
        })
    }

    #[cold]
    fn size_violations(&self, size: u64, exact: bool, part_end: bool, with_total: bool) -> Res {
        let file = self.file_size_violation(size, exact, part_end);
        let total = if with_total {
            self.total_violation(size, exact)
        } else {
            None
        };
        match (file, total) {
            (Some((fl, fv)), Some((tl, tv))) => fail(if tl < fl { tv } else { fv }),
            (Some((_, v)), None) | (None, Some((_, v))) => fail(v),
            (None, None) => Ok(()),
        }
    }

    fn end_inline(&mut self) -> Res {
        let size = match self.b64.finish() {
            Ok(size) => size,
            Err(()) => return fail(self.bad_base64()),
        };
        self.probe.finish(self.b64.alphabet(), size);
        if let Content::Inline { field, .. } = self.part.content {
            self.part.content = Content::Inline {
                field,
                ended: true,
                size,
            };
        }
        self.check_sizes(size, true, false, true)?;
        self.inline_done += size;
        self.summary.inline_bytes += size;
        self.check_part(false)
    }

    /// With the allowance this file had (what the total limit left for it).
    fn total_violation(&self, current: u64, exact: bool) -> Option<(u64, Violation)> {
        let max = self.policy.max_total?;
        let total = self.inline_done + current;
        if total > max {
            let mut d = self.part_data(Reason::TotalSize, self.inline_field());
            d.constraint = Some("files.maxTotalSizeBytes".into());
            d.limit = Some(Amount::Bytes(max));
            d.actual = Some(Amount::Bytes(total));
            d.actual_is_lower_bound = !exact;
            let msg = format!(
                "the files in this request add up to {}{} (part {} pushes it over); this agent accepts at most {} in total",
                if exact { "" } else { "at least " },
                human_bytes(total),
                self.part.index,
                human_bytes(max)
            );
            return Some((max.saturating_sub(self.inline_done), Violation::new(msg, d)));
        }
        None
    }

    /// The declared types that are specific (not empty, not application/octet-stream).
    fn declared(&self) -> impl Iterator<Item = (usize, &str)> {
        (0..2).filter_map(|i| self.part.type_at(i).map(|t| (i, t.as_str())))
    }

    fn has_specific_type(&self) -> bool {
        self.part.info[..2].iter().flatten().any(|i| !i.generic)
    }

    /// Per-file size against the limits of the declared type(s); before any type is known only
    /// the largest candidate limit can be certain. `part_end`: the sniffed type counts now.
    fn file_size_violation(
        &self,
        size: u64,
        exact: bool,
        part_end: bool,
    ) -> Option<(u64, Violation)> {
        let p = &self.policy;
        let infos = self.judged_infos(part_end);
        let any_type = infos.iter().any(Option::is_some);
        // The smallest broken limit is the one crossed first.
        let broken = infos
            .iter()
            .enumerate()
            .filter_map(|(slot, i)| {
                i.and_then(|i| i.size)
                    .map(|(limit, rule)| (limit, slot, rule))
            })
            .filter(|(limit, _, _)| size > *limit)
            .min_by_key(|(limit, _, _)| *limit);
        if let Some((limit, slot, rule)) = broken {
            let t = self.type_name(slot);
            return Some((
                limit,
                self.size_violation(size, exact, limit, Some((t, rule))),
            ));
        }
        if !any_type {
            let cap = if part_end {
                p.max_per_file
            } else {
                p.early_file_cap
            };
            if let Some(cap) = cap {
                if size > cap {
                    return Some((cap, self.size_violation(size, exact, cap, None)));
                }
            }
        }
        None
    }

    /// The type infos a file is judged by: its declared types, and at the part's end the
    /// sniffed type when nothing specific was declared.
    fn judged_infos(&self, part_end: bool) -> &[Option<TypeInfo>] {
        &self.part.info[..if part_end { 3 } else { 2 }]
    }

    fn type_name(&self, slot: usize) -> &str {
        match slot {
            0 | 1 => self.part.type_at(slot).map_or("", |t| t.as_str()),
            _ => self.probe_sniffed().map_or("", Format::media_type),
        }
    }

    fn probe_sniffed(&self) -> Option<Format> {
        match self.part.content {
            Content::Inline { .. } if self.probe.sniff_ready => self.probe.sniffed,
            _ => None,
        }
    }

    fn size_violation(
        &self,
        size: u64,
        exact: bool,
        limit: u64,
        typed: Option<(&str, Option<usize>)>,
    ) -> Violation {
        let p = &self.policy;
        let (reason, constraint, per) = match typed {
            Some((t, Some(rule))) => (
                Reason::MimeSize,
                format!(
                    "files.perMimeType[{}].maxSizeBytes",
                    Value::String(p.per_mime[rule].key.clone())
                ),
                format!("per {t} file"),
            ),
            Some((_, None)) => (
                Reason::FileSize,
                "files.maxSizePerFileBytes".to_owned(),
                "per file".to_owned(),
            ),
            None => {
                // The early cap: the global limit, or a larger per-MIME one.
                let rule = p
                    .per_mime
                    .iter()
                    .filter(|r| r.max_size == Some(limit))
                    .find(|_| Some(limit) != p.max_per_file);
                match rule {
                    Some(rule) => (
                        Reason::FileSize,
                        format!(
                            "files.perMimeType[{}].maxSizeBytes",
                            Value::String(rule.key.clone())
                        ),
                        "per file of any type".to_owned(),
                    ),
                    None => (
                        Reason::FileSize,
                        "files.maxSizePerFileBytes".to_owned(),
                        "per file".to_owned(),
                    ),
                }
            }
        };
        let mut d = self.part_data(reason, self.inline_field());
        d.constraint = Some(constraint);
        d.limit = Some(Amount::Bytes(limit));
        d.actual = Some(Amount::Bytes(size));
        d.actual_is_lower_bound = !exact;
        let msg = format!(
            "part {} {}is {}{}; this agent accepts at most {} {}",
            self.part.index,
            self.describe_part(),
            if exact { "" } else { "at least " },
            human_bytes(size),
            human_bytes(limit),
            per
        );
        Violation::new(msg, d)
    }

    /// Everything that can be decided about the current part with what is known now.
    fn check_part(&mut self, part_end: bool) -> Res {
        if !self.in_part {
            return Ok(());
        }
        // Declared types against the accepted modes.
        for slot in 0..2 {
            if self.part.mode_checked[slot] {
                continue;
            }
            if let Some(info) = self.part.info[slot] {
                self.part.mode_checked[slot] = true;
                if !info.accepted {
                    let key = if slot == 0 {
                        Key::MediaType
                    } else {
                        Key::MimeType
                    };
                    let t = self.type_name(slot).to_owned();
                    return fail(self.media_type_violation(&t, Some(key), false));
                }
            }
        }
        if part_end && !self.has_specific_type() {
            self.part.info[2] = self
                .probe_sniffed()
                .map(|f| self.policy.type_info(f.media_type()));
        }
        match self.part.content {
            Content::Inline { ended, size, .. } => {
                let (size, exact) = if ended {
                    (size, true)
                } else {
                    (self.b64.decoded_lower_bound(), false)
                };
                // Once the run has ended its size is in the total, checked at that moment.
                self.check_sizes(size, exact, part_end, !ended)?;
                self.check_sniff()?;
                self.check_dims(part_end)?;
                if let Some(info) = self.part.info[2] {
                    if part_end && !info.accepted {
                        let t = self.type_name(2).to_owned();
                        return fail(self.media_type_violation(&t, None, true));
                    }
                }
            }
            Content::Reference | Content::Text | Content::None => {}
        }
        Ok(())
    }

    fn check_sniff(&mut self) -> Res {
        if self.policy.options.sniff == SniffMode::Off || !self.probe.sniff_ready {
            return Ok(());
        }
        let sniffed = self.probe.sniffed;
        let mismatch = (0..2).find(|&slot| match self.part.info[slot] {
            Some(info) if !info.generic => match info.claimed {
                Some(f) => sniffed != Some(f),
                None => sniffed.is_some(),
            },
            _ => false,
        });
        let Some(slot) = mismatch else {
            return Ok(());
        };
        if self.part.sniff_warned {
            return Ok(());
        }
        let declared = self.type_name(slot).to_owned();
        if self.policy.options.sniff == SniffMode::Warn {
            if !self.part.sniff_warned && self.summary.sniff_warnings.len() < MAX_SNIFF_WARNINGS {
                self.summary.sniff_warnings.push(SniffWarning {
                    part_index: self.part.index,
                    declared,
                    detected: sniffed.map(Format::media_type),
                });
            }
            self.part.sniff_warned = true;
            return Ok(());
        }
        let mut d = self.part_data(
            Reason::SniffMismatch,
            Some(if slot == 0 {
                Key::MediaType
            } else {
                Key::MimeType
            }),
        );
        d.media_type = Some(declared.clone());
        let what = match sniffed {
            Some(f) => format!("its content is {}", f.media_type()),
            None => match Format::from_media_type(&declared) {
                Some(_) => format!("its content does not start like {declared}"),
                None => "its content is of another type".to_owned(),
            },
        };
        let msg = format!(
            "part {} {}declares {}, but {}; the declared type must match the content",
            self.part.index,
            self.describe_part(),
            declared,
            what
        );
        fail(Violation::new(msg, d))
    }

    fn check_dims(&self, part_end: bool) -> Res {
        if self.probe.dims == Dims::Pending {
            return Ok(());
        }
        let infos = self.judged_infos(part_end);
        for (slot, info) in infos.iter().enumerate() {
            let Some((max, rule)) = info.and_then(|i| i.dims) else {
                continue;
            };
            let constraint = || {
                format!(
                    "files.perMimeType[{}].maxDimensions",
                    Value::String(self.policy.per_mime[rule].key.clone())
                )
            };
            match self.probe.dims {
                Dims::Pending => {}
                Dims::Found { width, height } => {
                    if width > max.width || height > max.height {
                        let mut d = self.part_data(Reason::Dimensions, self.inline_field());
                        d.constraint = Some(constraint());
                        d.limit = Some(Amount::Dims {
                            width: max.width,
                            height: max.height,
                        });
                        d.actual = Some(Amount::Dims { width, height });
                        let msg = format!(
                            "part {} {}is {}x{} pixels; this agent accepts at most {}x{} for {}",
                            self.part.index,
                            self.describe_part(),
                            width,
                            height,
                            max.width,
                            max.height,
                            self.type_name(slot)
                        );
                        return fail(Violation::new(msg, d));
                    }
                }
                Dims::Unknown(_) => {
                    if self.policy.options.unknown_dimensions == UnknownDimensions::Reject {
                        let mut d = self.part_data(Reason::DimensionsUnknown, self.inline_field());
                        d.constraint = Some(constraint());
                        d.limit = Some(Amount::Dims {
                            width: max.width,
                            height: max.height,
                        });
                        let msg = format!(
                            "the dimensions of part {} {}could not be read within its first {}; this agent limits {} to {}x{} pixels, so the file is refused",
                            self.part.index,
                            self.describe_part(),
                            human_bytes(self.policy.options.dimension_probe_bytes),
                            self.type_name(slot),
                            max.width,
                            max.height
                        );
                        return fail(Violation::new(msg, d));
                    }
                }
            }
        }
        Ok(())
    }

    fn media_type_violation(&self, t: &str, key: Option<Key>, sniffed: bool) -> Violation {
        let mut d = self.part_data(Reason::MediaType, key.or(self.inline_field()));
        d.constraint = Some("defaultInputModes".into());
        d.media_type = Some(t.to_owned());
        let accepted = self
            .policy
            .accepted
            .as_deref()
            .unwrap_or_default()
            .join(", ");
        let msg = if sniffed {
            format!(
                "part {} {}is {} (by its content), which this agent does not accept (accepted: {})",
                self.part.index,
                self.describe_part(),
                t,
                accepted
            )
        } else {
            format!(
                "part {} declares media type {}, which this agent does not accept (accepted: {})",
                self.part.index, t, accepted
            )
        };
        Violation::new(msg, d)
    }

    // ---- text -------------------------------------------------------------------------------

    #[inline]
    fn text_run(&mut self, s: &[u8], ascii: bool) -> Res {
        // Count scalar values: every byte that is not a UTF-8 continuation byte.
        let starts = if ascii {
            s.len() as u64
        } else {
            s.iter().filter(|&&b| (b as i8) >= -0x40).count() as u64
        };
        self.text_chars += starts;
        self.text_append(s);
        self.check_text_length()
    }

    #[inline]
    fn text_append(&mut self, s: &[u8]) {
        self.text_bytes += s.len() as u64;
        if self.policy.max_tokens.is_some() && !self.text_overflow {
            if self.text_buf.len() as u64 + s.len() as u64 > self.policy.options.token_buffer_bytes
            {
                self.text_overflow = true;
                self.text_buf = Vec::new();
            } else {
                self.text_buf.extend_from_slice(s);
            }
        }
    }

    #[inline]
    fn check_text_length(&self) -> Res {
        if let Some(max) = self.policy.max_chars {
            if self.text_chars > max {
                return fail(self.text_length_violation(max, false));
            }
        }
        Ok(())
    }

    #[cold]
    fn text_length_violation(&self, max: u64, exact: bool) -> Violation {
        let mut d = self.part_data(Reason::TextLength, Some(Key::Text));
        d.constraint = Some("text.maxCharacters".into());
        d.limit = Some(Amount::Chars(max));
        d.actual = Some(Amount::Chars(self.text_chars));
        d.actual_is_lower_bound = !exact;
        let msg = format!(
            "text part {} has {}{} characters; this agent accepts at most {} characters per text part",
            self.part.index,
            if exact { "" } else { "at least " },
            self.text_chars,
            max
        );
        Violation::new(msg, d)
    }

    fn end_text(&mut self) -> Res {
        self.summary.text_chars += self.text_chars;
        let (Some(max), Some(tok)) = (self.policy.max_tokens, self.policy.tokenizer) else {
            return Ok(());
        };
        // Every token is at least one byte.
        if self.text_bytes <= max {
            return Ok(());
        }
        let mut d = self.part_data(Reason::TextTokens, Some(Key::Text));
        d.constraint = Some("text.maxTokens".into());
        d.limit = Some(Amount::Tokens(max));
        if self.text_overflow {
            let msg = format!(
                "text part {} is too long to count its {} tokens ({}); this agent accepts at most {} tokens per text part",
                self.part.index,
                tok.name(),
                human_bytes(self.text_bytes),
                max
            );
            return fail(Violation::new(msg, d));
        }
        let text = std::str::from_utf8(&self.text_buf).unwrap_or("");
        let result = tok.count_within(text, max);
        self.text_buf.clear();
        if result.is_none() {
            d.actual = Some(Amount::Tokens(max + 1));
            d.actual_is_lower_bound = true;
            let msg = format!(
                "text part {} has more than {} tokens ({}); this agent accepts at most {} tokens per text part",
                self.part.index,
                max,
                tok.name(),
                max
            );
            return fail(Violation::new(msg, d));
        }
        Ok(())
    }

    // ---- violations -------------------------------------------------------------------------

    fn message_path(&self) -> &'static str {
        match self.shape {
            BodyShape::JsonRpc => "params.message",
            BodyShape::Rest => "message",
        }
    }

    fn part_path(&self) -> String {
        format!(
            "{}.{}[{}]",
            self.message_path(),
            self.part.array.as_str(),
            self.part.index
        )
    }

    fn field_path(&self, key: Key) -> String {
        let in_file = matches!(
            key,
            Key::Bytes
                | Key::Uri
                | Key::FileWithBytes
                | Key::FileWithUri
                | Key::MimeType
                | Key::Name
        );
        if in_file {
            format!("{}.file.{}", self.part_path(), key.json_name())
        } else {
            format!("{}.{}", self.part_path(), key.json_name())
        }
    }

    fn inline_field(&self) -> Option<Key> {
        match self.part.content {
            Content::Inline { field, .. } => Some(field),
            _ => None,
        }
    }

    fn part_data(&self, reason: Reason, field: Option<Key>) -> ViolationData {
        let mut d = ViolationData::new(reason);
        d.part_index = Some(self.part.index);
        d.filename = self.part.filename().map(|f| f.as_str().to_owned());
        d.media_type = self.declared().map(|(_, t)| t.to_owned()).next();
        d.field = Some(match field {
            Some(k) => self.field_path(k),
            None => self.part_path(),
        });
        d
    }

    /// "(photo.png, image/png) " or "".
    fn describe_part(&self) -> String {
        let mut bits: Vec<&str> = Vec::new();
        if let Some(f) = self.part.filename() {
            bits.push(f.as_str());
        }
        if let Some((_, t)) = self.declared().next() {
            bits.push(t);
        }
        if bits.is_empty() {
            String::new()
        } else {
            format!("({}) ", bits.join(", "))
        }
    }

    fn bad_base64(&self) -> Violation {
        let field = self.inline_field();
        let mut d = self.part_data(Reason::BadBase64, field);
        d.offset = Some(self.b64.chars());
        let name = field.map_or("raw", Key::json_name);
        let msg = format!(
            "part {} {}: `{}` is not valid base64 (near character {}); use the standard or URL-safe alphabet, padding only at the end",
            self.part.index,
            self.describe_part().trim_end(),
            name,
            self.b64.chars()
        );
        Violation::new(msg.replace(" : ", ": "), d)
    }

    fn duplicate_key(&self, key: Key, i: usize) -> Violation {
        let (mut d, where_) = match self.ctx_at(self.depth) {
            Ctx::Part | Ctx::File => (
                self.part_data(Reason::DuplicateKey, Some(key)),
                format!("part {}", self.part.index),
            ),
            Ctx::Root => (
                ViolationData::new(Reason::DuplicateKey),
                "the request".to_owned(),
            ),
            Ctx::Params => (
                ViolationData::new(Reason::DuplicateKey),
                "params".to_owned(),
            ),
            _ => (
                ViolationData::new(Reason::DuplicateKey),
                "the message".to_owned(),
            ),
        };
        d.offset = Some(self.at(i));
        let alias = key
            .proto_alias()
            .map(|a| {
                format!(
                    " (\"{}\" and \"{}\" are the same field)",
                    key.json_name(),
                    a
                )
            })
            .unwrap_or_default();
        let msg = format!(
            "{} has the key \"{}\" twice{}; the agent and the gateway could read different values",
            where_,
            key.json_name(),
            alias
        );
        Violation::new(msg, d)
    }

    fn ambiguous(&self, ctx: Ctx, seen: u32, key: Key) -> Violation {
        let first = [
            Key::Text,
            Key::Raw,
            Key::Url,
            Key::Data,
            Key::File,
            Key::Bytes,
            Key::Uri,
            Key::FileWithBytes,
            Key::FileWithUri,
        ]
        .into_iter()
        .find(|k| seen & k.bit() != 0)
        .map_or("another content field", Key::json_name);
        let d = self.part_data(Reason::AmbiguousPart, Some(key));
        let what = if ctx == Ctx::File {
            "a file object"
        } else {
            "a part"
        };
        let msg = format!(
            "part {} has both \"{}\" and \"{}\"; {} holds exactly one content field",
            self.part.index,
            first,
            key.json_name(),
            what
        );
        Violation::new(msg, d)
    }

    fn parse_error(&self, offset: u64, what: &str) -> Violation {
        let mut d = ViolationData::new(Reason::ParseError);
        d.offset = Some(offset);
        Violation::new(format!("invalid JSON at byte {offset}: {what}"), d)
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `x` that is zero (exact up to the first zero byte, which is all
/// the callers use: a borrow only reaches bytes above a real zero).
#[inline]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// Bytes that end a plain run: `"` and `\\`.
#[inline]
fn quote_or_backslash_bits(x: u64) -> u64 {
    zero_bytes(x ^ (LO * b'"' as u64)) | zero_bytes(x ^ (LO * b'\\' as u64))
}

/// Also control characters and non-ASCII bytes (what the short-string fast paths hand over).
#[inline]
fn special_bits(x: u64) -> u64 {
    quote_or_backslash_bits(x) | (x.wrapping_sub(LO * 0x20) & !x & HI) | (x & HI)
}

/// First byte for which `bits` flags, eight bytes at a time; the last word may overlap bytes
/// already checked (they held nothing).
#[inline]
fn find_word(s: &[u8], bits: fn(u64) -> u64, byte: fn(u8) -> bool) -> Option<usize> {
    if s.len() < 8 {
        return s.iter().position(|&b| byte(b));
    }
    let word = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    let mut at = 0;
    while at + 8 <= s.len() {
        let m = bits(word(at));
        if m != 0 {
            return Some(at + m.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    if at < s.len() {
        let last = s.len() - 8;
        let m = bits(word(last));
        if m != 0 {
            return Some(last + m.trailing_zeros() as usize / 8);
        }
    }
    None
}

/// First `"`, `\\`, control character or non-ASCII byte.
#[inline]
pub(crate) fn first_special(s: &[u8]) -> Option<usize> {
    find_word(s, special_bits, |b| {
        b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b)
    })
}

/// Keys and most values are short: a word-at-a-time look beats memchr2's setup for the first
/// bytes.
#[inline]
pub(crate) fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
    const SHORT: usize = 16;
    let n = s.len().min(SHORT);
    if let Some(i) = find_word(&s[..n], quote_or_backslash_bits, |b| {
        b == b'"' || b == b'\\'
    }) {
        return Some(i);
    }
    if s.len() > SHORT {
        memchr2(b'"', b'\\', &s[SHORT..]).map(|j| j + SHORT)
    } else {
        None
    }
}

/// The escape starting just past a backslash at `i`, when it is whole and valid in `c`: the
/// character and the index after it.
#[inline]
pub(crate) fn decode_escape(c: &[u8], i: usize) -> Option<(char, usize)> {
    let b = *c.get(i)?;
    Some(match b {
        b'u' => {
            let hi = c.get(i + 1..i + 5).and_then(hex4)?;
            match hi {
                0xD800..=0xDBFF => {
                    let lo = match c.get(i + 5..i + 11) {
                        Some([b'\\', b'u', h @ ..]) => hex4(h)?,
                        _ => return None,
                    };
                    if !(0xDC00..=0xDFFF).contains(&lo) {
                        return None;
                    }
                    (surrogate_pair(hi, lo), i + 11)
                }
                0xDC00..=0xDFFF => return None,
                _ => (char::from_u32(hi).unwrap_or('\u{FFFD}'), i + 5),
            }
        }
        _ => (simple_escape(b)?, i + 1),
    })
}

/// A key of `n` plain bytes at `c[i..]`, as known in `ctx`. With 16 bytes in the chunk it is
/// packed straight from them (no copy).
#[inline(always)]
fn key_in_chunk(ctx: Ctx, shape: BodyShape, c: &[u8], i: usize, n: usize) -> Option<Key> {
    if n == 0 || n > 16 {
        return None;
    }
    match c.get(i..i + 16) {
        Some(w) => {
            let w = u128::from_le_bytes(w.try_into().ok()?);
            lookup_packed(ctx, shape, w & (u128::MAX >> (8 * (16 - n))))
        }
        None => lookup_key(ctx, shape, &c[i..i + n]),
    }
}

/// The character a high and a low surrogate (already range-checked) stand for together.
fn surrogate_pair(hi: u32, lo: u32) -> char {
    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).unwrap_or('\u{FFFD}')
}

/// The character a one-letter escape (`\n`, `\"`, …) stands for.
#[inline]
fn simple_escape(b: u8) -> Option<char> {
    Some(match b {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// Four hex digits as a number; `None` if any is not a hex digit.
#[inline]
fn hex4(h: &[u8]) -> Option<u32> {
    let mut v = 0;
    for &d in h {
        let x = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | x as u32;
    }
    Some(v)
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_searches_agree_with_byte_loops() {
        let alphabet = [b'a', b'"', b'\\', 0x1F, 0x20, 0x7F, 0x80, 0xE9, b'!', b'~'];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 40) as usize;
            let s: Vec<u8> = (0..len)
                .map(|k| {
                    // Mostly plain bytes, so hits land anywhere.
                    let r = (x >> (k % 60)) as usize;
                    if r % 7 == 0 {
                        alphabet[r / 7 % alphabet.len()]
                    } else {
                        b'a' + (r % 26) as u8
                    }
                })
                .collect();
            let special = s
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b));
            assert_eq!(first_special(&s), special, "{s:?}");
            let qb = s.iter().position(|&b| b == b'"' || b == b'\\');
            assert_eq!(find_quote_or_backslash(&s), qb, "{s:?}");
        }
    }
}

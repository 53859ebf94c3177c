//! gzip for responses (feature `compression`): [`compress`] wraps a
//! handler.

use std::borrow::Cow;
use std::io::{self, Read, Write};

use flate2::Compression;
use flate2::read::GzEncoder as GzReader;
use flate2::write::GzEncoder;

use crate::handler::Handler;
use crate::request::Request;
use crate::response::{Payload, Response};

/// Bodies smaller than this are sent as they are by default: gzip's 18
/// bytes of framing and the CPU are not worth it, and the answer fits in a
/// packet or two either way.
pub const DEFAULT_COMPRESS_MIN_BYTES: usize = 1024;

/// The zlib level used by default (`flate2`'s default: most of level 9's
/// gain at a fraction of its time).
pub const DEFAULT_COMPRESSION_LEVEL: u32 = 6;

/// Wraps `handler` so that its answers are gzipped when the client accepts
/// it. Turn it on in one line:
///
/// ```no_run
/// use httpool::{Request, Response, Server};
///
/// # fn main() -> std::io::Result<()> {
/// Server::bind("127.0.0.1:8000")?.serve_handler(httpool::compress(|_req: &mut Request| {
///     Response::html("<!doctype html><title>big page</title>…")
/// }))
/// # }
/// ```
///
/// A response is compressed when all of these hold:
/// - the request's `Accept-Encoding` accepts `gzip` (by name or `*`, with
///   a `q` above 0);
/// - its `Content-Type` is text (`text/*` but `text/event-stream`), JSON,
///   XML, JavaScript, SVG, WebAssembly or a font or icon format that is
///   not already compressed;
/// - its body is in memory and at least [`min_bytes`](Compress::min_bytes)
///   long (1 KiB by default), or a reader (`Response::reader`) not known to
///   be shorter; it is then sent `chunked`, in deflate blocks, so a reader
///   that trickles (a log being tailed) reaches the client later;
/// - it has a body at all (not `1xx`, `204`, `304`: a `304` gets `Vary:
///   Accept-Encoding`, and the weak `ETag` when the client holds the
///   gzipped answer; a `HEAD` answer with no body is judged by the
///   `Content-Length` it announces, which is dropped when the `GET` would
///   be gzipped — the `HEAD` answer then gets the `GET`'s other headers
///   below — as a `304`'s is for a client that accepts gzip), is not a
///   range (`206`, or a `Content-Range`), is not already encoded
///   (`Content-Encoding`), and does not say `Cache-Control: no-transform`.
///
/// A `HEAD` answer gets exactly the `GET`'s headers only when it is made
/// as the `GET` is, body included (the server sends none of it), as
/// `ServeDir` does. Judged by its announced length, it is taken to stand
/// for a body in memory or a reader that gzip shrinks: a handler whose
/// `GET` answer is a file, or bytes gzip cannot shrink, should answer the
/// `HEAD` with that same body.
///
/// Files (`Response::file`, so `ServeDir`'s larger files) and
/// `Response::stream` bodies are sent as they are: files keep `sendfile`,
/// and a stream's flushes keep reaching the client at once. `ServeDir`'s
/// small files, which it keeps in memory, are gzipped once: the copy is
/// kept beside the file's bytes (at the first level asked for), counted in
/// `ServeDir::memory_cache`, and dropped with them when the file changes.
///
/// Every response it could compress gets `Vary: Accept-Encoding`, whether
/// or not this client accepted gzip, so caches keep both. A compressed one
/// gets `Content-Encoding: gzip`, its `Content-Length` is that of the
/// gzipped bytes, a strong `ETag` becomes weak (`W/"…"`): the bytes
/// differ from the identity ones that carry the same tag, and
/// `Accept-Ranges` is dropped (ranges are served from the identity bytes). When gzip would
/// not make the body smaller, it is sent as it is.
pub fn compress<H: Handler>(handler: H) -> Compress<H> {
    Compress { inner: handler, min_bytes: DEFAULT_COMPRESS_MIN_BYTES, level: DEFAULT_COMPRESSION_LEVEL }
}

/// A handler whose responses are gzipped; see [`compress`].
#[derive(Debug)]
pub struct Compress<H> {
    inner: H,
    min_bytes: usize,
    level: u32,
}

impl<H> Compress<H> {
    /// Bodies in memory shorter than `bytes` are sent as they are
    /// ([`DEFAULT_COMPRESS_MIN_BYTES`] by default).
    pub fn min_bytes(mut self, bytes: usize) -> Compress<H> {
        self.min_bytes = bytes;
        self
    }

    /// The zlib level, from 1 (fastest) to 9 (smallest); higher values are
    /// taken as 9 ([`DEFAULT_COMPRESSION_LEVEL`] by default).
    pub fn level(mut self, level: u32) -> Compress<H> {
        self.level = level.min(9);
        self
    }
}

impl<H: Handler> Handler for Compress<H> {
    fn handle(&self, req: &mut Request<'_>) -> Response {
        let resp = self.inner.handle(req);
        self.apply(req, resp)
    }
}

/// What can be done with a response's body.
enum Plan {
    /// Nothing: the answer does not depend on `Accept-Encoding`.
    Leave,
    /// It could be compressed, but not for this client.
    VaryOnly,
    Compress,
}

impl<H> Compress<H> {
    fn apply(&self, req: &Request<'_>, mut resp: Response) -> Response {
        if resp.status == 304 {
            return revalidated(req, resp);
        }
        match self.plan(req, &resp) {
            Plan::Leave => return resp,
            Plan::VaryOnly => {}
            // No body to gzip: the `200` it stands for would be gzipped, of
            // a length not known here, and the identity length it announces
            // must not be sent (RFC 9110 §8.6). A body of unknown length
            // (never read: the answer is to a `HEAD`) announces none. Its
            // other headers are the gzipped `200`'s (RFC 9110 §9.3.2).
            Plan::Compress if announced(req, &resp).is_some() => {
                resp.body = Payload::Reader { reader: Box::new(io::empty()), len: None };
                mark_encoded(&mut resp);
            }
            Plan::Compress => self.encode(&mut resp),
        }
        resp.add_vary("Accept-Encoding");
        resp
    }

    fn plan(&self, req: &Request<'_>, resp: &Response) -> Plan {
        let no_transform =
            || resp.headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("cache-control") && no_transform(v));
        if resp.status == 206 {
            // Part of the identity representation of what a client that
            // accepts gzip gets whole and compressed: it varies on
            // `Accept-Encoding` as the `200` does (RFC 9110 §12.5.5). Whether
            // the whole would be compressed is judged by its type and size
            // (`*`, unknown: as a stream, it would); a whole sent as a file
            // is not compressed, so the part of a large file says `Vary`
            // where its `200` does not, which costs a cache a little and
            // misleads none.
            let whole = resp.header("content-range").and_then(|r| r.rsplit('/').next()).map(str::trim);
            let large = whole.is_some_and(|n| n == "*" || n.parse::<u64>().is_ok_and(|n| n >= self.min_bytes as u64));
            let varies = large
                && resp.content_type.as_deref().is_some_and(is_compressible)
                && resp.header("content-encoding").is_none()
                && !no_transform();
            return if varies { Plan::VaryOnly } else { Plan::Leave };
        }
        let has_body = resp.status >= 200 && !matches!(resp.status, 204 | 304);
        let big_enough = match (&resp.body, announced(req, resp)) {
            (_, Some(len)) => len >= self.min_bytes as u64,
            (Payload::Reader { len, .. }, None) => len.is_none_or(|n| n >= self.min_bytes as u64),
            (body, None) => body.in_memory().is_some_and(|b| b.len() >= self.min_bytes),
        };
        let eligible = has_body
            && big_enough
            && !resp.switches()
            && resp.invalid.is_none()
            && req.method() != "CONNECT"
            && resp.content_type.as_deref().is_some_and(is_compressible)
            && resp.header("content-encoding").is_none()
            && resp.header("content-range").is_none()
            && !no_transform();
        match eligible {
            false => Plan::Leave,
            true if accepts_gzip(req.header_all("accept-encoding")) => Plan::Compress,
            true => Plan::VaryOnly,
        }
    }

    /// Gzips the body; leaves it when that would not make it smaller.
    fn encode(&self, resp: &mut Response) {
        let level = Compression::new(self.level);
        let gzipped = match std::mem::replace(&mut resp.body, Payload::Static(b"")) {
            Payload::Reader { reader, len } => {
                let reader: Box<dyn Read + Send> = match len {
                    Some(len) => Box::new(Exactly { inner: reader.take(len), left: len }),
                    None => reader,
                };
                Ok(Payload::Reader { reader: Box::new(GzReader::new(reader, level)), len: None })
            }
            // A body a cache keeps (`ServeDir`'s small files) is gzipped
            // once, and its copy kept beside it for the next answers.
            Payload::Shared(shared) => match shared.gzipped(self.level, &|b| gzip(b, level)) {
                Some(gzipped) => Ok(Payload::Shared(gzipped)),
                None => Err(Payload::Shared(shared)),
            },
            body => match body.in_memory().and_then(|b| gzip(b, level)) {
                Some(gzipped) => Ok(Payload::Owned(gzipped)),
                None => Err(body),
            },
        };
        match gzipped {
            Ok(body) => {
                resp.body = body;
                mark_encoded(resp);
            }
            Err(body) => resp.body = body,
        }
    }
}

/// The first `left` bytes of a reader given a length: what its identity
/// answer sends (RFC 9112 §6.3). A reader that ends sooner fails, so the
/// gzipped answer is cut short as the identity one is (the connection
/// closes before its `Content-Length`), rather than end whole, its gzip
/// trailer vouching for a truncated body.
struct Exactly {
    inner: io::Take<Box<dyn Read + Send>>,
    left: u64,
}

impl Read for Exactly {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "body shorter than its length"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// The length a `HEAD` answer with no body of its own announces: that of
/// the `200` a `GET` would get (RFC 9110 §8.6), by which it is judged.
fn announced(req: &Request<'_>, resp: &Response) -> Option<u64> {
    let bodiless = req.method() == "HEAD" && resp.body.in_memory().is_some_and(<[u8]>::is_empty);
    resp.declared_length.filter(|_| bodiless)
}

/// `Content-Encoding: gzip`, a weak `ETag`, no declared length (the
/// gzipped bytes are what is sent) and no `Accept-Ranges`: a range asked of
/// this answer would be served from the identity bytes (`206` is never
/// compressed), and a client resuming a gzipped download with it would
/// splice two different byte streams.
fn mark_encoded(resp: &mut Response) {
    resp.declared_length = None;
    resp.headers.retain(|(name, _)| !name.eq_ignore_ascii_case("accept-ranges"));
    for (name, value) in &mut resp.headers {
        if name.eq_ignore_ascii_case("etag") && value.starts_with('"') {
            *value = Cow::Owned(format!("W/{value}"));
        }
    }
    resp.headers.push((Cow::Borrowed("Content-Encoding"), Cow::Borrowed("gzip")));
}

/// `body` gzipped, when that is smaller.
fn gzip(body: &[u8], level: Compression) -> Option<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 2), level);
    encoder.write_all(body).ok()?;
    let out = encoder.finish().ok()?;
    (out.len() < body.len()).then_some(out)
}

/// A `304` carries the `ETag` and `Vary` the `200` would have had (RFC
/// 9110 §15.4.5). It has no body to judge by: it always gets `Vary:
/// Accept-Encoding` (one the `200` lacked costs a cache a lookup, one it
/// had and the `304` dropped could serve gzip to a client that cannot read
/// it), and when the client sends back the weak form of the answer's strong
/// tag, it holds the gzipped `200` (only that one carried it), so the `304`
/// gets that weak tag. A `Content-Length` the handler set, the identity
/// length, is dropped for a client that accepts gzip: its `200` may be
/// gzipped, of another length, and a `304` must announce that one or none
/// (RFC 9110 §8.6).
fn revalidated(req: &Request<'_>, mut resp: Response) -> Response {
    resp.add_vary("Accept-Encoding");
    if accepts_gzip(req.header_all("accept-encoding")) {
        resp.declared_length = None;
    }
    let Some(tag) = resp.header("etag").filter(|t| t.starts_with('"')).map(str::to_owned) else {
        return resp;
    };
    let weak = format!("W/{tag}");
    let held = req
        .header_all("if-none-match")
        .filter_map(|v| std::str::from_utf8(v).ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim() == weak);
    if held {
        for (name, value) in &mut resp.headers {
            if name.eq_ignore_ascii_case("etag") {
                *value = Cow::Owned(weak.clone());
            }
        }
    }
    resp
}

fn no_transform(cache_control: &str) -> bool {
    cache_control.split(',').any(|d| d.trim().eq_ignore_ascii_case("no-transform"))
}

/// Media types worth compressing: text and text-like formats, and fonts
/// and images that are not compressed already.
fn is_compressible(content_type: &str) -> bool {
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let Some((kind, subtype)) = media.split_once('/') else { return false };
    match kind {
        "text" => subtype != "event-stream",
        _ if subtype.ends_with("+json") || subtype.ends_with("+xml") => true,
        "application" => matches!(
            subtype,
            "json" | "javascript" | "ecmascript" | "x-javascript" | "xml" | "wasm" | "vnd.ms-fontobject" | "x-font-ttf"
        ),
        "font" => matches!(subtype, "ttf" | "otf"),
        "image" => matches!(subtype, "x-icon" | "vnd.microsoft.icon" | "bmp"),
        _ => false,
    }
}

/// Whether the `Accept-Encoding` values accept gzip (RFC 9110 §12.5.3):
/// `gzip` (or `x-gzip`) with a weight above 0, or, when it is not named,
/// `*` with a weight above 0. No header: the client gets identity.
fn accepts_gzip<'a>(values: impl Iterator<Item = &'a [u8]>) -> bool {
    let (mut gzip, mut any) = (None, None);
    for value in values {
        let Ok(value) = std::str::from_utf8(value) else { continue };
        for element in value.split(',') {
            let mut parts = element.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let weight = parts.find_map(|p| q_param(p.trim())).unwrap_or(Some(1000)).unwrap_or(0);
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                gzip = Some(gzip.unwrap_or(0).max(weight));
            } else if coding == "*" {
                any = Some(any.unwrap_or(0).max(weight));
            }
        }
    }
    gzip.or(any).is_some_and(|w| w > 0)
}

/// `Some(weight)` for a `q=` parameter, in thousandths (`None` inside when
/// malformed, which counts as 0); `None` for another parameter.
fn q_param(param: &str) -> Option<Option<u32>> {
    let (name, value) = param.split_once('=')?;
    if !name.trim().eq_ignore_ascii_case("q") {
        return None;
    }
    Some(qvalue(value.trim()))
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )` (RFC
/// 9110 §12.4.2), in thousandths.
fn qvalue(s: &str) -> Option<u32> {
    let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths =
        fraction.bytes().chain(std::iter::repeat(b'0')).take(3).fold(0, |n, b| n * 10 + u32::from(b - b'0'));
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests;

//! The client's side of the wire: the bytes the server wrote, parsed into
//! answers the way a client reads them (RFC 9112 §6.3).

/// The server's answer to a [`TestRequest`](super::TestRequest), as a
/// client received it: status, headers in the order sent, and the body
/// with its framing (`Content-Length` or `chunked`) removed.
#[derive(Clone, Debug)]
pub struct TestResponse {
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    kept_alive: bool,
    raw: Vec<u8>,
}

impl TestResponse {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The reason phrase of the status line, e.g. `"Not Found"`.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Every header, in the order the server sent them, names as written
    /// (`Date`, `Content-Length` and `Connection` included).
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The first value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every value of the header `name` (case-insensitive), in order.
    pub fn header_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.headers.iter().filter(move |(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body, unframed: empty for `HEAD`, `1xx`, `204` and `304`; for a
    /// `101`, whatever the upgraded connection sent.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body as text.
    ///
    /// # Panics
    ///
    /// When the body is not UTF-8.
    pub fn text(&self) -> &str {
        match std::str::from_utf8(&self.body) {
            Ok(text) => text,
            Err(e) => panic!("httpool test: the body is not UTF-8 ({e}): {:?}", String::from_utf8_lossy(&self.body)),
        }
    }

    /// True when the server kept the connection open after this answer,
    /// ready for another request (false after `Connection: close`, an
    /// error it answered itself, an HTTP/1.0 client that did not ask for
    /// keep-alive, …).
    pub fn is_kept_alive(&self) -> bool {
        self.kept_alive
    }

    /// The bytes of this answer as the server wrote them, with the interim
    /// answers before it (`100 Continue`).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
}

/// Parses the answers to requests whose methods were `HEAD` where `heads`
/// says so, in order; `closed`: the server closed after the last one;
/// `open`: the last one is an event stream still open, its body what was
/// sent so far.
///
/// # Panics
///
/// When the bytes are not a sequence of HTTP/1.1 answers.
pub(super) fn parse_all(wire: &[u8], heads: &[bool], closed: bool, open: bool) -> Vec<TestResponse> {
    let mut answers = Vec::new();
    let mut rest = wire;
    for &is_head in heads {
        if rest.is_empty() {
            break;
        }
        let (answer, used) = match parse_one(rest, is_head, open) {
            Ok(parsed) => parsed,
            Err(why) => panic!("httpool test: the server's answer is not HTTP/1.1 ({why}): {:?}", show(rest)),
        };
        answers.push(answer);
        rest = &rest[used..];
    }
    assert!(rest.is_empty(), "httpool test: bytes after the last answer: {:?}", show(rest));
    let n = answers.len();
    for (i, answer) in answers.iter_mut().enumerate() {
        // An answer another one followed on the same connection kept it.
        answer.kept_alive = i + 1 < n || !closed;
    }
    answers
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One answer at the start of `wire`, interim `1xx` answers before it
/// skipped, and the bytes it took.
fn parse_one(wire: &[u8], is_head: bool, open: bool) -> Result<(TestResponse, usize), String> {
    let mut at = 0;
    loop {
        let mut slots = [httparse::EMPTY_HEADER; 256];
        let mut head = httparse::Response::new(&mut slots);
        let len = match head.parse(&wire[at..]) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Err("the head is cut short".into()),
            Err(e) => return Err(e.to_string()),
        };
        let status = head.code.unwrap_or_default();
        let body_at = at + len;
        if (100..200).contains(&status) && status != 101 {
            at = body_at;
            continue;
        }
        let headers: Vec<(String, String)> = head.headers.iter().map(|h| (h.name.to_owned(), show(h.value))).collect();
        let reason = head.reason.unwrap_or_default().to_owned();
        let (body, used) = body(&wire[body_at..], status, is_head, &headers, open)?;
        let end = body_at + used;
        let raw = wire[..end].to_vec();
        let answer = TestResponse { status, reason, headers, body, kept_alive: false, raw };
        return Ok((answer, end));
    }
}

/// The body at the start of `wire` and the bytes its framing took.
fn body(
    wire: &[u8],
    status: u16,
    is_head: bool,
    headers: &[(String, String)],
    open: bool,
) -> Result<(Vec<u8>, usize), String> {
    let value = |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    if status == 101 {
        // The connection now speaks another protocol: the rest is its.
        return Ok((wire.to_vec(), wire.len()));
    }
    if is_head || status == 204 || status == 304 {
        return Ok((Vec::new(), 0));
    }
    if let Some(codings) = value("transfer-encoding") {
        if codings.rsplit(',').next().is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked")) {
            return unchunk(wire, open);
        }
    }
    match value("content-length") {
        Some(len) => {
            let len: usize = len.trim().parse().map_err(|_| format!("Content-Length {len:?}"))?;
            let body = wire.get(..len).ok_or_else(|| format!("the body is shorter than Content-Length {len}"))?;
            Ok((body.to_vec(), len))
        }
        // Delimited by the end of the connection.
        None => Ok((wire.to_vec(), wire.len())),
    }
}

/// Decodes a `chunked` body (RFC 9112 §7.1): chunk extensions and trailer
/// fields are skipped. `open`: the body may stop after a whole chunk (a
/// stream still open).
pub(super) fn unchunk(wire: &[u8], open: bool) -> Result<(Vec<u8>, usize), String> {
    let line_end = |from: usize| {
        let found = wire.get(from..).and_then(|rest| rest.windows(2).position(|w| w == b"\r\n"));
        found.map(|i| from + i).ok_or_else(|| "a chunk is cut short".to_owned())
    };
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        if open && at == wire.len() {
            return Ok((body, at));
        }
        let end = line_end(at)?;
        let line = &wire[at..end];
        let digits = line.iter().position(|&b| b == b';').map_or(line, |semicolon| &line[..semicolon]);
        let size = std::str::from_utf8(digits).ok().and_then(|d| usize::from_str_radix(d.trim(), 16).ok());
        let size = size.ok_or_else(|| format!("chunk size {:?}", show(line)))?;
        at = end + 2;
        if size == 0 {
            loop {
                let end = line_end(at)?;
                let blank = end == at;
                at = end + 2;
                if blank {
                    return Ok((body, at));
                }
            }
        }
        let data = wire.get(at..at + size).ok_or("a chunk is cut short")?;
        body.extend_from_slice(data);
        at += size;
        if wire.get(at..at + 2) != Some(b"\r\n") {
            return Err("a chunk does not end in CRLF".into());
        }
        at += 2;
    }
}

//! The request and response helpers over real sockets: exact bytes in,
//! exact answers out (`Date` values replaced by `D`).

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

use common::{connect, send};
use httpool::{Request, Response, Server, ServerHandle};

/// Reads one answer as text: the head exactly, `Date` shown as `D`, and a
/// `Content-Length` body (none when `head` is set).
fn answer(conn: &mut BufReader<TcpStream>, head: bool) -> String {
    let mut text = String::new();
    let mut len = 0;
    loop {
        let mut line = String::new();
        assert!(conn.read_line(&mut line).unwrap() > 0, "closed after {text:?}");
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            len = n.trim().parse().unwrap();
        }
        if line.starts_with("Date: ") {
            line = "Date: D\r\n".into();
        }
        text.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    if !head {
        let mut body = vec![0; len];
        conn.read_exact(&mut body).unwrap();
        text.push_str(&String::from_utf8_lossy(&body));
    }
    text
}

/// Sends `request` on a new connection and reads the answer.
fn exchange(server: &ServerHandle, request: &str) -> String {
    let mut conn = connect(server.local_addr());
    send(&mut conn, request.as_bytes());
    answer(&mut conn, request.starts_with("HEAD "))
}

fn spawn(handler: impl httpool::Handler) -> ServerHandle {
    Server::bind("127.0.0.1:0").unwrap().workers(2).spawn_handler(handler).unwrap()
}

#[test]
fn query_path_form_and_cookies_over_a_socket() {
    let server = spawn(|req: &mut Request| {
        let path = req.path_decoded().map(|p| p.into_owned()).unwrap_or_else(|e| format!("error: {e}"));
        let query: Vec<String> = req.query_pairs().map(|(n, v)| format!("{n}={v}")).collect();
        let cookies: Vec<String> = req.cookies().map(|(n, v)| format!("{n}={v}")).collect();
        let form = match req.method() {
            "POST" => match req.form() {
                Ok(form) => form.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join("&"),
                Err(e) => format!("{:?}", e.kind()),
            },
            _ => "-".into(),
        };
        Response::text(format!(
            "path {path}\nquery {}\ncookies {}\nform {form}\ntls {}\n",
            query.join(" "),
            cookies.join(" "),
            req.is_tls()
        ))
    });
    let body = "name=Ada+Lovelace&note=50%25";
    let request = format!(
        "POST /caf%C3%A9/a+b?q=x+y&n=%E2%82%AC HTTP/1.1\r\nHost: t\r\nCookie: sid=abc; theme=dark\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let text =
        "path /café/a+b\nquery q=x y n=€\ncookies sid=abc theme=dark\nform name=Ada Lovelace&note=50%\ntls false\n";
    assert_eq!(
        exchange(&server, &request),
        format!(
            "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{text}",
            text.len()
        )
    );
    let wrong_type = "POST /x HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\na=1";
    assert!(exchange(&server, wrong_type).ends_with("form UnsupportedMediaType\ntls false\n"));
    assert!(server.shutdown());
}

#[test]
fn redirects_and_html_over_a_socket() {
    let server = spawn(|req: &mut Request| match req.path() {
        "/login" => Response::see_other("/home?from=login"),
        "/bad" => Response::see_other("/a\r\nSet-Cookie: x=1"),
        _ => Response::html("<p>home</p>"),
    });
    assert_eq!(
        exchange(&server, "POST /login HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"),
        "HTTP/1.1 303 See Other\r\nDate: D\r\nLocation: /home?from=login\r\nContent-Length: 0\r\n\r\n"
    );
    assert_eq!(
        exchange(&server, "GET /bad HTTP/1.1\r\nHost: t\r\n\r\n"),
        "HTTP/1.1 500 Internal Server Error\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: 21\r\nConnection: close\r\n\r\nInternal Server Error"
    );
    assert_eq!(
        exchange(&server, "GET / HTTP/1.1\r\nHost: t\r\n\r\n"),
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 11\r\n\r\n<p>home</p>"
    );
    assert!(server.shutdown());
}

#[cfg(feature = "cookies")]
#[test]
fn set_cookie_over_a_socket() {
    use httpool::cookie::{Cookie, SameSite};
    let server = spawn(|req: &mut Request| match req.path() {
        "/in" => Response::see_other("/")
            .with_cookie(Cookie::build(("sid", "a3f")).path("/").http_only(true).same_site(SameSite::Lax))
            .with_cookie(("theme", "dark")),
        _ => Response::status(204).with_cookie(("sid", "semi;colon")),
    });
    assert_eq!(
        exchange(&server, "GET /in HTTP/1.1\r\nHost: t\r\n\r\n"),
        "HTTP/1.1 303 See Other\r\nDate: D\r\nLocation: /\r\nSet-Cookie: sid=a3f; HttpOnly; SameSite=Lax; Path=/\r\n\
         Set-Cookie: theme=dark\r\nContent-Length: 0\r\n\r\n"
    );
    assert!(exchange(&server, "GET /bad HTTP/1.1\r\nHost: t\r\n\r\n").starts_with("HTTP/1.1 500 "));
    assert!(server.shutdown());
}

#[cfg(feature = "json")]
#[test]
fn json_in_and_out_over_a_socket() {
    #[derive(serde::Deserialize, serde::Serialize)]
    struct Todo {
        title: String,
    }
    let server = spawn(|req: &mut Request| match req.json::<Todo>() {
        Ok(todo) => Response::json(&todo).with_status(201),
        Err(e) => Response::text(format!("{:?}", e.kind())).with_status(400),
    });
    let post = |content_type: &str, body: &str| {
        format!(
            "POST /t HTTP/1.1\r\nHost: t\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    assert_eq!(
        exchange(&server, &post("application/json", r#"{"title":"docs"}"#)),
        "HTTP/1.1 201 Created\r\nDate: D\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"title\":\"docs\"}"
    );
    assert!(exchange(&server, &post("text/plain", "{}")).ends_with("\r\n\r\nUnsupportedMediaType"));
    assert!(exchange(&server, &post("application/json", "{")).ends_with("\r\n\r\nBadRequest"));
    assert!(server.shutdown());
}

#[cfg(feature = "compression")]
#[test]
fn gzip_over_a_socket() {
    use flate2::read::GzDecoder;
    let page = "<p>compress me</p>\n".repeat(100);
    let body = page.clone();
    let server = spawn(httpool::compress(move |_: &mut Request| Response::html(body.clone())));
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: t\r\nAccept-Encoding: br;q=1, gzip;q=0.5\r\n\r\n");
    let reply = common::read_reply(&mut conn, false).unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-encoding"), Some("gzip"));
    assert_eq!(reply.header("vary"), Some("Accept-Encoding"));
    assert_eq!(reply.header("content-length"), Some(reply.body.len().to_string().as_str()));
    let mut unzipped = String::new();
    GzDecoder::new(&reply.body[..]).read_to_string(&mut unzipped).unwrap();
    assert_eq!(unzipped, page);
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = common::read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.header("content-encoding"), reply.body.len()), (None, page.len()));
    assert!(server.shutdown());
}

/// A reader that ends before the length it was given: the identity answer
/// is cut short (the connection closes before its `Content-Length`), and
/// so must the gzipped one be. It ended with the last chunk and a whole
/// gzip stream, a truncated body the client took as complete.
#[cfg(feature = "compression")]
#[test]
fn a_gzipped_reader_that_ends_early_is_cut_short() {
    let server = spawn(httpool::compress(|_: &mut Request| {
        let page = "<p>compress me</p>\n".repeat(100);
        let len = page.len() as u64 + 1;
        Response::reader(std::io::Cursor::new(page), Some(len)).with_content_type("text/html")
    }));
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
    let mut wire = Vec::new();
    conn.read_to_end(&mut wire).unwrap();
    let wire = String::from_utf8_lossy(&wire);
    assert!(wire.contains("Content-Encoding: gzip\r\n"), "{wire}");
    assert!(!wire.ends_with("\r\n0\r\n\r\n"), "a truncated body ended whole: {wire}");
    assert!(server.shutdown());
}

/// A `HEAD` or `304` answer may carry the `Content-Length` of the `200`
/// it stands for, and only that one (RFC 9110 §8.6): a handler that sets
/// the identity length must not have it sent when the `200` to the same
/// request is gzipped, of another length. A bodiless `HEAD` answer says it
/// is gzipped, with the weak tag, as the `GET` answer does.
#[cfg(feature = "compression")]
#[test]
fn head_and_304_never_announce_the_identity_length_of_a_gzipped_answer() {
    let page = "<p>compress me</p>\n".repeat(100);
    let server = spawn(httpool::compress(move |req: &mut Request| {
        let len = page.len().to_string();
        match (req.method(), req.header("if-none-match")) {
            (_, Some(_)) => Response::status(304).with_header("ETag", "\"v1\"").with_header("Content-Length", len),
            ("HEAD", None) => Response::html("").with_header("ETag", "\"v1\"").with_header("Content-Length", len),
            _ => Response::html(page.clone()).with_header("ETag", "\"v1\""),
        }
    }));
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n");
    let get = common::read_reply(&mut conn, false).unwrap();
    assert_eq!(get.header("content-encoding"), Some("gzip"));
    let gzipped_len = get.body.len().to_string();
    send(&mut conn, b"HEAD / HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n");
    let head = common::read_reply(&mut conn, true).unwrap();
    assert!(head.header("content-length").is_none_or(|n| n == gzipped_len), "{head:?}");
    assert_eq!(head.header("vary"), Some("Accept-Encoding"));
    // The rest of the headers are the GET's too (RFC 9110 §9.3.2).
    for name in ["content-encoding", "etag", "accept-ranges"] {
        assert_eq!(head.header(name), get.header(name), "{name}: {head:?}");
    }
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nIf-None-Match: W/\"v1\"\r\n\r\n");
    let not_modified = common::read_reply(&mut conn, false).unwrap();
    assert_eq!(not_modified.status, 304);
    assert!(not_modified.header("content-length").is_none_or(|n| n == gzipped_len), "{not_modified:?}");
    // A client that takes no gzip gets the identity length it would get.
    send(&mut conn, b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = common::read_reply(&mut conn, true).unwrap();
    assert_eq!(head.header("content-length"), Some("1900"));
    assert_eq!(head.header("vary"), Some("Accept-Encoding"));
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: t\r\nIf-None-Match: \"v1\"\r\n\r\n");
    assert_eq!(common::read_reply(&mut conn, false).unwrap().header("content-length"), Some("1900"));
    assert!(server.shutdown());
}

#[cfg(feature = "log")]
#[test]
fn access_log_over_a_socket() {
    use std::sync::Mutex;

    struct Capture(Mutex<Vec<String>>);
    impl log::Log for Capture {
        fn enabled(&self, meta: &log::Metadata<'_>) -> bool {
            meta.target() == httpool::ACCESS_LOG_TARGET
        }
        fn log(&self, record: &log::Record<'_>) {
            if self.enabled(record.metadata()) {
                self.0.lock().unwrap().push(record.args().to_string());
            }
        }
        fn flush(&self) {}
    }
    static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));
    log::set_logger(&CAPTURE).unwrap();
    log::set_max_level(log::LevelFilter::Info);

    let server = spawn(httpool::access_log(|_: &mut Request| Response::text("hello")));
    let request = "GET /logged?x=1 HTTP/1.1\r\nHost: t\r\nReferer: http://r/\r\nUser-Agent: raw-test/1\r\n\r\n";
    exchange(&server, request);
    assert!(server.shutdown());
    let lines = CAPTURE.0.lock().unwrap();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let (start, rest) = lines[0].split_once(" [").unwrap();
    let (_, rest) = rest.split_once("] ").unwrap();
    let (rest, micros) = rest.rsplit_once(' ').unwrap();
    assert_eq!(start, "127.0.0.1 - -");
    assert_eq!(rest, "\"GET /logged?x=1 HTTP/1.1\" 200 5 \"http://r/\" \"raw-test/1\"");
    assert!(micros.parse::<u64>().is_ok(), "{micros}");
}

#[cfg(feature = "fs")]
mod files {
    use std::path::PathBuf;

    use super::*;

    /// A site under the system's temporary directory, with a secret next
    /// to it; removed on drop.
    struct Site(PathBuf);

    impl Site {
        fn new(name: &str) -> Site {
            let dir = std::env::temp_dir().join(format!("httpool-site-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("root/docs")).unwrap();
            let site = Site(dir);
            site.write("root/hello.txt", "hello, world\n");
            site.write("root/docs/index.html", "<h1>docs</h1>\n");
            site.write("secret.txt", "secret\n");
            #[cfg(unix)]
            std::os::unix::fs::symlink(site.0.join("secret.txt"), site.0.join("root/leak.txt")).unwrap();
            site
        }

        /// Writes a file modified an hour ago: `ServeDir` gives a file
        /// modified less than a second before an answer a weak `ETag`.
        fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
            let path = self.0.join(rel);
            std::fs::write(&path, bytes).unwrap();
            let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            std::fs::File::options().write(true).open(&path).unwrap().set_modified(hour_ago).unwrap();
        }
    }

    impl Drop for Site {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn validators(server: &ServerHandle) -> (String, String) {
        let mut conn = connect(server.local_addr());
        send(&mut conn, b"HEAD /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        let reply = common::read_reply(&mut conn, true).unwrap();
        (reply.header("etag").unwrap().to_owned(), reply.header("last-modified").unwrap().to_owned())
    }

    #[test]
    fn a_directory_over_a_socket() {
        let site = Site::new("dir");
        let server = spawn(httpool::ServeDir::new(site.0.join("root")).unwrap());
        let (etag, modified) = validators(&server);
        let file_head = |status: &str, length: usize| {
            format!(
                "HTTP/1.1 {status}\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\nETag: {etag}\r\n\
                 Last-Modified: {modified}\r\nAccept-Ranges: bytes\r\n"
            ) + &format!("Content-Length: {length}\r\n")
        };
        let cases = [
            ("GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(), file_head("200 OK", 13) + "\r\nhello, world\n"),
            ("HEAD /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(), file_head("200 OK", 13) + "\r\n"),
            (
                "GET /hello.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=7-11\r\n\r\n".to_owned(),
                format!(
                    "HTTP/1.1 206 Partial Content\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\n\
                     Content-Range: bytes 7-11/13\r\nETag: {etag}\r\nLast-Modified: {modified}\r\n\
                     Accept-Ranges: bytes\r\nContent-Length: 5\r\n\r\nworld"
                ),
            ),
            (
                "GET /hello.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=13-\r\n\r\n".to_owned(),
                "HTTP/1.1 416 Range Not Satisfiable\r\nDate: D\r\nContent-Range: bytes */13\r\nContent-Length: 0\r\n\r\n"
                    .to_owned(),
            ),
            (
                format!("GET /hello.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n"),
                format!("HTTP/1.1 304 Not Modified\r\nDate: D\r\nETag: {etag}\r\nLast-Modified: {modified}\r\n\r\n"),
            ),
            (
                format!("GET /hello.txt HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: {modified}\r\n\r\n"),
                format!("HTTP/1.1 304 Not Modified\r\nDate: D\r\nETag: {etag}\r\nLast-Modified: {modified}\r\n\r\n"),
            ),
            (
                "DELETE /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
                "HTTP/1.1 405 Method Not Allowed\r\nDate: D\r\nAllow: GET, HEAD\r\nContent-Length: 0\r\n\r\n".to_owned(),
            ),
            (
                "GET /docs?x=1 HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
                "HTTP/1.1 301 Moved Permanently\r\nDate: D\r\nLocation: /docs/?x=1\r\nContent-Length: 0\r\n\r\n".to_owned(),
            ),
        ];
        for (request, want) in cases {
            assert_eq!(exchange(&server, &request), want, "{request}");
        }
        assert!(exchange(&server, "GET /docs/ HTTP/1.1\r\nHost: t\r\n\r\n").ends_with("\r\n\r\n<h1>docs</h1>\n"));
        assert!(server.shutdown());
    }

    #[test]
    fn no_way_out_of_the_root_over_a_socket() {
        let site = Site::new("traversal");
        let server = spawn(httpool::ServeDir::new(site.0.join("root")).unwrap());
        let refused = |status: &str| format!("HTTP/1.1 {status}\r\nDate: D\r\nContent-Length: 0\r\n\r\n");
        for (target, status) in [
            ("/../secret.txt", "403 Forbidden"),
            ("/docs/../../secret.txt", "403 Forbidden"),
            ("/%2e%2e/secret.txt", "403 Forbidden"),
            ("/%2e%2e%2fsecret.txt", "403 Forbidden"),
            ("/docs%2f..%2f..%2fsecret.txt", "403 Forbidden"),
            ("/..%5csecret.txt", "403 Forbidden"),
            ("/hello.txt%00", "403 Forbidden"),
            ("/%zz", "400 Bad Request"),
            ("/.secret", "404 Not Found"),
            ("/missing", "404 Not Found"),
        ]
        .into_iter()
        // A symbolic link on Windows needs a privilege tests lack. One out
        // of the root is not there, as far as a client can tell.
        .chain(cfg!(unix).then_some(("/leak.txt", "404 Not Found")))
        // Names Windows reads as another file: a stream of hello.txt, and
        // hello.txt itself.
        .chain(cfg!(windows).then_some(("/hello.txt::$DATA", "404 Not Found")))
        .chain(cfg!(windows).then_some(("/hello.txt.", "404 Not Found")))
        {
            let request = format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n");
            assert_eq!(exchange(&server, &request), refused(status), "{target}");
        }
        assert!(server.shutdown());
    }

    /// Windows gives a file a second, 8.3 name (`GIT~1` for `.git`; Wine
    /// makes `_GIT~IBP`): a hidden file is refused under it too.
    #[cfg(windows)]
    #[test]
    fn a_hidden_file_is_refused_under_its_short_name() {
        #[allow(unsafe_code)]
        fn short_name(path: &std::path::Path) -> Option<String> {
            use std::os::windows::ffi::OsStrExt;
            let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
            let mut out = vec![0u16; 1024];
            // SAFETY: `wide` is a NUL-terminated UTF-16 path and `out` a
            // buffer of the length passed; the call writes at most that many
            // units into it and reads nothing else of ours.
            let n = unsafe {
                windows_sys::Win32::Storage::FileSystem::GetShortPathNameW(
                    wide.as_ptr(),
                    out.as_mut_ptr(),
                    out.len() as u32,
                )
            } as usize;
            let name = String::from_utf16(out.get(..n)?).ok()?;
            Some(name.rsplit('\\').next()?.to_string())
        }
        let site = Site::new("short");
        std::fs::create_dir(site.0.join("root/.git")).unwrap();
        std::fs::write(site.0.join("root/.git/config"), "secret\n").unwrap();
        let Some(git) = short_name(&site.0.join("root").join(".git")).filter(|n| n.contains('~')) else {
            eprintln!("no 8.3 names on this volume; skipping");
            return;
        };
        let server = spawn(httpool::ServeDir::new(site.0.join("root")).unwrap());
        for target in ["/.git/config".to_string(), format!("/{git}/config")] {
            let request = format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n");
            assert!(exchange(&server, &request).starts_with("HTTP/1.1 404 Not Found\r\n"), "{target}");
        }
        assert!(server.shutdown());
    }

    #[cfg(feature = "compression")]
    #[test]
    fn compressed_files_offer_no_ranges_and_ranges_stay_identity() {
        let site = Site::new("gzip");
        let page = "<p>a page worth compressing</p>\n".repeat(64);
        site.write("root/page.html", &page);
        let server = spawn(httpool::compress(httpool::ServeDir::new(site.0.join("root")).unwrap()));
        let mut conn = connect(server.local_addr());
        send(&mut conn, b"GET /page.html HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n");
        let reply = common::read_reply(&mut conn, false).unwrap();
        assert_eq!((reply.status, reply.header("content-encoding")), (200, Some("gzip")));
        assert_eq!(reply.header("accept-ranges"), None);
        let etag = reply.header("etag").unwrap().to_owned();
        assert!(etag.starts_with("W/\""), "{etag}");
        // The weak tag still validates a cached copy.
        send(&mut conn, format!("GET /page.html HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n").as_bytes());
        assert_eq!(common::read_reply(&mut conn, false).unwrap().status, 304);
        send(&mut conn, b"GET /page.html HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nRange: bytes=0-9\r\n\r\n");
        let reply = common::read_reply(&mut conn, false).unwrap();
        assert_eq!((reply.status, reply.header("content-encoding")), (206, None));
        assert_eq!(reply.body, &page.as_bytes()[..10]);
        // The part varies on Accept-Encoding as the whole does (it had no
        // Vary: a cache could have served it to a client that wanted gzip).
        assert_eq!(reply.header("vary"), Some("Accept-Encoding"));
        assert!(server.shutdown());
    }

    /// A revalidation of a gzipped answer gets a `304` with the `ETag` and
    /// `Vary` the `200` had (RFC 9110 §15.4.5): the weak tag and `Vary:
    /// Accept-Encoding`. (It had the strong tag and no `Vary`, so a cache
    /// would have stored the gzipped bytes under the identity tag.)
    #[cfg(feature = "compression")]
    #[test]
    fn a_304_to_a_gzipped_answer_keeps_its_weak_etag_and_vary() {
        let site = Site::new("gzip304");
        site.write("root/page.html", "<p>a page worth compressing</p>\n".repeat(64));
        let server = spawn(httpool::compress(httpool::ServeDir::new(site.0.join("root")).unwrap()));
        let mut conn = connect(server.local_addr());
        send(&mut conn, b"GET /page.html HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n");
        let full = common::read_reply(&mut conn, false).unwrap();
        let etag = full.header("etag").unwrap().to_owned();
        assert_eq!((full.header("content-encoding"), full.header("vary")), (Some("gzip"), Some("Accept-Encoding")));
        let ask =
            format!("GET /page.html HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nIf-None-Match: {etag}\r\n\r\n");
        send(&mut conn, ask.as_bytes());
        let fresh = common::read_reply(&mut conn, false).unwrap();
        assert_eq!(fresh.status, 304);
        assert_eq!((fresh.header("etag"), fresh.header("vary")), (Some(etag.as_str()), Some("Accept-Encoding")));
        // A client holding the identity answer's strong tag gets it back.
        let strong = etag.trim_start_matches("W/");
        send(&mut conn, format!("GET /page.html HTTP/1.1\r\nHost: t\r\nIf-None-Match: {strong}\r\n\r\n").as_bytes());
        let fresh = common::read_reply(&mut conn, false).unwrap();
        assert_eq!((fresh.status, fresh.header("etag")), (304, Some(strong)));
        assert!(server.shutdown());
    }

    /// A `HEAD` gets the headers a `GET` gets, file by file, gzipped or
    /// not, and so does a `304` to either (but its body's own headers).
    #[cfg(feature = "compression")]
    #[test]
    fn head_and_304_answers_carry_the_get_answer_s_headers() {
        let site = Site::new("headsame");
        site.write("root/page.html", "<p>a page worth compressing</p>\n".repeat(64));
        let server = spawn(httpool::compress(httpool::ServeDir::new(site.0.join("root")).unwrap()));
        let mut conn = connect(server.local_addr());
        let mut ask = |method: &str, extra: &str| {
            send(&mut conn, format!("{method} /page.html HTTP/1.1\r\nHost: t\r\n{extra}\r\n").as_bytes());
            let mut reply = common::read_reply(&mut conn, method == "HEAD").unwrap();
            reply.headers.retain(|(n, _)| n != "date");
            reply
        };
        for gzip in ["", "Accept-Encoding: gzip\r\n"] {
            let get = ask("GET", gzip);
            let head = ask("HEAD", gzip);
            assert_eq!((head.status, &head.headers), (200, &get.headers), "{gzip:?}");
            let etag = get.headers.iter().find(|(n, _)| n == "etag").unwrap().1.clone();
            let fresh = ask("GET", &format!("{gzip}If-None-Match: {etag}\r\n"));
            let without_body = |headers: &[(String, String)]| -> Vec<(String, String)> {
                let body = ["content-length", "content-type", "content-encoding", "accept-ranges", "transfer-encoding"];
                headers.iter().filter(|(n, _)| !body.contains(&n.as_str())).cloned().collect()
            };
            assert_eq!((fresh.status, without_body(&fresh.headers)), (304, without_body(&get.headers)), "{gzip:?}");
        }
        assert!(server.shutdown());
    }

    #[test]
    fn a_large_file_goes_out_whole_on_a_kept_connection() {
        let site = Site::new("large");
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 253) as u8).collect();
        site.write("root/big.bin", &big);
        let server = spawn(httpool::ServeDir::new(site.0.join("root")).unwrap());
        let mut conn = connect(server.local_addr());
        for range in ["", "Range: bytes=1000000-1999999\r\n"] {
            send(&mut conn, format!("GET /big.bin HTTP/1.1\r\nHost: t\r\n{range}\r\n").as_bytes());
            let reply = common::read_reply(&mut conn, false).unwrap();
            let want = if range.is_empty() { &big[..] } else { &big[1_000_000..2_000_000] };
            assert_eq!((reply.status, reply.body.len()), (if range.is_empty() { 200 } else { 206 }, want.len()));
            assert!(reply.body == want);
        }
        assert!(server.shutdown());
    }
}

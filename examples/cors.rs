//! A JSON-ish API on one origin and a browser page on another that calls
//! it (`httpool::cors`): three listeners in one process.
//!
//! ```sh
//! cargo run --example cors     # page 127.0.0.1:8012, API 127.0.0.1:8013, other page 127.0.0.1:8014
//! ```
//!
//! Open <http://127.0.0.1:8012/> in a browser: the page `fetch`es the API
//! on port 8013, another origin, and shows what it got:
//!
//! - `simple`: a `GET`, no preflight; it reads the exposed `X-Api-Version`;
//! - `preflighted`: a `PUT` with `X-Token` and a JSON `Content-Type`,
//!   which the browser asks the API about first (`OPTIONS`);
//! - `refused-header`: a `PUT` with a header the API does not allow: the
//!   preflight is refused and `fetch` fails (`TypeError`);
//! - `credentialed`: a `POST` that sets a cookie, then a `GET` that sends
//!   it back (`credentials: "include"`).
//!
//! The same page from <http://127.0.0.1:8014/>, an origin the API does not
//! allow, gets a `TypeError` for every call. `ci/web.sh` checks both pages
//! in headless Chromium. With curl, the preflight:
//!
//! ```sh
//! curl -i -X OPTIONS http://127.0.0.1:8013/api/notes/1 -H 'Origin: http://127.0.0.1:8012' \
//!     -H 'Access-Control-Request-Method: PUT' -H 'Access-Control-Request-Headers: x-token'
//! #   204, Access-Control-Allow-Origin: http://127.0.0.1:8012, -Allow-Methods: PUT, …
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use httpool::{Cors, Handler, Request, Response, Server};

/// The API, allowing `page_origin` (e.g. `http://127.0.0.1:8012`) only.
pub fn api(page_origin: &str) -> Cors<impl Handler> {
    httpool::cors(routes)
        .allow_origin(page_origin)
        .allow_methods(["PUT"])
        .allow_headers(["x-token", "content-type"])
        .expose_headers(["x-api-version"])
        .allow_credentials(true)
        .max_age(Duration::from_secs(60))
}

fn routes(req: &mut Request) -> Result<Response, httpool::Error> {
    static VISITORS: AtomicU64 = AtomicU64::new(0);
    Ok(match (req.method(), req.path()) {
        ("GET", "/api/hello") => Response::text("hello from the API").with_header("X-Api-Version", "1"),
        ("PUT", "/api/notes/1") if req.header("x-token") != Some("letmein") => Response::status(401),
        ("PUT", "/api/notes/1") => Response::text(format!("stored {}", req.read_body_string(1024)?)),
        ("POST", "/api/visit") => {
            let n = VISITORS.fetch_add(1, Ordering::Relaxed) + 1;
            let cookie = format!("visitor=v{n}; Path=/; HttpOnly; SameSite=Lax");
            Response::text("welcome").with_header("Set-Cookie", cookie)
        }
        ("GET", "/api/visit") => match req.cookie("visitor") {
            Some(visitor) => Response::text(format!("visitor {visitor}")),
            None => Response::text("no cookie").with_status(401),
        },
        _ => Response::status(404),
    })
}

/// The page, calling the API at `api_base` (e.g. `http://127.0.0.1:8013`).
pub fn page(api_base: String) -> impl Handler {
    let html = PAGE.replace("{API}", &api_base);
    move |req: &mut Request| match req.path() {
        "/" => Response::html(html.clone()),
        _ => Response::status(404),
    }
}

const PAGE: &str = r#"<!doctype html>
<meta charset="utf-8">
<title>CORS example</title>
<h1>Calls to {API}</h1>
<ul>
  <li>simple: <span id="simple">…</span>
  <li>preflighted: <span id="preflighted">…</span>
  <li>refused-header: <span id="refused-header">…</span>
  <li>credentialed: <span id="credentialed">…</span>
</ul>
<p id="status">running</p>
<script>
const api = "{API}";
async function check(id, call) {
  const shown = document.getElementById(id);
  try {
    shown.textContent = "ok: " + await call();
  } catch (e) {
    shown.textContent = "error: " + e.name + ": " + e.message;
  }
}
(async () => {
  await check("simple", async () => {
    const r = await fetch(api + "/api/hello");
    return (await r.text()) + " (version " + r.headers.get("x-api-version") + ")";
  });
  await check("preflighted", async () => {
    const r = await fetch(api + "/api/notes/1", {
      method: "PUT",
      headers: { "X-Token": "letmein", "Content-Type": "application/json" },
      body: '{"note":"hi"}',
    });
    return r.status + " " + await r.text();
  });
  await check("refused-header", async () => {
    const r = await fetch(api + "/api/notes/1", { method: "PUT", headers: { "X-Other": "1" }, body: "x" });
    return r.status + " " + await r.text();
  });
  await check("credentialed", async () => {
    await fetch(api + "/api/visit", { method: "POST", credentials: "include" });
    const r = await fetch(api + "/api/visit", { credentials: "include" });
    return r.status + " " + await r.text();
  });
  document.getElementById("status").textContent = "done";
})();
</script>
"#;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |default: &str| args.next().unwrap_or_else(|| default.to_owned());
    let (page_addr, api_addr, other_addr) = (next("127.0.0.1:8012"), next("127.0.0.1:8013"), next("127.0.0.1:8014"));
    let (page_server, api_server) = (Server::bind(page_addr)?, Server::bind(api_addr)?);
    let api_base = format!("http://{}", api_server.local_addr()?);
    let page_origin = format!("http://{}", page_server.local_addr()?);
    eprintln!("page on {page_origin}/, API on {api_base}, allowing {page_origin} only");
    let _api = api_server.spawn_handler(api(&page_origin))?;
    let other = Server::bind(other_addr)?;
    eprintln!("the same page on http://{}/, an origin the API does not allow", other.local_addr()?);
    let _other = other.spawn_handler(page(api_base.clone()))?;
    page_server.serve_handler(page(api_base))
}

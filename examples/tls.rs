//! HTTPS (feature `tls`).
//!
//! ```sh
//! cargo run --features tls --example tls -- 127.0.0.1:8443 cert.pem key.pem
//! curl --cacert cert.pem https://localhost:8443/
//! ```
//!
//! Without certificate paths it makes a self-signed certificate for
//! `localhost`, writes it to `httpool-example-cert.pem` in the temporary
//! directory, and prints the `curl` line that trusts it.

use httpool::{Response, Server};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8443".into());
    let (cert, key) = match (args.next(), args.next()) {
        (Some(cert), Some(key)) => (std::fs::read(cert)?, std::fs::read(key)?),
        _ => self_signed()?,
    };
    let server = Server::bind(&addr)?.tls(httpool::tls::config_from_pem(&cert, &key)?);
    eprintln!("serving https://{}/", server.local_addr()?);
    server.serve(|req| Response::text(format!("secure hello from {}\n", req.path())))?;
    Ok(())
}

fn self_signed() -> Result<(Vec<u8>, Vec<u8>), Box<dyn std::error::Error>> {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
    let path = std::env::temp_dir().join("httpool-example-cert.pem");
    std::fs::write(&path, made.cert.pem())?;
    eprintln!("self-signed certificate: curl --cacert {} https://localhost:PORT/", path.display());
    Ok((made.cert.pem().into_bytes(), made.key_pair.serialize_pem().into_bytes()))
}

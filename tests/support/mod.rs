//! Test harness: the real gateway binary, real a2a-sdk agents (Python), and small stub
//! upstreams, all on loopback ports.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv Python with a2a-sdk (`scripts/setup` makes it).
pub fn python() -> PathBuf {
    let path = std::env::var_os("CARDGATE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"));
    assert!(
        path.exists(),
        "{} not found: run scripts/setup (or scripts/test) to create the test venv with a2a-sdk",
        path.display()
    );
    path
}

/// A port for a child process (gateway, agent) to listen on. It is taken below the kernel's
/// ephemeral range (32768 and up): a port-0 listener or a client socket opened meanwhile by a
/// test running in parallel is never handed the same number before the child binds it. Each
/// test process counts through its own block of ports.
pub fn free_port() -> u16 {
    const BLOCK: u16 = 300;
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 40) as u16 * BLOCK;
    for _ in 0..BLOCK {
        let port = base + NEXT.fetch_add(1, Ordering::Relaxed) % BLOCK;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {base}..{}", base + BLOCK);
}

/// Poll `f` until it returns Some, or panic after `timeout` naming `what`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// A child process killed when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ---- HTTP ----

pub fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build(),
    )
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn reply(mut resp: http::Response<ureq::Body>) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let body = resp
        .body_mut()
        .with_config()
        .limit(1 << 30)
        .read_to_vec()
        .unwrap_or_default();
    Reply {
        status,
        headers,
        body,
    }
}

pub fn get(url: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = agent().get(url);
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    reply(req.call().unwrap_or_else(|e| panic!("GET {url}: {e}")))
}

pub fn post(url: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut req = agent().post(url);
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    reply(req.send(body).unwrap_or_else(|e| panic!("POST {url}: {e}")))
}

pub fn post_json(url: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    post(url, &all, &serde_json::to_vec(body).unwrap())
}

// ---- the a2a-sdk reference agent ----

pub struct SdkAgent {
    pub port: u16,
    _proc: Proc,
}

impl SdkAgent {
    /// Start `tests/agents/sdk_agent.py` with extra arguments; waits for its card.
    pub fn start(args: &[&str]) -> Self {
        let port = free_port();
        Self::start_on(port, args)
    }

    pub fn start_on(port: u16, args: &[&str]) -> Self {
        let child = Command::new(python())
            .arg(repo().join("tests/agents/sdk_agent.py"))
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the sdk agent");
        let agent = SdkAgent {
            port,
            _proc: Proc(child),
        };
        let url = format!("{}/.well-known/agent-card.json", agent.url());
        wait_for("the sdk agent", Duration::from_secs(30), || {
            agent_ok(&url).then_some(())
        });
        agent.reset();
        agent
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request the agent has received since the last reset.
    pub fn requests(&self) -> Vec<Value> {
        get(&format!("{}/_test/requests", self.url()), &[]).json()["requests"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Requests other than card fetches.
    pub fn a2a_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["path"] != "/.well-known/agent-card.json")
            .collect()
    }

    pub fn reset(&self) {
        post(&format!("{}/_test/reset", self.url()), &[], b"");
    }
}

fn agent_ok(url: &str) -> bool {
    agent()
        .get(url)
        .call()
        .map(|r| r.status() == 200)
        .unwrap_or(false)
}

/// Run `tests/agents/sdk_client.py`; returns its output lines as JSON.
pub fn sdk_client(args: &[&str]) -> Vec<Value> {
    let out = Command::new(python())
        .arg(repo().join("tests/agents/sdk_client.py"))
        .args(args)
        .output()
        .expect("run the sdk client");
    assert!(
        out.status.success(),
        "sdk client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("client printed {l:?}")))
        .collect()
}

// ---- the gateway ----

pub struct Gateway {
    pub port: u16,
    pub admin_port: u16,
    pub dir: tempfile::TempDir,
    pub proc: Proc,
    pub stderr_log: PathBuf,
}

impl Gateway {
    /// Start the gateway on free ports with `agents_yaml` (a YAML list, as under `agents:`)
    /// and `extra_yaml` (top-level keys); waits for /healthz.
    pub fn start(agents_yaml: &str, extra_yaml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let admin_port = free_port();
        let config = dir.path().join("gateway.yaml");
        std::fs::write(
            &config,
            Self::config_text(port, admin_port, agents_yaml, extra_yaml),
        )
        .unwrap();
        let stderr_log = dir.path().join("stderr.log");
        let child = Command::new(env!("CARGO_BIN_EXE_cardgate"))
            .args(["run", "--config"])
            .arg(&config)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_log).unwrap())
            .spawn()
            .expect("start cardgate");
        let gw = Gateway {
            port,
            admin_port,
            dir,
            proc: Proc(child),
            stderr_log,
        };
        let health = gw.admin("/healthz");
        wait_for("the gateway's /healthz", Duration::from_secs(20), || {
            agent_ok(&health).then_some(())
        });
        // pingora binds each service's listener in its own thread: the admin one answering
        // does not mean the proxy one accepts yet.
        wait_for("the gateway's listener", Duration::from_secs(20), || {
            TcpStream::connect(("127.0.0.1", port)).ok()
        });
        gw
    }

    fn config_text(port: u16, admin: u16, agents_yaml: &str, extra_yaml: &str) -> String {
        let poll = if extra_yaml.contains("reload_poll:") {
            ""
        } else {
            "reload_poll: 200ms\n"
        };
        format!("listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin}\n{poll}{extra_yaml}\nagents:\n{agents_yaml}\n")
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("gateway.yaml")
    }

    /// Replace the config file (the gateway reloads it).
    pub fn rewrite_config(&self, agents_yaml: &str, extra_yaml: &str) {
        let text = Self::config_text(self.port, self.admin_port, agents_yaml, extra_yaml);
        write_atomically(&self.config_path(), &text);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn admin(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.admin_port)
    }

    /// Wait until the agent's card is served.
    pub fn wait_card(&self, agent: &str) -> Value {
        let url = self.url(&format!("/agents/{agent}/.well-known/agent-card.json"));
        wait_for(
            &format!("agent {agent}'s card"),
            Duration::from_secs(20),
            || {
                let r = get(&url, &[]);
                (r.status == 200).then(|| r.json())
            },
        )
    }

    /// The value of a metric sample, e.g. `cardgate_card_fetches_total{agent="a",result="ok"}`
    /// (labels in any order), or 0.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let text = get(&self.admin("/metrics"), &[]).text();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                let (n, rest) = series.split_once('{').unwrap_or((series, ""));
                (n == name
                    && labels
                        .iter()
                        .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\""))))
                .then(|| value.parse::<f64>().ok())
                .flatten()
            })
            .sum()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.proc.0.id() as i32
    }
}

pub fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

// ---- stub upstreams ----

/// What a stub does with each connection.
#[derive(Clone)]
pub enum StubMode {
    /// Answer every request with this status, content type and body.
    Fixed(u16, &'static str, Vec<u8>),
    /// Serve a minimal card naming the stub itself; never answer anything else.
    CardThenHang,
    /// Accept, read, never answer.
    Hang,
    /// Answer every request with 200 and the JSON body the test currently holds.
    Shared(Arc<std::sync::Mutex<Vec<u8>>>),
}

/// A tiny HTTP/1.1 server for upstream failure cases; counts connections and bytes.
pub struct Stub {
    pub port: u16,
    pub connections: Arc<AtomicUsize>,
    pub bytes: Arc<AtomicUsize>,
}

impl Stub {
    pub fn start(mode: StubMode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let bytes = Arc::new(AtomicUsize::new(0));
        let (c, b) = (connections.clone(), bytes.clone());
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                let mode = mode.clone();
                let b = b.clone();
                thread::spawn(move || serve_stub(stream, mode, b));
            }
        });
        Stub {
            port,
            connections,
            bytes,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

fn serve_stub(stream: TcpStream, mode: StubMode, bytes: Arc<AtomicUsize>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        bytes.fetch_add(request_line.len(), Ordering::SeqCst);
        let mut content_length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            bytes.fetch_add(line.len(), Ordering::SeqCst);
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        bytes.fetch_add(content_length, Ordering::SeqCst);
        let path = request_line.split(' ').nth(1).unwrap_or("").to_string();
        let (status, ctype, body) = match &mode {
            StubMode::Fixed(s, t, b) => (*s, *t, b.clone()),
            StubMode::Shared(body) => (200, "application/json", body.lock().unwrap().clone()),
            StubMode::CardThenHang if path.ends_with("/.well-known/agent-card.json") => {
                let own = out.local_addr().unwrap();
                (
                    200,
                    "application/json",
                    minimal_card(&format!("http://{own}")),
                )
            }
            StubMode::CardThenHang | StubMode::Hang => {
                thread::sleep(Duration::from_secs(3600));
                return;
            }
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&body).is_err() {
            return;
        }
    }
}

/// A minimal valid v1.0 card whose interface is `base`.
pub fn minimal_card(base: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "name": "stub", "description": "stub agent", "version": "1",
        "supportedInterfaces": [{"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["t"]}]
    }))
    .unwrap()
}

pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn b64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

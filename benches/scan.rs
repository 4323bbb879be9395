//! The scanner beside its physical anchor (memchr2 over the same bytes) and beside serde_json,
//! on three bodies: 50 MB with one inline file, 3 KB with several parts, 1 MB of text.
//!
//! `cargo bench --bench scan -- --noplot` runs criterion, then prints ratios measured in the
//! same process (interleaved medians), which move far less between machines than GB/s do.
//! `SCAN_BENCH_RATIOS_ONLY=1` skips criterion; `SCAN_BENCH_BODY=file.json` times one body.
//!
//! `SCAN_BENCH_DUMP=dir` writes the three bodies there (for `SCAN_BENCH_BODY` and callgrind).
//!
//! Measured 2026-11-22, fourth round (2-vCPU EPYC, shared, default build, `taskset -c 1`):
//! 50 MB: scanner 27-33 GB/s = 0.83-0.89x memchr2, 18-20x serde_json Value;
//! 3 KB (walked whole, its length known as from Content-Length): 2.11-2.31 GB/s =
//! 0.68-0.72x memchr2, 4.0-4.4x serde_json Value, 1.48-1.64x serde_json borrowed struct
//! (1.23-1.37x with the state machine alone);
//! 1 MB text: 1.39-1.41 GB/s = 0.53x memchr2, 0.82-0.83x serde_json Value.

use std::borrow::Cow;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use cardgate::card::constraints::InputConstraints;
use cardgate::scan::{BodyShape, Policy, ScanOptions, Scanner};
use criterion::{criterion_group, Criterion, Throughput};
use serde::Deserialize;
use serde_json::{json, Value};

const CHUNK: usize = 64 * 1024;

fn policy() -> Arc<Policy> {
    let (c, issues) = InputConstraints::parse(
        &json!({"files": {"maxTotalSizeBytes": 104857600u64, "maxCountPerRequest": 10, "maxSizePerFileBytes": 67108864u64,
            "perMimeType": {"image/png": {"maxSizeBytes": 10485760, "maxDimensions": {"width": 4096, "height": 4096}},
                            "image/jpeg": {"maxSizeBytes": 20971520, "maxDimensions": {"width": 8192, "height": 8192}}}},
            "text": {"maxCharacters": 2000000}}),
        "bench",
    );
    assert!(issues.is_empty());
    let modes: Vec<String> = [
        "text/plain",
        "image/*",
        "application/pdf",
        "application/octet-stream",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Arc::new(Policy::new(&c, Some(&modes), ScanOptions::default()))
}

/// Deterministic pseudo-random bytes (xorshift), so runs compare.
fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn big_body() -> Vec<u8> {
    let data = base64::engine::general_purpose::STANDARD.encode(noise(37_500_000));
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m1","role":"user","parts":[{{"kind":"text","text":"please look at this file"}},{{"kind":"file","file":{{"name":"blob.bin","mimeType":"application/octet-stream","bytes":"{data}"}}}}]}}}}}}"#
    )
    .into_bytes()
}

fn small_body() -> Vec<u8> {
    let png = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/images/rgba_19x41.png"
    ))
    .unwrap();
    let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
    let mut parts = Vec::new();
    for i in 0..4 {
        parts.push(format!(
            r#"{{"text":"Caf\u00e9 order #{i}: \"two\" espressos,\nplease \u2014 and a croissant. Tab\there. Merci! d\u00e9j\u00e0 vu"}}"#
        ));
        let blob = if i % 2 == 0 {
            png.clone()
        } else {
            noise(300 + 40 * i)
        };
        let t = if i % 2 == 0 {
            "image/png"
        } else {
            "application/octet-stream"
        };
        parts.push(format!(
            r#"{{"raw":"{}","mediaType":"{t}","filename":"file{i}.bin"}}"#,
            b64(&blob)
        ));
    }
    parts.push(r#"{"url":"https://files.example.com/report.pdf","mediaType":"application/pdf","filename":"report.pdf"}"#.into());
    parts.push(
        r#"{"data":{"kind":"form","fields":{"name":"Ada","age":36,"tags":["a","b"],"ok":true}}}"#
            .into(),
    );
    format!(
        r#"{{"jsonrpc":"2.0","id":42,"method":"SendMessage","params":{{"message":{{"messageId":"6f1c2a","role":"ROLE_USER","parts":[{}]}},"configuration":{{"acceptedOutputModes":["text/plain"],"historyLength":5}}}}}}"#,
        parts.join(",")
    )
    .into_bytes()
}

fn text_body() -> Vec<u8> {
    let para = "Lorem ipsum dolor sit amet, consectetur adipiscing elit \u{2014} \u{e9}l\u{e8}ve, na\u{ef}ve, \u{1F600}. \
        \"Quoted\" words and a backslash \\\\ appear.\n";
    let para_json = serde_json::to_string(para).unwrap();
    let mut parts = Vec::new();
    let mut size = 0;
    while size < 1_000_000 {
        let text = para_json.trim_matches('"').repeat(40);
        size += text.len();
        parts.push(format!(r#"{{"kind":"text","text":"{text}"}}"#));
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":"t","method":"message/send","params":{{"message":{{"messageId":"m","role":"user","parts":[{}]}}}}}}"#,
        parts.join(",")
    )
    .into_bytes()
}

/// A named candidate for the interleaved timing.
type Candidate<'a> = (&'static str, Box<dyn FnMut() + 'a>);
/// A bench body: name, how to make it, chunk size.
type BodyMaker = (&'static str, fn() -> Vec<u8>, usize);

fn scan(policy: &Arc<Policy>, body: &[u8], chunk: usize) {
    let mut s = Scanner::new(policy.clone(), BodyShape::JsonRpc);
    // As the gateway does with a request's Content-Length.
    s.expect_len(body.len() as u64);
    for c in body.chunks(chunk) {
        s.feed(c).expect("bench bodies are accepted");
    }
    black_box(s.finish().expect("bench bodies are accepted"));
}

fn memchr2_pass(body: &[u8]) -> usize {
    memchr::memchr2_iter(b'"', b'\\', body).count()
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Req<'a> {
    jsonrpc: &'a str,
    id: u64,
    method: &'a str,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Params<'a> {
    #[serde(borrow)]
    message: Msg<'a>,
    configuration: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Msg<'a> {
    #[serde(rename = "messageId")]
    message_id: &'a str,
    role: &'a str,
    #[serde(borrow)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Part<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    raw: Option<&'a str>,
    url: Option<&'a str>,
    #[serde(rename = "mediaType")]
    media_type: Option<&'a str>,
    filename: Option<&'a str>,
    data: Option<serde::de::IgnoredAny>,
}

/// The serde_json baseline: the small body into borrowed structs; returns the part count.
fn serde_borrowed_parts(body: &[u8]) -> usize {
    serde_json::from_slice::<Req>(body)
        .unwrap()
        .params
        .message
        .parts
        .len()
}

fn benches(c: &mut Criterion) {
    let p = policy();
    let cases: [(&str, Vec<u8>, usize); 3] = [
        ("big_50MB", big_body(), CHUNK),
        ("small_3KB", small_body(), usize::MAX),
        ("text_1MB", text_body(), CHUNK),
    ];
    for (name, body, chunk) in &cases {
        let mut g = c.benchmark_group(*name);
        g.throughput(Throughput::Bytes(body.len() as u64));
        if body.len() > 10_000_000 {
            g.sample_size(10)
                .warm_up_time(Duration::from_secs(2))
                .measurement_time(Duration::from_secs(8));
        } else {
            g.warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(3));
        }
        g.bench_function("scanner", |b| b.iter(|| scan(&p, black_box(body), *chunk)));
        g.bench_function("memchr2", |b| {
            b.iter(|| black_box(memchr2_pass(black_box(body))))
        });
        g.bench_function("serde_json_value", |b| {
            b.iter(|| black_box(serde_json::from_slice::<Value>(black_box(body)).unwrap()))
        });
        if *name == "small_3KB" {
            g.bench_function("serde_json_borrowed", |b| {
                b.iter(|| black_box(serde_borrowed_parts(black_box(body))))
            });
        }
        g.finish();
    }
}

/// Median seconds per call of each candidate, interleaved so drift hits them alike.
fn medians(candidates: &mut [Candidate<'_>], reps: usize, min_rep: Duration) -> Vec<f64> {
    // Calls per rep so one rep lasts at least `min_rep`.
    let calls: Vec<u32> = candidates
        .iter_mut()
        .map(|(_, f)| {
            let t = Instant::now();
            f();
            let one = t.elapsed().max(Duration::from_nanos(50));
            ((min_rep.as_secs_f64() / one.as_secs_f64()).ceil() as u32).max(1)
        })
        .collect();
    let mut samples = vec![Vec::new(); candidates.len()];
    for _ in 0..reps {
        for (i, (_, f)) in candidates.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..calls[i] {
                f();
            }
            samples[i].push(t.elapsed().as_secs_f64() / calls[i] as f64);
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(|a, b| a.partial_cmp(b).unwrap());
            s[s.len() / 2]
        })
        .collect()
}

fn ratios() {
    let p = policy();
    println!("\nratios (interleaved medians, same process):");
    let makers: [BodyMaker; 3] = [
        ("big_50MB", big_body, CHUNK),
        ("small_3KB", small_body, usize::MAX),
        ("text_1MB", text_body, CHUNK),
    ];
    // SCAN_BENCH_DUMP=dir writes the bench bodies there (to profile one with SCAN_BENCH_BODY).
    if let Some(dir) = std::env::var_os("SCAN_BENCH_DUMP") {
        for (name, make, _) in makers {
            std::fs::write(
                std::path::Path::new(&dir).join(format!("{name}.json")),
                make(),
            )
            .unwrap();
        }
        return;
    }
    // SCAN_BENCH_BODY=file.json measures the scanner alone on that body (for profiling).
    if let Some(path) = std::env::var_os("SCAN_BENCH_BODY") {
        let body = std::fs::read(path).unwrap();
        // SCAN_BENCH_ITERS=n: just scan n times (for callgrind, where timing means nothing).
        if let Some(n) = std::env::var("SCAN_BENCH_ITERS")
            .ok()
            .and_then(|n| n.parse::<u32>().ok())
        {
            for _ in 0..n {
                scan(&p, black_box(&body), CHUNK);
            }
            return;
        }
        let mut cands: Vec<Candidate<'_>> =
            vec![("scanner", Box::new(|| scan(&p, black_box(&body), CHUNK)))];
        let m = medians(&mut cands, 30, Duration::from_millis(50));
        println!(
            "  body: {} bytes, {:.0} ns, {:.2} GB/s",
            body.len(),
            m[0] * 1e9,
            body.len() as f64 / m[0] / 1e9
        );
        return;
    }
    for (name, make, chunk) in makers {
        // SCAN_BENCH_CASE=small_3KB measures one body only (for profiling).
        if std::env::var("SCAN_BENCH_CASE").is_ok_and(|c| c != name) {
            continue;
        }
        let body = &make();
        let mut cands: Vec<Candidate<'_>> = vec![
            ("scanner", Box::new(|| scan(&p, black_box(body), chunk))),
            (
                "memchr2",
                Box::new(|| {
                    black_box(memchr2_pass(black_box(body)));
                }),
            ),
            (
                "serde_json_value",
                Box::new(|| {
                    black_box(serde_json::from_slice::<Value>(black_box(body)).unwrap());
                }),
            ),
        ];
        if std::env::var_os("SCAN_BENCH_SCANNER_ONLY").is_some() {
            cands.truncate(1);
            let m = medians(&mut cands, 50, Duration::from_millis(100));
            println!(
                "  {name}: scanner {:.2} GB/s",
                body.len() as f64 / m[0] / 1e9
            );
            continue;
        }
        if name == "small_3KB" {
            cands.push((
                "serde_json_borrowed",
                Box::new(|| {
                    black_box(serde_borrowed_parts(black_box(body)));
                }),
            ));
        }
        let reps = 9;
        let min_rep = if body.len() > 10_000_000 {
            Duration::from_millis(60)
        } else {
            Duration::from_millis(50)
        };
        let m = medians(&mut cands, reps, min_rep);
        let gbs = |s: f64| body.len() as f64 / s / 1e9;
        let line: Vec<String> = cands
            .iter()
            .zip(&m)
            .map(|((n, _), s)| format!("{n} {:.2} GB/s", gbs(*s)))
            .collect();
        println!("  {name} ({} bytes): {}", body.len(), line.join(", "));
        println!("    scanner / memchr2 = {:.2}x", m[1] / m[0]);
        println!("    scanner / serde_json Value = {:.2}x", m[2] / m[0]);
        if m.len() > 3 {
            println!(
                "    scanner / serde_json borrowed struct = {:.2}x",
                m[3] / m[0]
            );
        }
    }
}

criterion_group!(scan_benches, benches);

fn main() {
    if std::env::var_os("SCAN_BENCH_RATIOS_ONLY").is_none() {
        scan_benches();
        Criterion::default().configure_from_args().final_summary();
    }
    ratios();
}

//! `etcd-lock` against a real `etcd` (Debian's etcd-server 3.4.23): each client's
//! [`EtcdMsg`] requests become calls of etcd's v3 API through its JSON gRPC gateway
//! (`POST /v3/...` on the client URL, keys and values base64), sent with `ureq` on an
//! HTTP connection of the client's own, and the answers become the model server's
//! replies. Why the gateway and not gRPC: the Rust gRPC clients of etcd (`etcd-client`,
//! over tonic) generate their code from etcd's `.proto` files at build time and need
//! `protoc`, which is not a dependency tenure asks of its builders; etcd 3.4 serves the
//! same API as JSON on the same port.
//!
//! | the model's request | the real call |
//! |---|---|
//! | `LeaseGrant { ttl }` | `/v3/lease/grant {TTL}` (whole seconds) |
//! | `KeepAlive { lease }` | `/v3/lease/keepalive {ID}`: one keep-alive (a TTL of 0: the lease is gone) |
//! | `PutIfAbsent { key, lease }` | `/v3/kv/txn`: if `create_revision(key) == 0` put the key with the lease, else range it (`Mutex.Lock`'s transaction); "lease not found": no revision |
//! | `GetPredecessor { prefix, before }` | `/v3/kv/range` of the prefix, `max_create_revision = before - 1`, sorted by create revision descending, limit 1 (`waitDeletes`'s `Get`) |
//! | `WatchDelete { key, revision }` | `/v3/watch` from `revision + 1`, deletes only, on a stream of its own; the first delete is the model's `KeyDeleted` |
//! | `Get { key }` | `/v3/kv/range` of the key |
//! | `Delete { key }` | `/v3/kv/deleterange` of the key |
//!
//! The server: `etcd --name nK --data-dir D --listen-client-urls http://127.0.0.1:P
//! --listen-peer-urls http://127.0.0.1:Q` (a one-member cluster: the model's one
//! linearizable server), every URL on loopback, the metrics on the client URL.

use crate::node::Later;
use crate::Backend;
use base64::Engine;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;
use tenure_core::NodeId;
use tenure_protocols::etcd_lock::EtcdMsg;

/// The Debian package that has `etcd`.
pub const PACKAGE: &str = "etcd-server";
pub const PROGRAM: &str = "etcd";

/// How long one call may take before the connection is given up (a stopped server).
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// The arguments of one server: a one-member cluster named `name`, its client URL on
/// 127.0.0.1:`port`, its peer URL on 127.0.0.1:`peer`, its data under `dir`.
pub fn args(name: &str, port: u16, peer: u16, dir: &Path) -> Vec<OsString> {
    let client = format!("http://127.0.0.1:{port}");
    let peer = format!("http://127.0.0.1:{peer}");
    let mut a: Vec<OsString> = Vec::new();
    for (k, v) in [
        ("--name", name.to_string()),
        ("--data-dir", dir.join("etcd").display().to_string()),
        ("--listen-client-urls", client.clone()),
        ("--advertise-client-urls", client),
        ("--listen-peer-urls", peer.clone()),
        ("--initial-advertise-peer-urls", peer.clone()),
        ("--initial-cluster", format!("{name}={peer}")),
        ("--initial-cluster-state", "new".to_string()),
        ("--logger", "zap".to_string()),
        ("--log-outputs", "stderr".to_string()),
    ] {
        a.push(format!("{k}={v}").into());
    }
    a
}

fn agent(timeout: Option<Duration>) -> ureq::Agent {
    let mut b = ureq::AgentBuilder::new().timeout_connect(Duration::from_millis(500));
    if let Some(t) = timeout {
        b = b.timeout(t);
    }
    b.build()
}

/// Whether the server on `port` answers `/health` as healthy.
pub fn ready(port: u16) -> bool {
    agent(Some(Duration::from_millis(500)))
        .get(&format!("http://127.0.0.1:{port}/health"))
        .call()
        .ok()
        .and_then(|r| r.into_string().ok())
        .is_some_and(|b| b.contains("true"))
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

fn unb64(v: &Value) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.as_str()?)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// etcd's JSON has 64-bit integers as strings, and leaves zero values out.
fn int(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

/// The first key after every key that starts with `prefix` (etcd's `GetPrefixRangeEnd`).
fn prefix_end(prefix: &str) -> String {
    let mut b = prefix.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        if last < 0xff {
            b.push(last + 1);
            return base64::engine::general_purpose::STANDARD.encode(&b);
        }
    }
    base64::engine::general_purpose::STANDARD.encode([0u8])
}

/// The servers of a run, by node (their client ports).
pub struct Etcd {
    pub ports: BTreeMap<NodeId, u16>,
}

/// A client's connection to one server.
pub struct Conn {
    base: String,
    agent: ureq::Agent,
}

/// One call's answer: `Ok(body)` for a 2xx, `Err(Ok(body))` for an error etcd answered
/// (its JSON), `Err(Err(why))` when the connection failed.
fn call(c: &Conn, path: &str, body: &Value) -> Result<Value, Result<Value, String>> {
    let url = format!("{}{path}", c.base);
    match c.agent.post(&url).send_string(&body.to_string()) {
        Ok(r) => r
            .into_string()
            .map_err(|e| Err(e.to_string()))
            .and_then(|s| serde_json::from_str(&s).map_err(|e| Err(e.to_string()))),
        Err(ureq::Error::Status(_, r)) => Err(Ok(r
            .into_string()
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null))),
        Err(e) => Err(Err(e.to_string())),
    }
}

fn failed(e: Result<Value, String>) -> String {
    match e {
        Ok(v) => format!("etcd answered an error: {v}"),
        Err(e) => e,
    }
}

impl Backend for Etcd {
    type Msg = EtcdMsg;
    type Conn = Conn;

    fn connect(&self, server: NodeId) -> Result<Conn, String> {
        let port = self
            .ports
            .get(&server)
            .ok_or_else(|| format!("n{} is not a server", server.0))?;
        Ok(Conn {
            base: format!("http://127.0.0.1:{port}"),
            agent: agent(Some(CALL_TIMEOUT)),
        })
    }

    fn request(
        &self,
        c: &mut Conn,
        msg: EtcdMsg,
        later: &Later<EtcdMsg>,
    ) -> Result<Option<EtcdMsg>, String> {
        match msg {
            EtcdMsg::LeaseGrant { req, ttl } => {
                let r =
                    call(c, "/v3/lease/grant", &json!({ "TTL": ttl.as_secs() })).map_err(failed)?;
                Ok(Some(EtcdMsg::LeaseGranted {
                    req,
                    lease: int(&r["ID"]),
                    ttl: Duration::from_secs(int(&r["TTL"])),
                }))
            }
            EtcdMsg::KeepAlive { req, lease } => {
                let r = call(
                    c,
                    "/v3/lease/keepalive",
                    &json!({ "ID": lease.to_string() }),
                )
                .map_err(failed)?;
                let ttl = int(&r["result"]["TTL"]);
                Ok(Some(EtcdMsg::KeepAliveReply {
                    req,
                    lease,
                    ttl: (ttl > 0).then(|| Duration::from_secs(ttl)),
                }))
            }
            EtcdMsg::PutIfAbsent { req, key, lease } => {
                let k = b64(&key);
                let txn = json!({
                    "compare": [{ "key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0" }],
                    "success": [{ "request_put": { "key": k, "value": "", "lease": lease.to_string() } }],
                    "failure": [{ "request_range": { "key": k } }],
                });
                let create_revision = match call(c, "/v3/kv/txn", &txn) {
                    Ok(r) if r["succeeded"].as_bool() == Some(true) => {
                        Some(int(&r["header"]["revision"]))
                    }
                    Ok(r) => {
                        let kv = &r["responses"][0]["response_range"]["kvs"][0];
                        (!kv.is_null()).then(|| int(&kv["create_revision"]))
                    }
                    // "etcdserver: requested lease not found": no revision.
                    Err(Ok(e)) if e.to_string().contains("lease not found") => None,
                    Err(e) => return Err(failed(e)),
                };
                Ok(Some(EtcdMsg::PutReply {
                    req,
                    key,
                    create_revision,
                }))
            }
            EtcdMsg::GetPredecessor {
                req,
                prefix,
                before,
            } => {
                let from = format!("{prefix}/");
                let r = call(
                    c,
                    "/v3/kv/range",
                    &json!({
                        "key": b64(&from),
                        "range_end": prefix_end(&from),
                        "sort_order": "DESCEND",
                        "sort_target": "CREATE",
                        "max_create_revision": before.saturating_sub(1).to_string(),
                        "limit": "1",
                    }),
                )
                .map_err(failed)?;
                let key = r["kvs"][0]
                    .get("key")
                    .and_then(unb64)
                    .filter(|_| before > 1);
                Ok(Some(EtcdMsg::Predecessor {
                    req,
                    key,
                    revision: int(&r["header"]["revision"]),
                }))
            }
            EtcdMsg::Get { req, key } => {
                let r = call(c, "/v3/kv/range", &json!({ "key": b64(&key) })).map_err(failed)?;
                let kv = &r["kvs"][0];
                Ok(Some(EtcdMsg::GetReply {
                    req,
                    key,
                    create_revision: (!kv.is_null()).then(|| int(&kv["create_revision"])),
                }))
            }
            EtcdMsg::Delete { req, key } => {
                call(c, "/v3/kv/deleterange", &json!({ "key": b64(&key) })).map_err(failed)?;
                Ok(Some(EtcdMsg::Deleted { req }))
            }
            EtcdMsg::WatchDelete { req, key, revision } => {
                watch_delete(c.base.clone(), req, key, revision, later.clone());
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}

/// A watch on a stream of its own (a thread): the first delete of `key` after
/// `revision` is the model's `KeyDeleted`. It ends with that, or when the stream
/// breaks (the server killed: the client's resync asks again).
fn watch_delete(base: String, req: u64, key: String, revision: u64, later: Later<EtcdMsg>) {
    let body = json!({ "create_request": {
        "key": b64(&key),
        "start_revision": (revision + 1).to_string(),
        "filters": ["NOPUT"],
    }});
    let spawned = std::thread::Builder::new()
        .name(format!("watch {key}"))
        .spawn(move || {
            let Ok(r) = agent(None)
                .post(&format!("{base}/v3/watch"))
                .send_string(&body.to_string())
            else {
                return;
            };
            let reader = std::io::BufReader::new(r.into_reader());
            for line in reader.lines() {
                let Ok(line) = line else { return };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let deleted = v["result"]["events"]
                    .as_array()
                    .is_some_and(|es| es.iter().any(|e| e["type"] == "DELETE"));
                if deleted {
                    later.send(EtcdMsg::KeyDeleted { req, key });
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("tenure real: cannot start a watch thread: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every URL the server is given is on loopback.
    #[test]
    fn every_url_is_loopback() {
        let a = args("n0", 4000, 4001, Path::new("/tmp/x"));
        let urls: Vec<String> = a
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| s.contains("http"))
            .collect();
        assert_eq!(urls.len(), 5);
        for u in &urls {
            for url in u.split_once('=').map(|x| x.1).unwrap_or(u).split(',') {
                let url = url.rsplit_once('=').map_or(url, |x| x.1);
                assert!(url.starts_with("http://127.0.0.1:"), "{u}");
            }
        }
        // No metrics URL of its own: metrics are served on the client URL.
        assert!(!a.iter().any(|s| s.to_string_lossy().contains("metrics")));
    }

    #[test]
    fn prefix_end_is_the_next_key() {
        assert_eq!(prefix_end("/lock/"), b64("/lock0"));
    }
}

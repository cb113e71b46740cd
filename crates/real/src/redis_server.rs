//! The Redis lock protocols (`redis-lock`, `fencing`, `redlock`) against real
//! `redis-server`s: each client's [`LockMsg`] requests become real commands, sent with
//! redis-rs (the `redis` crate's sync API) on a connection of the client's own, and
//! the server's answers become the model server's replies.
//!
//! * `Set { key, owner, ttl }` is `SET key owner NX PX ttl` (`SET key owner NX` without
//!   a TTL): granted if the answer is `OK`, refused if nil. With fencing tokens
//!   (`fencing`) it is one Lua script, `SET ... NX PX` and then `INCR` of the token
//!   counter, atomically, as the model's server grants and counts in one step; the
//!   token is the counter's new value.
//! * `DelIfOwner { key, owner }` is the release script of the Redis `SET`
//!   documentation: `if redis.call("get",KEYS[1]) == ARGV[1] then return
//!   redis.call("del",KEYS[1]) else return 0 end`.
//! * `Del { key }` is `DEL key`.
//!
//! The server is started as `redis-server --bind 127.0.0.1 --port P --dir D --save ""
//! --appendonly no` (the model's lock table: memory only, a restart forgets every
//! lock); a protocol that issues fencing tokens gets `--appendonly yes --appendfsync
//! always` instead (the model's token counter is synced before a token is handed out,
//! so a restarted server never issues one twice).

use crate::Backend;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;
use tenure_core::NodeId;
use tenure_protocols::lock_server::LockMsg;
use tenure_protocols::redis_lock::Msg;

/// The Debian package that has `redis-server`.
pub const PACKAGE: &str = "redis-server";
pub const PROGRAM: &str = "redis-server";

/// The release script (Redis `SET` documentation, "Patterns").
pub const RELEASE: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

/// Acquire with a fencing token: set if absent, then count. 0 means not granted.
pub const SET_WITH_TOKEN: &str = r#"local ok
if ARGV[2] == "0" then ok = redis.call("set", KEYS[1], ARGV[1], "NX") else ok = redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) end
if ok then return redis.call("incr", KEYS[2]) else return 0 end"#;

/// Where the token counter lives.
pub const TOKEN_KEY: &str = "tenure:last_token";

/// The arguments of one server: loopback only, its port and data directory, no
/// persistence (or, with `durable`, every write fsynced to the append-only file).
pub fn args(port: u16, dir: &Path, durable: bool) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![
        "--bind".into(),
        "127.0.0.1".into(),
        "--port".into(),
        port.to_string().into(),
        "--dir".into(),
        dir.as_os_str().to_owned(),
        "--save".into(),
        "".into(),
        "--daemonize".into(),
        "no".into(),
        "--protected-mode".into(),
        "yes".into(),
    ];
    if durable {
        a.extend(["--appendonly", "yes", "--appendfsync", "always"].map(OsString::from));
    } else {
        a.extend(["--appendonly", "no"].map(OsString::from));
    }
    a
}

/// Whether the server on `port` answers PING.
pub fn ready(port: u16) -> bool {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}/")) else {
        return false;
    };
    let Ok(mut c) = client.get_connection_with_timeout(Duration::from_millis(200)) else {
        return false;
    };
    redis::cmd("PING").query::<String>(&mut c).is_ok()
}

/// The servers of a run, by node, and whether grants carry fencing tokens.
pub struct Redis {
    pub ports: BTreeMap<NodeId, u16>,
    pub tokens: bool,
}

impl Backend for Redis {
    type Msg = Msg;
    type Conn = redis::Connection;

    fn connect(&self, server: NodeId) -> Result<redis::Connection, String> {
        let port = self
            .ports
            .get(&server)
            .ok_or_else(|| format!("n{} is not a server", server.0))?;
        let client =
            redis::Client::open(format!("redis://127.0.0.1:{port}/")).map_err(|e| e.to_string())?;
        client
            .get_connection_with_timeout(Duration::from_secs(1))
            .map_err(|e| e.to_string())
    }

    fn request(
        &self,
        c: &mut redis::Connection,
        msg: Msg,
        _later: &crate::node::Later<Msg>,
    ) -> Result<Option<Msg>, String> {
        let Msg::Lock(m) = msg else { return Ok(None) };
        let err = |e: redis::RedisError| e.to_string();
        match m {
            LockMsg::Set {
                req,
                key,
                owner,
                ttl,
            } => {
                let ms = ttl.map(|t| (t.as_millis() as u64).max(1));
                let (granted, token) = if self.tokens {
                    let t: i64 = redis::Script::new(SET_WITH_TOKEN)
                        .key(&key)
                        .key(TOKEN_KEY)
                        .arg(owner.to_string())
                        .arg(ms.unwrap_or(0).to_string())
                        .invoke(c)
                        .map_err(err)?;
                    (t > 0, (t > 0).then_some(t as u64))
                } else {
                    let mut cmd = redis::cmd("SET");
                    cmd.arg(&key).arg(owner.to_string()).arg("NX");
                    if let Some(ms) = ms {
                        cmd.arg("PX").arg(ms);
                    }
                    let ok: Option<String> = cmd.query(c).map_err(err)?;
                    (ok.is_some(), None)
                };
                Ok(Some(Msg::Lock(LockMsg::SetReply {
                    req,
                    granted,
                    token,
                })))
            }
            LockMsg::DelIfOwner { key, owner } => {
                let _: i64 = redis::Script::new(RELEASE)
                    .key(&key)
                    .arg(owner.to_string())
                    .invoke(c)
                    .map_err(err)?;
                Ok(None)
            }
            LockMsg::Del { key } => {
                let _: i64 = redis::cmd("DEL").arg(&key).query(c).map_err(err)?;
                Ok(None)
            }
            LockMsg::SetReply { .. } => Ok(None),
        }
    }
}

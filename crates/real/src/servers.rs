//! Real server processes and the temporary directories they keep their data in: every
//! one is gone when its owner is dropped, whatever ended the run (its end, an error, a
//! panic unwinding, Ctrl-C).
//!
//! A server runs in a process group of its own (`kill(-pgid)` reaches whatever it
//! forks), under `setpriv --pdeathsig KILL` when util-linux's `setpriv` is there, so
//! the kernel kills it if tenure dies without cleaning up (SIGKILL of tenure itself).
//! Only loopback: every server is told to listen on 127.0.0.1 alone.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A directory under the system's temporary directory, removed with everything in it
/// when dropped.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty directory named `tenure-real-<what>-<pid>-<n>`.
    pub fn new(what: &str) -> std::io::Result<TempDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("tenure-real-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        Ok(TempDir(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A program on PATH, or `None`.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// A free TCP port on 127.0.0.1 (the OS's choice; free when this returns).
pub fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}

/// One server process: how to start it (again: a restart reuses the same command, so
/// the same port and data directory), and the running child.
pub struct ServerProc {
    /// `n0`, as the schedule says it.
    pub name: String,
    program: PathBuf,
    args: Vec<OsString>,
    /// stdout and stderr go here (appended across restarts).
    log: PathBuf,
    /// Extra environment (the clock shim's).
    env: Vec<(OsString, OsString)>,
    /// Variables of this process's environment not passed on: those whose names start
    /// with one of these (a server's own configuration variables, which could move
    /// its sockets off loopback).
    scrub: Vec<String>,
    child: Option<Child>,
}

impl ServerProc {
    pub fn new(name: String, program: PathBuf, args: Vec<OsString>, log: PathBuf) -> ServerProc {
        ServerProc {
            name,
            program,
            args,
            log,
            env: Vec::new(),
            scrub: Vec::new(),
            child: None,
        }
    }

    /// Sets an environment variable for every start of the process.
    pub fn env(&mut self, key: impl Into<OsString>, value: impl Into<OsString>) {
        self.env.push((key.into(), value.into()));
    }

    /// Passes on no variable whose name starts with one of `prefixes`.
    pub fn scrub_env(&mut self, prefixes: &[&str]) {
        self.scrub.extend(prefixes.iter().map(|p| p.to_string()));
    }

    /// Starts the process (in its own process group, dying with this thread's process).
    pub fn spawn(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let err = log
            .try_clone()
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut cmd = match on_path("setpriv") {
            Some(setpriv) => {
                let mut c = Command::new(setpriv);
                c.args(["--pdeathsig", "KILL", "--"]).arg(&self.program);
                c
            }
            None => Command::new(&self.program),
        };
        for (k, _) in std::env::vars_os() {
            let name = k.to_string_lossy();
            if self.scrub.iter().any(|p| name.starts_with(p.as_str())) {
                cmd.env_remove(&k);
            }
        }
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .process_group(0);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        self.child = Some(child);
        Ok(())
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is running (not exited).
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// `sig` to the server's process group; `Err` says why it could not be sent.
    pub fn signal(&mut self, sig: Signal) -> Result<(), String> {
        let name = self.name.clone();
        let Some(child) = self.child.as_mut() else {
            return Err(format!("cannot send {sig} to {name}: it has no process"));
        };
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "cannot send {sig} to {name}: its process had already exited ({status})"
            ));
        }
        let pgid = Pid::from_raw(child.id() as i32);
        killpg(pgid, sig).map_err(|e| format!("cannot send {sig} to {name} (pgid {pgid}): {e}"))
    }

    /// SIGKILL to the process group, and the process reaped.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits until `ready` says yes (polled), the process exits, or `limit` passes.
    pub fn wait_ready(
        &mut self,
        limit: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), String> {
        #[allow(clippy::disallowed_methods)] // real time: waiting for a real process
        let started = Instant::now();
        loop {
            if ready() {
                return Ok(());
            }
            if !self.alive() {
                return Err(format!(
                    "{} ({}) exited as it started; its log: {}",
                    self.name,
                    self.program.display(),
                    self.log.display()
                ));
            }
            if started.elapsed() > limit {
                return Err(format!(
                    "{} ({}) did not answer within {}s; its log: {}",
                    self.name,
                    self.program.display(),
                    limit.as_secs(),
                    self.log.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        // A stopped process dies of SIGKILL too; SIGCONT first is not needed.
        self.kill();
    }
}

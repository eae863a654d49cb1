//! The pool's zygote (`bcb_harness.py --zygote`): one warm interpreter per pool session that never
//! runs a sample and forks each warm slot on request. A slot then starts in milliseconds
//! instead of a second or more of imports, and the slots share the imported pages instead of
//! holding a copy each. The slot is the zygote's child: we hold a pidfd for it, the zygote
//! reaps it, and it dies with the zygote (its parent-death signal), which dies with us.

use std::collections::VecDeque;
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    recvmsg, sendmsg, shutdown, socketpair, AddressFamily, ControlMessage, ControlMessageOwned,
    MsgFlags, Shutdown, SockFlag, SockType, UnixAddr,
};
use serde::Deserialize;

use crate::schedule::note_spawner;
use bcb_sandbox::launch::{drain_stderr, harness_command, stderr_text, READY_TIMEOUT};

/// The warm interpreter slots are forked from; `fork` waits for its imports the first time.
pub(crate) struct Zygote {
    child: Child,
    link: Mutex<Link>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
}

struct Link {
    sock: OwnedFd,
    ready: bool,
    /// Why the zygote cannot fork any more: every later request fails at once.
    broken: Option<String>,
}

/// A slot the zygote forked: the pidfd names it even after the zygote reaps it.
pub(crate) struct ForkedSlot {
    pub pid: i32,
    pidfd: OwnedFd,
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    pid: Option<i32>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    preload_failed: Vec<String>,
}

/// How long one fork request may take once the zygote is ready.
const FORK_TIMEOUT: Duration = Duration::from_secs(30);

impl Zygote {
    /// Starts the zygote importing `preload`; returns at once (the imports run meanwhile).
    pub fn spawn(
        python: &std::path::Path,
        harness: &std::path::Path,
        env: &[(String, String)],
        workdir: &std::path::Path,
        preload: &[String],
    ) -> Result<Zygote> {
        // The zygote and the slots it forks are this thread's descendants: the demand walk
        // finds them from here.
        note_spawner();
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .context("socketpair for the zygote")?;
        let mut cmd: Command =
            harness_command(python, harness, env, workdir, &[theirs.as_raw_fd()], None);
        cmd.arg("--zygote");
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", python.display()))?;
        drop(theirs);
        let stderr_tail = drain_stderr(child.stderr.take());
        let config = serde_json::json!({ "preload": preload }).to_string();
        let link = Link {
            sock: ours,
            ready: false,
            broken: None,
        };
        if let Err(e) = send(link.sock.as_fd(), config.as_bytes(), &[]) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e.context("zygote config"));
        }
        Ok(Zygote {
            child,
            link: Mutex::new(link),
            stderr_tail,
        })
    }

    /// Forks a slot whose fds 3, 4 and 2 are `ctrl_in`, `events_out` and `stderr`.
    pub fn fork(
        &self,
        ctrl_in: BorrowedFd<'_>,
        events_out: BorrowedFd<'_>,
        stderr: BorrowedFd<'_>,
    ) -> Result<ForkedSlot> {
        let mut link = self.link.lock().unwrap();
        if let Some(why) = &link.broken {
            bail!("{why}");
        }
        let out = self.fork_locked(&mut link, [ctrl_in, events_out, stderr]);
        if let Err(e) = &out {
            link.broken = Some(format!("{e:#}"));
        }
        out
    }

    fn fork_locked(&self, link: &mut Link, fds: [BorrowedFd<'_>; 3]) -> Result<ForkedSlot> {
        let sock = link.sock.as_fd();
        if !link.ready {
            let (reply, _) = recv(sock, READY_TIMEOUT)
                .map_err(|e| anyhow!("the zygote did not start ({e:#}): {}", self.stderr()))?;
            if !reply.preload_failed.is_empty() {
                tracing::debug!("zygote preload failures: {:?}", reply.preload_failed);
            }
            link.ready = true;
        }
        let raw: Vec<RawFd> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
        send(sock, b"fork", &raw)?;
        let (reply, pidfd) = recv(sock, FORK_TIMEOUT)?;
        match (reply.pid, pidfd, reply.error) {
            (Some(pid), Some(pidfd), _) => Ok(ForkedSlot { pid, pidfd }),
            (_, _, Some(e)) => bail!("the zygote could not fork: {e}"),
            _ => bail!("the zygote sent a reply without a pid and a pidfd"),
        }
    }

    fn stderr(&self) -> String {
        stderr_text(&self.stderr_tail)
    }
}

/// How long the zygote may take to reap its exiting slots once the pool is done.
const REAP_WITHIN: Duration = Duration::from_secs(5);

impl Drop for Zygote {
    /// Closing the socket makes the zygote reap its slots (the pool dropped them, so they are
    /// exiting) and exit: their CPU time then counts in our process tree's. A zygote that takes
    /// too long is killed, and any slot left dies with it.
    fn drop(&mut self) {
        if let Ok(link) = self.link.lock() {
            let _ = shutdown(link.sock.as_raw_fd(), Shutdown::Both);
        }
        let deadline = Instant::now() + REAP_WITHIN;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ForkedSlot {
    /// SIGKILL through the pidfd: it cannot reach another process that reused the pid.
    pub fn kill(&self) {
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
    }

    /// Whether the slot has exited, waiting at most `within`.
    pub fn exited(&self, within: Duration) -> bool {
        let mut fds = [PollFd::new(self.pidfd.as_fd(), PollFlags::POLLIN)];
        let ms = PollTimeout::try_from(within.as_millis().min(i32::MAX as u128) as i32)
            .unwrap_or(PollTimeout::MAX);
        matches!(poll(&mut fds, ms), Ok(n) if n > 0)
    }
}

fn send(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[RawFd]) -> Result<()> {
    let iov = [IoSlice::new(bytes)];
    let cmsgs: Vec<ControlMessage> = if fds.is_empty() {
        vec![]
    } else {
        vec![ControlMessage::ScmRights(fds)]
    };
    sendmsg::<UnixAddr>(sock.as_raw_fd(), &iov, &cmsgs, MsgFlags::empty(), None)
        .context("send to the zygote")?;
    Ok(())
}

/// One message from the zygote within `within`, with the descriptor it carried, if any.
fn recv(sock: BorrowedFd<'_>, within: Duration) -> Result<(Reply, Option<OwnedFd>)> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!("no answer from the zygote within {} s", within.as_secs());
        }
        let mut fds = [PollFd::new(sock, PollFlags::POLLIN)];
        let ms =
            PollTimeout::try_from(left.as_millis().min(60_000) as i32).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, ms) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => break,
            Err(e) => bail!("poll on the zygote socket: {e}"),
        }
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut cmsg_space = nix::cmsg_space!([RawFd; 1]);
    let mut pidfd = None;
    let n = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<UnixAddr>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg_space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .context("receive from the zygote")?;
        for cmsg in msg.cmsgs().context("zygote message")? {
            if let ControlMessageOwned::ScmRights(fds) = cmsg {
                for fd in fds {
                    // SAFETY: the kernel just installed this descriptor for us (a second
                    // one, never sent, is closed on drop).
                    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                    pidfd.get_or_insert(owned);
                }
            }
        }
        msg.bytes
    };
    if n == 0 {
        bail!("the zygote exited");
    }
    let reply: Reply = serde_json::from_slice(&buf[..n]).context("zygote reply")?;
    Ok((reply, pidfd))
}

//! Slurm for real: a one-node cluster started here (MUNGE with a generated key, slurmctld and
//! slurmd with a slurm.conf, state, spool and logs in a temp dir, no systemd), inside a private
//! network namespace so its daemons are reachable on loopback only. `examples/slurm/submit.sh`
//! submits a 4-way array of `bcb evaluate --shard auto` over a slice of a real model's answers
//! and the merge job that depends on it; the merged files equal an unsharded run's (date
//! aside). Needs root and `.ci/setup-slurm.sh`; required in CI (`BCB_REQUIRE_SLURM=1`).

mod evalkit;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use evalkit::{read_json, stderr, without_date};

/// The same fast slice as the shards test (8 tasks, passing and failing answers).
const IDS: &str = "1,2,3,5,6,7,12,13";
const SHARDS: usize = 4;

/// A running one-node cluster; dropping it cancels its jobs and stops every daemon it started.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// Holds the network namespace every daemon and client command runs in.
    netns: Child,
    daemons: Vec<(&'static str, Child)>,
}

impl Cluster {
    fn start(sbin: &Path) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let d = |name: &str| {
            let p = dir.path().join(name);
            std::fs::create_dir_all(&p).unwrap();
            p
        };
        let (munge, run, state, spool, log) =
            (d("munge"), d("run"), d("state"), d("spool"), d("log"));
        // munged wants its socket's directory searchable by all; the key dir stays private.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&munge, std::fs::Permissions::from_mode(0o700)).unwrap();
        let key = munge.join("munge.key");
        let ok = Command::new(sbin.join("mungekey"))
            .args(["--create", "--bits=1024"])
            .arg(format!("--keyfile={}", key.display()))
            .status()
            .expect("mungekey runs");
        assert!(ok.success(), "mungekey failed");

        // A network namespace with only loopback, up.
        let mut netns = Command::new("unshare")
            .args([
                "--net",
                "--",
                "sh",
                "-c",
                "ip link set lo up && echo ready && exec sleep 3600",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("unshare runs");
        let mut line = String::new();
        BufReader::new(netns.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(
            line.trim(),
            "ready",
            "the network namespace did not come up"
        );

        let host = String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let socket = run.join("munge.sock");
        let p = |p: &Path| p.display().to_string();
        // EnableIPv6 makes Slurm resolve with AF_UNSPEC: with AF_INET and AI_ADDRCONFIG glibc
        // refuses even "127.0.0.1" in a namespace that has no address but loopback.
        let conf_text = format!(
            "ClusterName=bcbtest\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             AuthType=auth/munge\n\
             CommunicationParameters=EnableIPv6\n\
             CredType=cred/munge\n\
             AuthInfo=socket={sock}\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             MpiDefault=none\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             StateSaveLocation={state}\n\
             SlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={run}/slurmctld.pid\n\
             SlurmdPidFile={run}/slurmd.pid\n\
             SlurmctldLogFile={log}/slurmctld.log\n\
             SlurmdLogFile={log}/slurmd.log\n\
             ReturnToService=2\n\
             SchedulerType=sched/backfill\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            sock = p(&socket),
            state = p(&state),
            spool = p(&spool),
            run = p(&run),
            log = p(&log),
        );
        let conf = dir.path().join("slurm.conf");
        std::fs::write(&conf, conf_text).unwrap();
        let mut cluster = Cluster {
            dir,
            conf,
            netns,
            daemons: Vec::new(),
        };
        let out = |name: &str| std::fs::File::create(log.join(name)).unwrap();
        let munged = cluster
            .command(&sbin.join("munged"))
            .arg("--foreground")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", run.join("munged.pid").display()))
            .arg(format!("--log-file={}", log.join("munged.log").display()))
            .arg(format!("--seed-file={}", munge.join("seed").display()))
            .stdout(out("munged.out"))
            .stderr(out("munged.err"))
            .spawn()
            .unwrap();
        cluster.daemons.push(("munged", munged));
        cluster.wait_for("the MUNGE socket", Duration::from_secs(10), || {
            socket.exists()
        });
        for (name, args) in [("slurmctld", ["-D", "-i"]), ("slurmd", ["-D", "-c"])] {
            let child = cluster
                .command(&sbin.join(name))
                .args(args)
                .stdout(out(&format!("{name}.out")))
                .stderr(out(&format!("{name}.err")))
                .spawn()
                .unwrap();
            cluster.daemons.push((name, child));
        }
        cluster.wait_for("the node to be idle", Duration::from_secs(60), || {
            let o = cluster
                .command(Path::new("sinfo"))
                .args(["-h", "-o", "%T"])
                .output();
            o.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        cluster
    }

    /// `program` inside the cluster's network namespace, with its slurm.conf.
    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net=/proc/{}/ns/net", self.netns.id()))
            .arg("--")
            .arg(program)
            .env("SLURM_CONF", &self.conf);
        cmd
    }

    fn wait_for(&self, what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
        let start = Instant::now();
        while !ready() {
            if start.elapsed() > limit {
                panic!("timed out waiting for {what}\n{}", self.logs());
            }
            for (name, child) in &self.daemons {
                // A daemon that exited will not come back: say why now.
                if std::fs::metadata(format!("/proc/{}", child.id())).is_err() {
                    panic!("{name} exited while waiting for {what}\n{}", self.logs());
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// `JobState` of a job (`scontrol show job`), or `None` once the controller forgot it.
    fn job_state(&self, id: &str) -> Option<String> {
        let out = self
            .command(Path::new("scontrol"))
            .args(["show", "job", "-o", id])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let state = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("JobState="))?;
        Some(state.to_string())
    }

    /// The daemons' logs and every job's output, for a failure message.
    fn logs(&self) -> String {
        let mut text = String::new();
        let mut files: Vec<PathBuf> = ["log", "work"]
            .iter()
            .filter_map(|d| std::fs::read_dir(self.dir.path().join(d)).ok())
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "out" || e == "err" || e == "log")
            })
            .collect();
        files.sort();
        for f in files {
            let body = std::fs::read_to_string(&f).unwrap_or_default();
            let tail: Vec<&str> = body.lines().rev().take(30).collect();
            text.push_str(&format!("--- {}\n", f.display()));
            for l in tail.into_iter().rev() {
                text.push_str(l);
                text.push('\n');
            }
        }
        text
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first (their steps would outlive slurmd), then the daemons, newest first.
        let _ = self
            .command(Path::new("scancel"))
            .arg("--user=root")
            .status();
        // Until the controller lists no job (completing ones included), 5 s at most: a drop
        // neither hangs nor panics.
        bcb_testkit::poll_until(Duration::from_secs(5), || {
            self.command(Path::new("squeue"))
                .args(["-h", "-o", "%i"])
                .output()
                .map_or(true, |o| {
                    !o.status.success() || o.stdout.trim_ascii().is_empty()
                })
        });
        for (_, child) in self.daemons.iter_mut().rev() {
            // SAFETY: a plain signal to a child this test spawned and has not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = self.netns.kill();
        let _ = self.netns.wait();
    }
}

#[test]
fn slurm_array_of_shards_then_merge_equals_one_run() {
    let started = Instant::now();
    let Some(sbin) = bcb_testkit::slurm_sbin() else {
        return;
    };
    let Some(env) = evalkit::env() else { return };
    let cluster = Cluster::start(&sbin);
    eprintln!("cluster up in {:.1}s", started.elapsed().as_secs_f64());

    // The reference: one unsharded run, outside Slurm.
    let whole = evalkit::hermes_samples(&env, "whole.jsonl");
    env.evaluate_ok(IDS, &whole, &["-q", "--executor", "process"]);
    let whole_results = bcb_samples::eval_results_path(&whole);

    // The same through the example scripts, from a work dir the jobs share.
    let work = cluster.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let samples = work.join("sharded.jsonl");
    std::fs::copy(&whole, &samples).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/slurm");
    let mut submit = cluster.command(&examples.join("submit.sh"));
    submit
        .current_dir(&work)
        .arg(SHARDS.to_string())
        .arg("--cpus-per-task=1")
        .env("BCB", env!("CARGO_BIN_EXE_bcb"))
        .env("SAMPLES", &samples)
        .env("BCB_ARGS", format!("--ids {IDS}"))
        .env(
            "BCB_EVAL_ARGS",
            "--split complete --subset full --executor process -q",
        )
        .env("BCB_CACHE_DIR", env.cache.path().join("slurm"))
        .env("BCB_DATASET_DIR", &env.dataset_dir)
        .env("BCB_PYTHON", &env.python)
        .env("BCB_OFFLINE", "1")
        .env_remove("BIGCODEBENCH_OVERRIDE_PATH")
        .env_remove("BIGCODEBENCH_TIMEOUT_PER_TASK");
    let out = submit.output().unwrap();
    assert!(
        out.status.success(),
        "submit.sh: {}\n{}",
        stderr(&out),
        cluster.logs()
    );
    let ids = String::from_utf8_lossy(&out.stdout).into_owned();
    let (array, merge) = ids
        .trim()
        .split_once(' ')
        .expect("submit.sh prints two job ids");
    eprintln!("array job {array}, merge job {merge}");

    let limit = Duration::from_secs(600);
    let start = Instant::now();
    let final_state = loop {
        match cluster.job_state(merge).as_deref() {
            Some("PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING") | None
                if start.elapsed() < limit =>
            {
                std::thread::sleep(Duration::from_millis(500))
            }
            other => break other.map(str::to_string),
        }
    };
    assert_eq!(
        final_state.as_deref(),
        Some("COMPLETED"),
        "merge job {merge} (array {array}: {:?})\n{}",
        cluster.job_state(array),
        cluster.logs()
    );

    let results = bcb_samples::eval_results_path(&samples);
    assert_eq!(
        bcb_eval::find_shards(&samples).len(),
        SHARDS,
        "{}",
        cluster.logs()
    );
    assert_eq!(
        without_date(&results),
        without_date(&whole_results),
        "{}",
        cluster.logs()
    );
    let mut got_k = read_json(&bcb_samples::pass_at_k_path(&results));
    let want_k = read_json(&bcb_samples::pass_at_k_path(&whole_results));
    got_k["model"] = want_k["model"].clone();
    assert_eq!(got_k, want_k);
    eprintln!(
        "slurm test: {SHARDS} shards + merge equal one run; wall {:.1}s (jobs {:.1}s)",
        started.elapsed().as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
}
